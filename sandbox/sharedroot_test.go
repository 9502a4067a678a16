package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSameRootNoneCannotReachOS is the attack of an isolation-none
// subject on an os sandbox that maps the same directory. Both used to
// run as the root's one derived uid: the none subject sees host pids,
// and the os subject is dumpable after execve, so it read the os
// subject's environment, its memory and its private /tmp (through
// /proc/PID/root), and could signal it. An os sandbox and a none sandbox
// now never share an id, even on one root.
func TestSameRootNoneCannotReachOS(t *testing.T) {
	f := directFixture(t)
	f.withEscape(t)
	osSpec := f.isoSpec(IsolationOS, "/bin/sh", "-c", `echo private > /tmp/private && echo ready && exec sleep 60`)
	osSpec.Env = []string{"SECRET=os-only-token"}
	victim := liveBox(t, osSpec)
	pid := subjectHostPID(t, victim)
	script := strings.Join([]string{
		fmt.Sprintf("./escape read /proc/%d/environ", pid),
		fmt.Sprintf("./escape read /proc/%d/mem", pid),
		fmt.Sprintf("./escape openw /proc/%d/mem", pid),
		fmt.Sprintf("./escape read /proc/%d/root/tmp/private", pid),
		fmt.Sprintf("if kill -0 %d 2>/dev/null; then echo KILL OK; else echo KILL ERR; fi", pid),
		"id -u",
	}, "; ")
	ex, out, stderr, attacker := runBox(t, f.isoSpec(IsolationNone, "/bin/sh", "-c", script), 20*time.Second)
	lines := strings.Split(out, "\n")
	if ex.Code != 0 || len(lines) != 6 {
		t.Fatalf("attacker: exit %+v out %q stderr %q", ex, out, stderr)
	}
	t.Logf("os subject: host pid %d uid %d; none subject uid %s", pid, hostUID(t, pid), lines[5])
	for i, what := range []string{"environ", "mem (read)", "mem (write)", "/proc/PID/root/tmp", "kill -0"} {
		switch l := lines[i]; l {
		case "ERR EACCES", "ERR EPERM", "ERR ESRCH", "KILL ERR":
		default:
			t.Errorf("the none subject on the same root reached the os subject's %s: %q", what, l)
		}
	}
	if victim.Evidence().UID == attacker.Evidence().UID {
		t.Errorf("os and none sandboxes on one root share uid %d", victim.Evidence().UID)
	}
}

