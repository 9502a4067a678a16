package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/transcript"
)

// noNamespacesEnv, set to the real binary's path, makes this test binary
// a wrapper that runs that binary where namespaces cannot be made: it
// installs a seccomp filter (inherited by everything the binary starts,
// its daemon and the daemon's namespace trial included) that refuses
// clone and unshare with any CLONE_NEW* flag (EPERM, as a host or a
// container runtime that forbids them answers) and clone3 (ENOSYS, so
// that callers fall back to clone), and execs the binary with the
// wrapper's arguments. Nothing in the product reads this: the product
// sees a real refusal from the kernel, through its real namespace trial.
const noNamespacesEnv = "TVS_TEST_EXEC_WITHOUT_NAMESPACES"

func init() {
	bin := os.Getenv(noNamespacesEnv)
	if bin == "" {
		return
	}
	if err := refuseNamespaces(); err != nil {
		fmt.Fprintf(os.Stderr, "test wrapper: %v\n", err)
		os.Exit(125)
	}
	err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "test wrapper: exec %s: %v\n", bin, err)
	os.Exit(125)
}

// refuseNamespaces installs the wrapper's filter on every thread (amd64).
func refuseNamespaces() error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("the filter is written for amd64, not %s", runtime.GOARCH)
	}
	const ns = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
		unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP
	ld := func(k uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: k}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	prog := []unix.SockFilter{
		/* 0 */ ld(4), // seccomp_data.arch
		/* 1 */ jeq(unix.AUDIT_ARCH_X86_64, 0, 4),
		/* 2 */ ld(0), // seccomp_data.nr
		/* 3 */ jeq(unix.SYS_CLONE3, 7, 0),
		/* 4 */ jeq(unix.SYS_CLONE, 2, 0),
		/* 5 */ jeq(unix.SYS_UNSHARE, 1, 0),
		/* 6 */ ret(unix.SECCOMP_RET_ALLOW),
		/* 7 */ ld(16), // args[0], low half (the flags)
		/* 8 */ {Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: ns, Jt: 1, Jf: 0},
		/* 9 */ ret(unix.SECCOMP_RET_ALLOW),
		/* 10 */ ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
		/* 11 */ ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)),
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// withoutNamespaces makes h's commands run the binary where namespaces
// cannot be made (noNamespacesEnv), and checks the wrapper does that.
func withoutNamespaces(t *testing.T, h *termHarness) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the namespace-refusing filter is written for amd64, not %s", runtime.GOARCH)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h.env = append(h.env, noNamespacesEnv+"="+h.bin)
	h.bin = self
}

