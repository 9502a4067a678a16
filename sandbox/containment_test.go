package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/netpolicy"
)

// hostListener serves "hello" to every TCP connection on the host's
// 127.0.0.1; the sandbox must never reach it unless allow-listed.
func hostListener(t *testing.T, addr string) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "hello")
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestContainment runs one escape attempt per case inside a real sandbox
// and asserts the refusal the subject observed.
func TestContainment(t *testing.T) {
	f := newFixture(t)
	f.withEscape(t)
	tcpPort := hostListener(t, "127.0.0.1:0")
	canary := filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(canary, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A setuid-root copy of the helper in the mapped root: the workdir is
	// nosuid and no_new_privs is set, so it must still run as the sandbox uid.
	suid := filepath.Join(f.root, "escape-suid")
	b, _ := os.ReadFile(filepath.Join(f.root, "escape"))
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(suid, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())

	cases := []struct {
		name string
		args []string
		want string // exact line, or a prefix ending in "*"
	}{
		{"tcp to host loopback listener", []string{"tcp", "127.0.0.1:" + strconv.Itoa(tcpPort)}, "ERR ECONNREFUSED"},
		{"dns lookup", []string{"dns", "example.com"}, "ERR lookup"},
		{"read canary outside root", []string{"read", canary}, "ERR ENOENT"},
		{"read host passwd", []string{"read", "/etc/shadow"}, "ERR ENOENT"},
		{"write /usr", []string{"write", "/usr/escape"}, "ERR EROFS"},
		{"write root dir", []string{"write", "/escape"}, "ERR EROFS"},
		{"write /etc/passwd", []string{"write", "/etc/passwd"}, "ERR EROFS"},
		{"mount tmpfs", []string{"mount", "/tmp"}, "ERR EPERM"},
		{"umount workdir", []string{"umount", Workdir}, "ERR EPERM"},
		{"unshare user", []string{"unshare", "user"}, "ERR EPERM"},
		{"unshare mnt", []string{"unshare", "mnt"}, "ERR EPERM"},
		{"unshare net", []string{"unshare", "net"}, "ERR EPERM"},
		{"setns own net", []string{"setns", "/proc/self/ns/net"}, "ERR EPERM"},
		{"setns init mnt", []string{"setns", "/proc/1/ns/mnt"}, "ERR EACCES"},
		{"chroot", []string{"chroot", "/tmp"}, "ERR EPERM"},
		{"clone3 refused for fallback", []string{"clone3"}, "ERR ENOSYS"},
		{"bpf", []string{"bpf"}, "ERR EPERM"},
		{"host pid invisible", []string{"kill", self}, "ERR ESRCH"},
		{"ptrace init", []string{"ptrace", "1"}, "ERR EPERM"},
		// Delivered nowhere: the kernel drops SIGKILL to a namespace's init
		// from inside it; the sandbox lives on (the helper prints its line).
		{"kill init", []string{"kill", "1"}, "OK"},
		{"mknod block device", []string{"mknod", "/tmp/sda"}, "ERR EPERM"},
		{"open host disk", []string{"read", "/dev/vda"}, "ERR ENOENT"},
		{"keyctl", []string{"keyctl"}, "ERR EPERM"},
		// The shell's own descriptors, listed by ls: exactly stdio.
		{"only stdio inherited", []string{"fds"}, "OK 0,1,2"},
		{"overwrite init binary via /proc", []string{"openw", "/proc/1/exe"}, "ERR EACCES"},
		// <uid> is the sandbox's own uid, from its evidence.
		{"setuid binary", []string{"./escape-suid", "euid"}, "OK euid=<uid>"},
		// Socket families: the errnos are the filter's own (errFamily,
		// errNetlinkProto), not the kernel's. Without the filter the
		// reference kernel (6.18, vsock built in) gives OK for vsock stream
		// and the uevent, audit and generic netlink sockets, ENODEV for
		// vsock dgram (no transport), EOPNOTSUPP for socketpair vsock and
		// EPERM for packet (no CAP_NET_RAW): none passes by accident. Only
		// alg is EAFNOSUPPORT either way there (not built): it guards
		// kernels that have it.
		{"socket vsock (host port space)", []string{"socket", "vsock", "stream", "0"}, "ERR EAFNOSUPPORT"},
		{"socket vsock dgram", []string{"socket", "vsock", "dgram", "0"}, "ERR EAFNOSUPPORT"},
		{"socketpair vsock", []string{"socketpair", "vsock", "stream", "0"}, "ERR EAFNOSUPPORT"},
		{"socket netlink kobject_uevent (host uevents)", []string{"socket", "netlink", "dgram", "kobject_uevent"}, "ERR EPROTONOSUPPORT"},
		{"socket netlink kobject_uevent raw", []string{"socket", "netlink", "raw", "kobject_uevent"}, "ERR EPROTONOSUPPORT"},
		{"socket netlink audit", []string{"socket", "netlink", "raw", "audit"}, "ERR EPROTONOSUPPORT"},
		{"socket netlink generic", []string{"socket", "netlink", "raw", "generic"}, "ERR EPROTONOSUPPORT"},
		{"socket packet", []string{"socket", "packet", "dgram", "0"}, "ERR EAFNOSUPPORT"},
		{"socket alg", []string{"socket", "alg", "seqpacket", "0"}, "ERR EAFNOSUPPORT"},
		// What programs need keeps working.
		{"socketpair unix", []string{"socketpair", "unix", "stream", "0"}, "OK"},
		// A pathname socket in the mapped root crosses the network
		// namespace (TestUnixSocketCrossesNoNamespace): socket(AF_UNIX)
		// is refused, socketpair stays.
		{"socket unix dgram", []string{"socket", "unix", "dgram", "0"}, "ERR EPERM"},
		{"socket unix stream", []string{"socket", "unix", "stream", "0"}, "ERR EPERM"},
		{"socket inet stream", []string{"socket", "inet", "stream", "0"}, "OK"},
		{"socket inet6 dgram", []string{"socket", "inet6", "dgram", "0"}, "OK"},
		{"socket netlink route (getifaddrs, ip)", []string{"socket", "netlink", "raw", "route"}, "OK"},
		{"socket netlink sock_diag (ss)", []string{"socket", "netlink", "raw", "sock_diag"}, "OK"},
		{"interfaces over netlink route", []string{"ifaces"}, "OK lo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"./escape"}, tc.args...)
			if strings.Contains(tc.args[0], "/") {
				args = tc.args
			}
			ex, out, stderr, sb := runBox(t, f.spec(args...), 20*time.Second)
			if ex.ShellStatus() != 0 {
				t.Fatalf("helper exit %+v, stderr %q", ex, stderr)
			}
			want := strings.ReplaceAll(tc.want, "<uid>", strconv.Itoa(sb.Evidence().UID))
			if out != want {
				t.Errorf("got %q, want %q", out, want)
			}
		})
	}

	t.Run("process list", func(t *testing.T) {
		_, out, _, sb := runBox(t, f.spec("./escape", "procs"), 20*time.Second)
		// Only our PID 1 and the helper itself exist in the namespace.
		want := fmt.Sprintf("OK 1,%d", sb.Evidence().SubjectPID)
		if out != want {
			t.Errorf("visible pids %q, want %q", out, want)
		}
	})
}

