package netpolicy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestMain dispatches the helper mode used by TestStartUnprivileged, the way
// runc's test binary dispatches "init".
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "start" {
		os.Exit(helperStart())
	}
	os.Exit(m.Run())
}

// scratchNS is a network namespace made for one test, held open by fd and
// freed when the test ends (its last user closes).
type scratchNS struct {
	fd   int
	path string // "/proc/self/fd/N": what Start takes
}

// newScratchNS unshares a fresh network namespace on a locked thread, keeps
// a descriptor of it and switches the thread back.
func newScratchNS(t *testing.T) *scratchNS {
	t.Helper()
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("open own netns: %w", err)}
			return
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("unshare(CLONE_NEWNET): %w", err)}
			return
		}
		fd, ferr := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			ch <- result{-1, fmt.Errorf("setns back: %w", err)} // thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		ch <- result{fd, ferr}
	}()
	r := <-ch
	if errors.Is(r.err, unix.EPERM) || errors.Is(r.err, unix.EACCES) {
		t.Skipf("needs a network namespace: %v (uid %d)", r.err, os.Getuid())
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { unix.Close(r.fd) })
	return &scratchNS{fd: r.fd, path: fmt.Sprintf("/proc/self/fd/%d", r.fd)}
}

// do runs fn on a locked thread inside the namespace. Sockets fn creates
// stay in the namespace and may be used from any goroutine afterwards.
func (ns *scratchNS) do(t *testing.T, fn func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(ns.fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("setns scratch: %w", err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			ch <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		ch <- ferr
	}()
	return <-ch
}

// dial connects from inside the namespace. Only address literals are
// dialed, so nothing is resolved and no traffic leaves loopback.
func (ns *scratchNS) dial(t *testing.T, network, addr string) (net.Conn, error) {
	t.Helper()
	var c net.Conn
	err := ns.do(t, func() error {
		var err error
		c, err = net.Dial(network, addr)
		return err
	})
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// echoServer listens on a loopback address in the host namespace. Each
// connection gets its input echoed back and, after the client's EOF, a
// trailing "bye" before the server closes: the "bye" only arrives if the
// forwarder relays a half-close as a half-close.
type echoServer struct {
	ln    *net.TCPListener
	wg    sync.WaitGroup
	conns atomic.Int64
}

func newEchoServer(t *testing.T, addr string) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s on the host: %v", addr, err)
	}
	s := &echoServer{ln: ln.(*net.TCPListener)}
	s.wg.Go(func() {
		for {
			c, err := s.ln.AcceptTCP()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Go(func() {
				defer c.Close()
				if _, err := io.Copy(c, c); err != nil {
					return
				}
				c.Write([]byte("bye"))
			})
		}
	})
	t.Cleanup(func() {
		s.ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// freePort returns a loopback TCP port that nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// roundTrip writes msg and reads the echo.
func roundTrip(c net.Conn, msg string) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return fmt.Errorf("read echo: %w", err)
	}
	if string(buf) != msg {
		return fmt.Errorf("echo %q, want %q", buf, msg)
	}
	return nil
}

// halfClose sends msg, shuts down the write side and reads to EOF.
func halfClose(c net.Conn, msg string) (string, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

func startPlan(t *testing.T, ns *scratchNS, plan *Plan) *Forwarder {
	t.Helper()
	f, err := plan.Start(ns.path)
	if errors.Is(err, ErrNeedPrivilege) {
		t.Skipf("start forwarder: %v (uid %d)", err, os.Getuid())
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func resolveT(t *testing.T, p Policy, dns map[string][]netip.Addr) *Plan {
	t.Helper()
	plan, err := ResolveWith(t.Context(), p, (&fakeDNS{answers: dns}).lookup)
	if err != nil {
		t.Fatalf("ResolveWith: %v", err)
	}
	return plan
}

func hostHasIPv6Loopback() bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func TestForwarderAllowList(t *testing.T) {
	ns := newScratchNS(t)
	literal := newEchoServer(t, "127.0.0.1:0") // allowed as 127.0.0.1 and as localhost
	named := newEchoServer(t, "127.0.0.1:0")   // allowed as service.test
	other := newEchoServer(t, "127.0.0.1:0")   // listening on the host, not allowed
	dead := freePort(t)                        // allowed, but nothing listens on the host
	allowed := []HostPort{
		{"127.0.0.1", literal.port()},
		{"localhost", literal.port()},
		{"service.test", named.port()},
		{"127.0.0.1", dead},
	}
	var v6 *echoServer
	if hostHasIPv6Loopback() {
		v6 = newEchoServer(t, "[::1]:0")
		allowed = append(allowed, HostPort{"::1", v6.port()})
	}
	plan := resolveT(t, Policy{AllowList, allowed}, map[string][]netip.Addr{"service.test": addrs("::1", "127.0.0.1")})
	if hf := string(plan.HostsFile()); !bytes.Contains([]byte(hf), []byte("\n127.0.0.1\tservice.test\n")) {
		t.Fatalf("HostsFile does not pin service.test to 127.0.0.1:\n%s", hf)
	}
	f := startPlan(t, ns, plan)

	for _, tc := range []struct {
		name    string
		addr    string
		server  *echoServer // nil: expect a refused connect
		refused bool        // connect is refused inside the namespace
		reset   bool        // connect succeeds, then the forwarder drops it
	}{
		{name: "allowed literal", addr: fmt.Sprintf("127.0.0.1:%d", literal.port()), server: literal},
		{name: "allowed name at its pinned address", addr: fmt.Sprintf("127.0.0.1:%d", named.port()), server: named},
		{name: "other port on allowed host", addr: fmt.Sprintf("127.0.0.1:%d", other.port()), refused: true},
		{name: "other loopback host", addr: fmt.Sprintf("127.0.0.2:%d", literal.port()), refused: true},
		{name: "allowed but host side refuses", addr: fmt.Sprintf("127.0.0.1:%d", dead), reset: true},
		{name: "allowed ipv6 literal", addr: "[::1]:" + fmt.Sprint(portOf(v6)), server: v6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "allowed ipv6 literal" && v6 == nil {
				t.Skipf("host has no IPv6 loopback")
			}
			before := int64(0)
			if tc.server != nil {
				before = tc.server.conns.Load()
			}
			c, err := ns.dial(t, "tcp", tc.addr)
			if tc.reset && errors.Is(err, syscall.ECONNRESET) {
				return // the reset beat connect(2)'s return on loopback
			}
			if tc.refused {
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("dial %s inside: %v, want ECONNREFUSED", tc.addr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial %s inside: %v", tc.addr, err)
			}
			if tc.reset {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				n, err := c.Read(make([]byte, 1))
				if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read from dropped connection: %d, %v; want EOF or reset", n, err)
				}
				return
			}
			if err := roundTrip(c, "hello"); err != nil {
				t.Fatal(err)
			}
			got, err := halfClose(c, " world")
			if err != nil || got != " worldbye" {
				t.Fatalf("after half-close read %q, %v; want %q", got, err, " worldbye")
			}
			if n := tc.server.conns.Load() - before; n != 1 {
				t.Fatalf("host server saw %d connections, want 1", n)
			}
		})
	}

	stats := f.Stats()
	lit := statsFor(t, stats, fmt.Sprintf("127.0.0.1:%d", literal.port()))
	if want := []string{"127.0.0.1", "localhost"}; !slices.Equal(lit.Hosts, want) || lit.Accepted != 1 {
		t.Errorf("literal listener stats = %+v, want hosts %v and 1 accepted", lit, want)
	}
	if d := statsFor(t, stats, fmt.Sprintf("127.0.0.1:%d", dead)); d.Accepted != 1 || d.DialFailed != 1 {
		t.Errorf("dead route stats = %+v, want 1 accepted, 1 dial failed", d)
	}
}

func portOf(s *echoServer) int {
	if s == nil {
		return 0
	}
	return s.port()
}

func statsFor(t *testing.T, stats []RouteStats, listen string) RouteStats {
	t.Helper()
	for _, s := range stats {
		if s.Listen.String() == listen {
			return s
		}
	}
	t.Fatalf("no stats for %s in %+v", listen, stats)
	return RouteStats{}
}

// TestForwarderUDP checks that only TCP is forwarded: a datagram to the
// allowed port is refused inside the namespace and never reaches the host.
func TestForwarderUDP(t *testing.T) {
	ns := newScratchNS(t)
	var (
		srv *echoServer
		udp *net.UDPConn
	)
	// The host's UDP socket must share the TCP server's port; retry if the
	// UDP port happens to be taken.
	for range 20 {
		s := newEchoServer(t, "127.0.0.1:0")
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: s.port()})
		if err == nil {
			srv, udp = s, c
			break
		}
	}
	if udp == nil {
		t.Fatal("no port free for both TCP and UDP on 127.0.0.1")
	}
	t.Cleanup(func() { udp.Close() })
	plan := resolveT(t, Policy{AllowList, []HostPort{{"127.0.0.1", srv.port()}}}, nil)
	startPlan(t, ns, plan)

	c, err := ns.dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", srv.port()))
	if err != nil {
		t.Fatalf("dial udp inside: %v", err)
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatalf("write udp inside: %v", err)
	}
	// The namespace's own lo answers with port unreachable, which a
	// connected UDP socket reports on its next read.
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 16)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("udp read inside: %v, want ECONNREFUSED", err)
	}
	udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, from, err := udp.ReadFromUDP(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("host udp socket received %d bytes from %v (err %v); want nothing", n, from, err)
	}
}