// TestTermIsolation: --isolation os|auto. Where namespaces can be made,
// auto is os. Where they cannot (a seccomp filter around the binary
// makes the kernel refuse them), os fails saying so and auto runs the
// program without the sandbox on a host pty: typing echoes, ^C reaches
// the program's foreground group, settled waits work, start's stderr,
// STATUS and RECEIPTS say it, no receipt says os, and after stop nothing
// is left: no process, cgroup, state or pty.
func TestTermIsolation(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)

	t.Run("auto is os", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		out, errOut, status := h.run("start", "--state-dir", h.state, "--isolation", "auto", "--", "cat")
		if status != 0 {
			t.Fatalf("start: %d %s", status, errOut)
		}
		d := parseAnnounce(t, out)
		defer h.mustRun("stop", "--socket", d.socket)
		if strings.Contains(errOut, "isolation auto") {
			t.Errorf("start warned of a downgrade that did not happen: %q", errOut)
		}
		if st := h.mustRun("status", "--socket", d.socket); !strings.Contains(st, "Sandbox: isolation os, filesystem os, network os, terminal os\n") {
			t.Errorf("status %q, want the os tier", st)
		}
	})

	t.Run("bad", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		for _, iso := range []string{"none", "nope"} {
			if _, errOut, status := h.run("start", "--isolation", iso, "--", "cat"); status != 1 || !strings.Contains(errOut, "want os or auto") {
				t.Errorf("--isolation %s: %d %q", iso, status, errOut)
			}
		}
	})

	t.Run("os fails", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		withoutNamespaces(t, h)
		for _, flags := range [][]string{{"--isolation", "os"}, nil} { // os is the default
			args := append(append([]string{"start", "--state-dir", h.state}, flags...), "--", "cat")
			_, errOut, status := h.run(args...)
			t.Logf("start %v: %s", flags, errOut)
			if status != 1 || !strings.HasPrefix(errOut, "Error: ") || !strings.Contains(errOut, "the os tier is unavailable on this host") ||
				!strings.Contains(errOut, "namespaces unavailable") || !strings.Contains(errOut, "--isolation auto") {
				t.Errorf("start %v without namespaces: %d %q, want Error: naming the os tier and --isolation auto", flags, status, errOut)
			}
		}
	})

	t.Run("no allow", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		withoutNamespaces(t, h)
		_, errOut, status := h.run("start", "--state-dir", h.state, "--isolation", "auto", "--allow", "127.0.0.1:80", "--", "cat")
		if status != 1 || !strings.Contains(errOut, "--allow needs a network namespace") {
			t.Errorf("start --allow without namespaces: %d %q", status, errOut)
		}
	})

	t.Run("no transcript", func(t *testing.T) {
		// A recorded session's receipts are run --pty's: without the
		// sandbox its negotiation refuses, and the transcript says so
		// (run.unsupported), never a host pty recorded as os; and it is
		// refused before the program runs on the host at all.
		h := newTermHarness(t, bin, "")
		withoutNamespaces(t, h)
		rec := filepath.Join(t.TempDir(), "session.jsonl")
		ran := filepath.Join(publicTempDir(t, 0o777), "ran")
		_, errOut, status := h.run("start", "--state-dir", h.state, "--isolation", "auto", "--transcript", rec, "--", "/bin/sh", "-c", "touch "+ran+"; exec cat")
		if _, err := os.Lstat(ran); err == nil {
			t.Errorf("the program ran on the host before the recording was refused (%s exists)", ran)
		}
		if status != 1 || !strings.Contains(errOut, "cannot be recorded as run --pty would record it") {
			t.Errorf("start --transcript without namespaces: %d %q", status, errOut)
		}
		data, err := os.ReadFile(rec)
		if err != nil {
			t.Fatalf("a refused recording left no transcript saying why: %v", err)
		}
		if _, err := transcript.Parse(data); err != nil {
			t.Errorf("the refused recording's transcript is invalid: %v\n%s", err, data)
		}
		if !bytes.Contains(data, []byte(`"kind":"run.unsupported"`)) || bytes.Contains(data, []byte(`"tier":"os"`)) {
			t.Errorf("want run.unsupported and no os tier:\n%s", data)
		}
	})

	t.Run("downgrade", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(61)
		h := newTermHarness(t, bin, marker)
		withoutNamespaces(t, h)
		// What the program says of itself: its terminal, its PID
		// namespace (the host's: it really runs without one), its
		// cgroup (the direct runner's), and a background job of its
		// own that stop must end.
		script := `echo "tty $(tty)"; echo "pidns $(readlink /proc/self/ns/pid)"; ` +
			`echo "cgroup $(grep -o 'tvs-[0-9a-f]*' /proc/self/cgroup | head -n1)"; ` +
			`sleep ` + marker + ` & echo ready; exec cat`
		out, errOut, status := h.run("start", "--state-dir", h.state, "--isolation", "auto", "--size", "90x20", "--", "sh", "-c", script)
		if status != 0 {
			t.Fatalf("start: %d %s", status, errOut)
		}
		d := parseAnnounce(t, out)
		stopped := false
		defer func() {
			if !stopped {
				// A failed test kills the daemon (SIGTERM: it destroys the
				// program's sandbox before it exits).
				_ = syscall.Kill(d.pid, syscall.SIGTERM)
				waitGone(t, d.pid)
			}
		}()
		if !strings.Contains(errOut, "Warning: --isolation auto: the os tier is unavailable (namespaces unavailable on this host") ||
			!strings.Contains(errOut, "WITHOUT the sandbox") {
			t.Errorf("start's stderr %q does not say the downgrade", errOut)
		}
		s := h.waitScreen(d, "ready")
		ownNS, _ := os.Readlink("/proc/self/ns/pid")
		if !strings.Contains(s, "pidns "+ownNS) {
			t.Errorf("the program is not in the host's PID namespace %s: %q", ownNS, s)
		}
		tty := regexp.MustCompile(`tty (/dev/pts/[0-9]+)`).FindStringSubmatch(s)
		cg := regexp.MustCompile(`cgroup (tvs-[0-9a-f]+)`).FindStringSubmatch(s)
		if tty == nil || cg == nil {
			t.Fatalf("the program's terminal or cgroup not shown: %q", s)
		}
		st := h.mustRun("status", "--socket", d.socket)
		t.Logf("start's stderr: %s\nstatus:\n%s\nreceipts:\n%s", errOut, st, h.mustRun("receipts", "--socket", d.socket))
		if !strings.Contains(st, "Sandbox: isolation none, filesystem delivered, network delivered, terminal delivered (downgraded by --isolation auto: namespaces unavailable on this host") {
			t.Errorf("status %q does not say the downgrade", st)
		}
		var rs struct {
			Receipts []struct{ Constraint, Status, Tier, Mechanism, Reason string }
		}
		if err := json.Unmarshal([]byte(h.mustRun("receipts", "--socket", d.socket, "--json")), &rs); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"seed": "unsupported", "clock": "unsupported", "locale": "delivered", "timezone": "unsupported",
			"terminal": "delivered", "filesystem": "delivered", "network": "delivered"}
		for _, r := range rs.Receipts {
			got := r.Tier
			if got == "" {
				got = r.Status
			}
			if got != want[r.Constraint] || r.Tier == "os" {
				t.Errorf("receipt %+v, want %s", r, want[r.Constraint])
			}
			if (r.Constraint == "filesystem" || r.Constraint == "network" || r.Constraint == "terminal") && !strings.Contains(r.Reason, "namespaces unavailable") {
				t.Errorf("receipt %+v does not say why it is not os", r)
			}
		}
		if len(rs.Receipts) != 7 {
			t.Errorf("receipts %+v, want seven", rs.Receipts)
		}
		// Types and echoes; a settled wait sees cat read again.
		h.mustRun("input", "--socket", d.socket, "--text", `hello\n`)
		if out := h.mustRun("wait", "--socket", d.socket, "--settled", "--timeout", "10000"); !strings.Contains(out, "hello\nhello\n") {
			t.Errorf("wait --settled after typing: %q", out)
		}
		if out := h.mustRun("output", "--socket", d.socket, "--no-color"); !strings.Contains(out, "hello\nhello\n") {
			t.Errorf("screen after typing: %q", out)
		}
		// ^C is the terminal's: SIGINT to the foreground group, cat.
		h.mustRun("input", "--socket", d.socket, "--text", `\x03`)
		if out := h.mustRun("wait", "--socket", d.socket, "--quiet"); out != "130\n" {
			t.Errorf("exit after ^C: %q, want 130 (SIGINT)", out)
		}
		h.mustRun("stop", "--socket", d.socket)
		waitGone(t, d.pid)
		stopped = true
		if pids := sandboxtest.PidsMatching(marker); len(pids) > 0 {
			t.Errorf("the program's background job survived stop: %v", pids)
		}
		if left := sandboxtest.CgroupsOf(cg[1]); len(left) > 0 {
			t.Errorf("cgroups left after stop: %v", left)
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(tty[1], "/dev/pts/"))
		if holders := ptyHolders(uint32(n)); len(holders) > 0 {
			t.Errorf("%s still open after stop: %v", tty[1], holders)
		}
		if ents, _ := os.ReadDir(h.state); len(ents) > 0 {
			t.Errorf("state left after stop: %v", ents)
		}
	})
}