// TestAllowList checks an allow-list sandbox: the allowed host:port
// answers through the forwarder; every other destination fails.
func TestAllowList(t *testing.T) {
	f := newFixture(t)
	f.withEscape(t)
	allowed := hostListener(t, "127.0.0.1:0")
	other := hostListener(t, "127.0.0.1:0")
	otherHost := hostListener(t, "127.0.0.2:0")
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpPort := udp.LocalAddr().(*net.UDPAddr).Port
	policy := netpolicy.Policy{Mode: netpolicy.AllowList, Allowed: []netpolicy.HostPort{
		{Host: "127.0.0.1", Port: allowed},
		{Host: "localhost", Port: allowed},
	}}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"allowed host:port answers", []string{"tcp", fmt.Sprintf("127.0.0.1:%d", allowed)}, "OK hello"},
		{"allowed name pinned in /etc/hosts", []string{"tcp", fmt.Sprintf("localhost:%d", allowed)}, "OK hello"},
		{"other port same host", []string{"tcp", fmt.Sprintf("127.0.0.1:%d", other)}, "ERR ECONNREFUSED"},
		{"other host", []string{"tcp", fmt.Sprintf("127.0.0.2:%d", otherHost)}, "ERR ECONNREFUSED"},
		{"udp", []string{"udp", fmt.Sprintf("127.0.0.1:%d", udpPort)}, "ERR ECONNREFUSED"},
		{"dns", []string{"dns", "example.com"}, "ERR lookup"},
		// The socket-family filter holds in allow-list mode too.
		{"socket vsock", []string{"socket", "vsock", "stream", "0"}, "ERR EAFNOSUPPORT"},
		{"socket netlink kobject_uevent", []string{"socket", "netlink", "dgram", "kobject_uevent"}, "ERR EPROTONOSUPPORT"},
		{"socket inet stream", []string{"socket", "inet", "stream", "0"}, "OK"},
		{"socket unix", []string{"socket", "unix", "stream", "0"}, "ERR EPERM"},
		{"socketpair unix", []string{"socketpair", "unix", "stream", "0"}, "OK"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := f.spec(append([]string{"./escape"}, tc.args...)...)
			spec.Network = policy
			ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
			if ex.ShellStatus() != 0 {
				t.Fatalf("helper exit %+v, stderr %q", ex, stderr)
			}
			if out != tc.want {
				t.Errorf("got %q, want %q", out, tc.want)
			}
			if a := sb.Applied(); !a.Network.Confined || !slices.Contains(a.Network.Checks, "allow-list-forwarders") {
				t.Errorf("applied network %+v", a.Network)
			}
			// The evidence counts what crossed the forwarders.
			var accepted uint64
			fw := sb.Evidence().Forwarders
			for _, r := range fw {
				accepted += r.Accepted
			}
			if len(fw) == 0 || (tc.want == "OK hello") != (accepted == 1) {
				t.Errorf("forwarder evidence %+v after %q", fw, out)
			}
		})
	}
	// Nothing the sandbox sent over UDP reached the host's socket.
	_ = udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, from, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Errorf("host UDP socket received %d bytes from %v", n, from)
	}
}