// TestForwarderConnectionBound fills one route to MaxConnsPerRoute and
// checks that the next connection is reset, and that a slot freed by a
// closing connection is reused.
func TestForwarderConnectionBound(t *testing.T) {
	ns := newScratchNS(t)
	srv := newEchoServer(t, "127.0.0.1:0")
	addr := fmt.Sprintf("127.0.0.1:%d", srv.port())
	f := startPlan(t, ns, resolveT(t, Policy{AllowList, []HostPort{{"127.0.0.1", srv.port()}}}, nil))

	var live []net.Conn
	for i := range MaxConnsPerRoute {
		c, err := ns.dial(t, "tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if err := roundTrip(c, "x"); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		live = append(live, c)
	}
	// The forwarder accepts and resets; on loopback the reset may beat
	// connect(2)'s return.
	c, err := ns.dial(t, "tcp", addr)
	if err == nil {
		err = roundTrip(c, "x")
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Fatalf("connection over the bound: %v, want reset", err)
	}
	s := f.Stats()[0]
	if s.Accepted != MaxConnsPerRoute || s.Refused != 1 || s.Active != MaxConnsPerRoute {
		t.Fatalf("stats = %+v, want %d accepted, 1 refused, %d active", s, MaxConnsPerRoute, MaxConnsPerRoute)
	}

	live[0].Close()
	waitFor(t, "a slot to be released", func() bool { return f.Stats()[0].Active < MaxConnsPerRoute })
	c, err = ns.dial(t, "tcp", addr)
	if err != nil {
		t.Fatalf("dial after release: %v", err)
	}
	if err := roundTrip(c, "again"); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestForwarderClose checks that Close ends live connections on both sides
// and leaves no goroutine or descriptor behind.
func TestForwarderClose(t *testing.T) {
	ns := newScratchNS(t)
	srv := newEchoServer(t, "127.0.0.1:0")
	addr := fmt.Sprintf("127.0.0.1:%d", srv.port())
	plan := resolveT(t, Policy{AllowList, []HostPort{{"127.0.0.1", srv.port()}, {"localhost", freePort(t)}}}, nil)
	goroutines, fds := runtime.NumGoroutine(), countFDs(t)

	f, err := plan.Start(ns.path)
	if errors.Is(err, ErrNeedPrivilege) {
		t.Skipf("start forwarder: %v (uid %d)", err, os.Getuid())
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	var held []net.Conn
	for range 3 {
		c, err := ns.dial(t, "tcp", addr)
		if err != nil {
			t.Fatalf("dial inside: %v", err)
		}
		if err := roundTrip(c, "hold"); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := c.Read(make([]byte, 16)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("held connection %d after Close: read %d, %v; want EOF or reset", i, n, err)
		}
		c.Close()
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ns.dial(t, "tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after Close: %v, want ECONNREFUSED", err)
	}
	waitFor(t, "goroutines to return to the baseline", func() bool { return runtime.NumGoroutine() <= goroutines })
	waitFor(t, "descriptors to return to the baseline", func() bool { return countFDs(t) <= fds })
}

func TestStartDeny(t *testing.T) {
	plan, err := Resolve(t.Context(), Policy{Mode: Deny})
	if err != nil {
		t.Fatal(err)
	}
	// A deny plan must not even open the namespace path.
	f, err := plan.Start("/nonexistent/ns/net")
	if err != nil {
		t.Fatalf("Start deny: %v", err)
	}
	if s := f.Stats(); s != nil {
		t.Errorf("deny stats = %+v, want nil", s)
	}
	if err := f.Close(); err != nil {
		t.Errorf("deny Close: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	ns := newScratchNS(t)
	port := freePort(t)
	lo := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	lo2 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), uint16(port))
	goodRoutes := []Route{{"127.0.0.1", port, lo, lo}}
	if _, err := (*Plan)(nil).Start(ns.path); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil plan Start: %v, want ErrInvalid", err)
	}
	for _, tc := range []struct {
		name   string
		plan   Plan
		nsPath string
		is     error
	}{
		{"own namespace", Plan{Policy{Mode: AllowList}, goodRoutes}, "/proc/self/ns/net", ErrSameNamespace},
		{"missing namespace", Plan{Policy{Mode: AllowList}, goodRoutes}, "/nonexistent/ns/net", syscall.ENOENT},
		{"not a namespace", Plan{Policy{Mode: AllowList}, goodRoutes}, "/dev/null", syscall.EINVAL},
		{"zero plan", Plan{}, ns.path, ErrInvalid},
		{"conflicting routes", Plan{Policy{Mode: AllowList}, []Route{{"a.test", port, lo, lo}, {"b.test", port, lo, lo2}}}, ns.path, ErrInvalid},
		{"unspecified listen", Plan{Policy{Mode: AllowList}, []Route{{"a.test", port, netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)), lo}}}, ns.path, ErrInvalid},
		{"zero route", Plan{Policy{Mode: AllowList}, []Route{{}}}, ns.path, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.plan.Start(tc.nsPath)
			if !errors.Is(err, tc.is) {
				t.Fatalf("Start: %v, want %v", err, tc.is)
			}
			if f != nil {
				t.Fatalf("Start returned a forwarder with error %v", err)
			}
		})
	}
}