// TestUserNSIDPerSandbox: with a user namespace (exec --userns) every
// sandbox's subject used to be host uid 2^30+65534, whatever it mapped.
// The subject's host ids are now chosen as without one: its own per
// root or claimed, never in the shared container range.
func TestUserNSIDPerSandbox(t *testing.T) {
	f1, f2 := newFixture(t), newFixture(t)
	// The user namespace's root (host userNSBase) walks the state
	// directory's path to the skeleton root.
	for _, f := range []*fixture{f1, f2} {
		for _, d := range []string{filepath.Dir(f.stateDir), f.stateDir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	userns := func(f *fixture, scratch bool) Spec {
		s := f.spec("/bin/sh", "-c", "echo ready; exec sleep 60")
		s.UserNamespace = true
		if scratch {
			s.Root, s.ScratchRoot = "", true
		}
		return s
	}
	var boxes [4]*Sandbox
	var wg sync.WaitGroup
	for i, s := range []Spec{userns(f1, false), userns(f2, false), userns(f1, true), userns(f2, true)} {
		wg.Go(func() { boxes[i] = liveBox(t, s) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	seen := map[int]int{}
	for i, sb := range boxes {
		uid := hostUID(t, subjectHostPID(t, sb))
		ev := sb.Evidence()
		t.Logf("sandbox %d: subject host uid %d, evidence uid %d host uid %d", i, uid, ev.UID, ev.HostUID)
		if j, dup := seen[uid]; dup {
			t.Errorf("userns sandboxes %d and %d share host uid %d", j, i, uid)
		}
		seen[uid] = i
		if uid >= userNSBase && uid < userNSBase+65536 {
			t.Errorf("sandbox %d: subject is host uid %d, in the shared container range", i, uid)
		}
		if ev.HostUID != uid || ev.UID != DefaultUID {
			t.Errorf("sandbox %d: evidence uid %d host uid %d, want %d and %d", i, ev.UID, ev.HostUID, DefaultUID, uid)
		}
	}
}

// TestUnixSocketCrossesNoNamespace: a pathname unix socket in the mapped
// root is reachable from both sides of the network namespace. A host
// process listening there served the os subject (a host loopback service
// under a network-deny receipt), and handed it a connected host TCP
// socket over SCM_RIGHTS. The os tier refuses socket(AF_UNIX) under
// network deny and allow-list; socketpair stays.
func TestUnixSocketCrossesNoNamespace(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("the attack's client is python3 in the sandbox's /usr: %v", err)
	}
	f := newFixture(t)
	// A host loopback service the subject must not reach.
	tcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gotTCP := make(chan string, 4)
	go func() {
		for {
			c, err := tcpLn.Accept()
			if err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 64)
			n, _ := c.Read(b)
			gotTCP <- string(b[:n])
			c.Close()
		}
	}()
	t.Cleanup(func() { tcpLn.Close() })

	// Host listeners on pathname sockets inside the root: one says a
	// secret, one passes a connected host TCP socket.
	serve := func(name string, handle func(c *net.UnixConn)) {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(f.root, name), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(f.root, name), 0o777); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ln.AcceptUnix()
				if err != nil {
					return
				}
				handle(c)
				c.Close()
			}
		}()
		t.Cleanup(func() { ln.Close(); <-done })
	}
	serve("secret.sock", func(c *net.UnixConn) { fmt.Fprintln(c, "host-secret") })
	serve("fd.sock", func(c *net.UnixConn) {
		tc, err := net.Dial("tcp", tcpLn.Addr().String())
		if err != nil {
			return
		}
		defer tc.Close()
		tf, err := tc.(*net.TCPConn).File()
		if err != nil {
			return
		}
		defer tf.Close()
		_, _, _ = c.WriteMsgUnix([]byte("x"), unix.UnixRights(int(tf.Fd())), nil)
		// Held until the subject is done with it.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Read(make([]byte, 1))
	})

	client := `
import socket, sys
def attempt(what, fn):
    try:
        print(what, "OK", fn())
    except OSError as e:
        print(what, "ERR", e.errno)
def secret():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("secret.sock")
    return s.recv(64).decode().strip()
def passed_fd():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("fd.sock")
    msg, fds, _, _ = socket.recv_fds(s, 1, 1)
    t = socket.socket(fileno=fds[0])
    t.send(b"from-sandbox")
    return "sent"
def pair():
    a, b = socket.socketpair()
    a.send(b"p")
    return b.recv(1).decode()
attempt("connect", secret)
attempt("scm_rights", passed_fd)
attempt("socketpair", pair)
`
	if err := os.WriteFile(filepath.Join(f.root, "client.py"), []byte(client), 0o644); err != nil {
		t.Fatal(err)
	}
	ex, out, stderr, _ := runBox(t, f.spec("/usr/bin/python3", "client.py"), 20*time.Second)
	t.Logf("subject: exit %+v\n%s\n%s", ex, out, stderr)
	want := fmt.Sprintf("connect ERR %d\nscm_rights ERR %d\nsocketpair OK p", unix.EPERM, unix.EPERM)
	if out != want {
		t.Errorf("unix sockets in the mapped root:\n%s\nwant\n%s", out, want)
	}
	select {
	case s := <-gotTCP:
		if s != "" {
			t.Errorf("the host loopback service received %q from the sandbox", s)
		}
	default:
	}
}

// TestScratchRootBounded: exec's scratch /sandbox was a directory on the
// host's /tmp with no bound on its total, so files each under
// RLIMIT_FSIZE filled the host disk. It is now a tmpfs of Limits.
// ScratchBytes in the sandbox's own mount namespace: writing past it is
// ENOSPC, and nothing of it is on a host filesystem.
func TestScratchRootBounded(t *testing.T) {
	f := newFixture(t)
	spec := f.spec("/bin/sh", "-c", `
stat -f -c %T .
for i in 1 2 3 4; do
  dd if=/dev/zero of=f$i bs=1M count=3 2>/tmp/err$i || grep -o "No space left on device" /tmp/err$i
done
echo ready; exec sleep 60`)
	spec.Root, spec.ScratchRoot = "", true
	spec.Limits.FileBytes = 4 << 20
	spec.Limits.ScratchBytes = 8 << 20
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	spec.Stdout = outW
	sb, err := Start(t.Context(), spec)
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Destroy() })
	var out strings.Builder
	buf := make([]byte, 4096)
	deadline := time.Now().Add(20 * time.Second)
	outR.SetReadDeadline(deadline)
	for !strings.Contains(out.String(), "ready") {
		n, err := outR.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			t.Fatalf("subject said %q: %v", out.String(), err)
		}
	}
	got := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(out.String()), "ready"))
	if want := "tmpfs\nNo space left on device\nNo space left on device"; got != want {
		t.Errorf("subject:\n%s\nwant\n%s", got, want)
	}
	// While it runs: no scratch directory on the host, and what the
	// subject sees at /sandbox is a filesystem of its own namespace.
	if p := filepath.Join(os.TempDir(), scratchPrefix+sb.ID()); fileExists(p) {
		t.Errorf("a host scratch directory %s exists", p)
	}
	if h := sb.Evidence().HostRoot; h != "" {
		t.Errorf("evidence host root %q, want none", h)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(fmt.Sprintf("/proc/%d/root%s", sb.Evidence().InitPID, Workdir), &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC || uint64(st.Blocks)*uint64(st.Bsize) != 8<<20 {
		t.Errorf("/sandbox: fs type %#x, %d bytes; want tmpfs of %d", st.Type, uint64(st.Blocks)*uint64(st.Bsize), 8<<20)
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