// TestTermIsolationUnprivileged: the downgrade where it matters most, a
// caller that is not root on a host without namespaces: the program runs
// as the caller, with no cgroup to list, so settled waits judge the
// reaper's process tree, and stop still ends everything.
func TestTermIsolationUnprivileged(t *testing.T) {
	sandboxtest.RequireRoot(t) // to become the unprivileged caller
	const nobody = 65534
	bin := buildBinary(t)
	h := newTermHarness(t, bin, "")
	withoutNamespaces(t, h)
	// The wrapper (this test binary) where the caller may run it, and a
	// TMPDIR and state directory of the caller's own.
	wrapper := filepath.Join(filepath.Dir(bin), "wrapper")
	if b, err := os.ReadFile(h.bin); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(wrapper, b, 0o755); err != nil {
		t.Fatal(err)
	}
	h.bin = wrapper
	own := func(name string) string {
		dir := filepath.Join(publicTempDir(t, 0o755), name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	h.tmp, h.state = own("tmp"), own("state")
	sandboxtest.CheckNoLeaks(t, h.state, "")
	marker := sandboxtest.SleepMarker(62)
	c := h.cmd("start", "--state-dir", h.state, "--isolation", "auto", "--", "sh", "-c",
		`echo "uid $(id -u)"; sleep `+marker+` & echo ready; exec cat`)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, errOut, status := run(t, c)
	if status != 0 {
		t.Fatalf("start as %d: %d %s", nobody, status, errOut)
	}
	d := parseAnnounce(t, out)
	stopped := false
	defer func() {
		if !stopped {
			_ = syscall.Kill(d.pid, syscall.SIGTERM)
			waitGone(t, d.pid)
		}
	}()
	if !strings.Contains(errOut, "WITHOUT the sandbox") {
		t.Errorf("start's stderr %q does not say the downgrade", errOut)
	}
	if s := h.waitScreen(d, "ready"); !strings.Contains(s, fmt.Sprintf("uid %d", nobody)) {
		t.Errorf("the program does not run as the caller %d: %q", nobody, s)
	}
	if st := h.mustRun("status", "--socket", d.socket); !strings.Contains(st, "Sandbox: isolation none") {
		t.Errorf("status %q", st)
	}
	h.mustRun("input", "--socket", d.socket, "--text", `typed\n`)
	if out := h.mustRun("wait", "--socket", d.socket, "--settled", "--timeout", "10000"); !strings.Contains(out, "typed\ntyped\n") {
		t.Errorf("wait --settled: %q", out)
	}
	h.mustRun("input", "--socket", d.socket, "--text", `\x03`)
	if out := h.mustRun("wait", "--socket", d.socket, "--quiet"); out != "130\n" {
		t.Errorf("exit after ^C: %q, want 130", out)
	}
	h.mustRun("stop", "--socket", d.socket)
	waitGone(t, d.pid)
	stopped = true
	if pids := sandboxtest.PidsMatching(marker); len(pids) > 0 {
		t.Errorf("the program's background job survived stop: %v", pids)
	}
}

// ptyHolders is ptytest.Holders(n), waiting up to a second for the
// holders to go.
func ptyHolders(n uint32) []string {
	deadline := time.Now().Add(time.Second)
	for {
		out := ptytest.Holders(n)
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}