// TestStartAddsAddresses checks the in-namespace setup for listen
// addresses that are not loopback. Nothing connects to them: tests send
// traffic only to loopback, so the forwarder is only started and inspected.
func TestStartAddsAddresses(t *testing.T) {
	ns := newScratchNS(t)
	port := uint16(freePort(t))
	lo := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	v4 := netip.AddrPortFrom(netip.MustParseAddr("198.51.100.7"), port)
	v6 := netip.AddrPortFrom(netip.MustParseAddr("2001:db8::7"), port)
	plan := &Plan{Policy{Mode: AllowList}, []Route{
		{"198.51.100.7", int(port), v4, lo},
		{"2001:db8::7", int(port), v6, lo},
		{"127.0.0.1", int(port), lo, lo},
	}}
	f := startPlan(t, ns, plan)
	// A second Start in the same namespace must find lo and its addresses
	// already set up and still succeed (on other ports).
	port2 := uint16(freePort(t))
	plan2 := &Plan{Policy{Mode: AllowList}, []Route{{"198.51.100.7", int(port2), netip.AddrPortFrom(v4.Addr(), port2), lo}}}
	startPlan(t, ns, plan2)

	var got []string
	err := ns.do(t, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		link, err := h.LinkByName("lo")
		if err != nil {
			return err
		}
		if link.Attrs().Flags&net.FlagUp == 0 {
			return errors.New("lo is down")
		}
		as, err := h.AddrList(link, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, a := range as {
			got = append(got, a.IPNet.String())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("inspect lo: %v", err)
	}
	for _, want := range []string{"198.51.100.7/32", "2001:db8::7/128", "127.0.0.1/8"} {
		if !slices.Contains(got, want) {
			t.Errorf("lo addresses %v lack %s", got, want)
		}
	}
	var listens []string
	for _, s := range f.Stats() {
		listens = append(listens, s.Listen.String())
	}
	want := []string{lo.String(), v4.String(), v6.String()}
	if !slices.Equal(listens, want) {
		t.Errorf("listeners %v, want %v", listens, want)
	}
}

const helperEnv = "NETPOLICY_TEST_HELPER"

// TestStartUnprivileged runs Start in a child process inside a new user
// namespace: it holds every capability there but none over the scratch
// namespace, which the initial user namespace owns. That is the rootless
// supervisor's position, and Start must say so with ErrNeedPrivilege.
func TestStartUnprivileged(t *testing.T) {
	ns := newScratchNS(t)
	// A duplicate, because an *os.File closes its descriptor when collected
	// and ns.fd must stay the scratch namespace's until cleanup.
	dup, err := unix.FcntlInt(uintptr(ns.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("dup scratch namespace: %v", err)
	}
	nsFile := os.NewFile(uintptr(dup), "scratch-netns")
	defer nsFile.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=start")
	cmd.ExtraFiles = []*os.File{nsFile} // fd 3 in the child
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
		t.Skipf("needs a user namespace: %v (uid %d)", err, os.Getuid())
	}
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if string(out) != "need-privilege\n" {
		t.Fatalf("helper said %q, want need-privilege", out)
	}
}

// helperStart is the child side of TestStartUnprivileged. It reports on
// stdout, since it runs outside the testing framework.
func helperStart() int {
	port := uint16(9)
	lo := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	plan := &Plan{Policy{Mode: AllowList}, []Route{{"127.0.0.1", int(port), lo, lo}}}
	f, err := plan.Start("/proc/self/fd/3")
	switch {
	case errors.Is(err, ErrNeedPrivilege):
		fmt.Println("need-privilege")
		return 0
	case err == nil:
		f.Close()
		fmt.Println("started without privilege")
	default:
		fmt.Println(err)
	}
	return 1
}

func countFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// waitFor polls cond: goroutine and descriptor counts settle after their
// owners return, with no event to wait on from outside.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