// TestApplied checks the verified mechanisms of a default sandbox.
func TestApplied(t *testing.T) {
	f := newFixture(t)
	_, _, _, sb := runBox(t, f.spec("/bin/true"), 20*time.Second)
	a := sb.Applied()
	if !a.Filesystem.Confined || !a.Network.Confined {
		t.Fatalf("tiers %+v %+v", a.Filesystem, a.Network)
	}
	for _, name := range []string{"mount-namespace", "pid-namespace", "network-namespace", "ipc-namespace",
		"uts-namespace", "pivot-root", "unprivileged-uid", "capabilities-dropped", "no-new-privs", "seccomp",
		"cgroup-memory", "cgroup-pids"} {
		if m, ok := a.Mechanism(name); !ok || !m.Applied {
			t.Errorf("mechanism %s: %+v (present %v)", name, m, ok)
		}
	}
	ev := sb.Evidence()
	if ev.InitPID == 0 || ev.SubjectPID < 2 || len(ev.Namespaces) == 0 || ev.CgroupPaths["memory"] == "" {
		t.Errorf("evidence %+v", ev)
	}
}

// TestExitReporting checks that the subject's own end is reported, not
// the init's.
func TestExitReporting(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		args   []string
		code   int
		signal string
		shell  int
	}{
		{"exit code", []string{"/bin/sh", "-c", "exit 7"}, 7, "", 7},
		{"sigkill", []string{"/bin/sh", "-c", "kill -KILL $$"}, -1, "KILL", 137},
		{"sigabrt from kill", []string{"/bin/sh", "-c", "kill -ABRT $$"}, -1, "ABRT", 134},
		{"segv", []string{"/bin/sh", "-c", "kill -SEGV $$"}, -1, "SEGV", 139},
		{"relative path from workdir", []string{"./run.sh"}, 3, "", 3},
	}
	if err := os.WriteFile(filepath.Join(f.root, "run.sh"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		cases = append(cases, struct {
			name   string
			args   []string
			code   int
			signal string
			shell  int
		}{"abort()", []string{"/usr/bin/python3", "-c", "import os; os.abort()"}, -1, "ABRT", 134})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, _, stderr, _ := runBox(t, f.spec(tc.args...), 20*time.Second)
			if ex.Code != tc.code || ex.Signal != tc.signal || ex.ShellStatus() != tc.shell || ex.InitLost || ex.Killed {
				t.Errorf("exit %+v, want code %d signal %q (stderr %q)", ex, tc.code, tc.signal, stderr)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		sb, err := Start(t.Context(), f.spec("no-such-command"))
		if err == nil {
			_ = sb.Destroy()
		}
		ee, ok := err.(*ExecError)
		if !ok || ee.Code != 127 {
			t.Fatalf("err %v, want *ExecError with code 127", err)
		}
	})
}

// TestResources covers the pids and memory limits and the life of
// daemons.
func TestResources(t *testing.T) {
	f := newFixture(t)
	f.withEscape(t)
	t.Run("fork bomb capped by pids", func(t *testing.T) {
		spec := f.spec("/bin/sh", "-c", "while :; do sleep 60 & done")
		spec.Limits.Pids = 64
		ex, _, stderr, _ := runBox(t, spec, 30*time.Second)
		// dash dies on the first failed fork: "Cannot fork" (EAGAIN from pids.max).
		if ex.Code != 2 || !strings.Contains(stderr, "Cannot fork") {
			t.Errorf("exit %+v stderr %q: want dash's \"Cannot fork\" and status 2", ex, stderr)
		}
		// The supervisor keeps working: another sandbox starts and ends.
		ex, _, _, _ = runBox(t, f.spec("/bin/true"), 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Errorf("sandbox after fork bomb: %+v", ex)
		}
	})
	t.Run("memory bomb killed by memory limit", func(t *testing.T) {
		spec := f.spec("./escape", "alloc", "512")
		spec.Limits.MemoryBytes = 64 << 20
		ex, out, _, sb := runBox(t, spec, 60*time.Second)
		if ex.Signal != "KILL" || !ex.OOMKilled || ex.Killed {
			t.Errorf("exit %+v out %q, want KILL by OOM", ex, out)
		}
		if ev := sb.Evidence(); ev.OOMKills < 1 || ev.PeakMemoryBytes < 32<<20 {
			t.Errorf("evidence oom %d peak %d", ev.OOMKills, ev.PeakMemoryBytes)
		}
	})
	t.Run("setsid double-forked daemon dies with the sandbox", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(2)
		spec := f.spec("/bin/sh", "-c", "(setsid sleep "+marker+" </dev/null >/dev/null 2>&1 &); sleep 0.2; exit 0")
		ex, _, _, _ := runBox(t, spec, 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Fatalf("exit %+v", ex)
		}
		if pids := waitGone(marker, time.Second); len(pids) > 0 {
			t.Errorf("daemon survived: pids %v", pids)
		}
	})
	t.Run("kill ends the whole tree", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(3)
		spec := f.spec("/bin/sh", "-c", "(setsid sleep "+marker+" &); sleep "+marker)
		ex, _, _, _ := runBox(t, spec, 300*time.Millisecond)
		if ex.Signal != "KILL" || !ex.Killed {
			t.Errorf("exit %+v, want Killed by KILL", ex)
		}
		if pids := waitGone(marker, time.Second); len(pids) > 0 {
			t.Errorf("survivors: %v", pids)
		}
	})
}

// waitGone polls until no process has marker in its command line or the
// timeout passes, and returns the survivors.
func waitGone(marker string, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		pids := pidsMatching(marker)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pidsMatching(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, pid)
		}
	}
	return out
}
