package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/supervisor"
)

// buildBinary builds the real termverify-sandbox into a directory every
// user can read, so the rootless tests can run it as another uid. It links
// it as the Makefile's build target does (keep the two in step): static,
// so our PID-1 reaper also runs in a --rootfs that has no C library.
func buildBinary(t *testing.T) string {
	t.Helper()
	dir := publicTempDir(t, 0o755)
	bin := filepath.Join(dir, "termverify-sandbox")
	cmd := exec.Command("go", "build", "-tags", "netgo osusergo",
		"-ldflags", "-linkmode external -extldflags -static", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// publicTempDir is a temporary directory directly under the system's
// temporary directory (t.TempDir's parent is private to root), with mode.
func publicTempDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tvs-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs the binary and returns stdout, stderr and the exit status.
func run(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	status := exitStatus(t, cmd, cmd.Run())
	return stdout.String(), stderr.String(), status
}

// exitStatus is the status of cmd, which Run or Wait just returned err
// for; an error other than a non-zero exit fails the test.
func exitStatus(t *testing.T, cmd *exec.Cmd, err error) int {
	t.Helper()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return 0
}

func TestExec(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	py := "/usr/bin/python3"
	cases := []struct {
		name       string
		args       []string
		wantOut    string
		wantErr    string // substring of stderr; "" means stderr must be empty
		wantStatus int
		skip       string
	}{
		{name: "stdout passed through", args: []string{"--", "/bin/echo", "hello"}, wantOut: "hello\n"},
		{name: "exit status", args: []string{"--", "/bin/sh", "-c", "exit 3"}, wantStatus: 3},
		{name: "stderr passed through", args: []string{"--", "/bin/sh", "-c", "echo oops >&2"}, wantErr: "oops"},
		{name: "sigkill is 137", args: []string{"--", "/bin/sh", "-c", "kill -KILL $$"}, wantStatus: 137},
		{name: "abort is 134", args: []string{"--", py, "-c", "import os; os.abort()"}, wantStatus: 134, skip: py},
		{name: "not found is 127", args: []string{"--", "no-such-command"}, wantStatus: 127, wantErr: "command not found"},
		{name: "workdir", args: []string{"--", "/bin/pwd"}, wantOut: sandbox.Workdir + "\n"},
		{name: "network deny", args: []string{"--network", "deny", "--", "/bin/true"}},
		{name: "bad network", args: []string{"--network", "open", "--", "/bin/true"}, wantStatus: 2, wantErr: "--network"},
		{name: "no command", args: []string{}, wantStatus: 2, wantErr: "after --"},
		{name: "verbose shows applied", args: []string{"--verbose", "--", "/bin/true"}, wantErr: `"filesystem"`},
		// The scratch root is a tmpfs of --scratch-size: files each under
		// --file-size fill it, and the next write is ENOSPC, not the host
		// disk (sandbox.TestScratchRootBounded).
		{name: "scratch root bounded", args: []string{"--scratch-size", "8M", "--file-size", "4M", "--", "/bin/sh", "-c",
			`stat -f -c %T .; for i in 1 2 3; do dd if=/dev/zero of=f$i bs=1M count=3 2>/tmp/e || grep -o 'No space left on device' /tmp/e; done; du -sk . | cut -f1`},
			wantOut: "tmpfs\nNo space left on device\n8192\n"},
		{name: "bad scratch size", args: []string{"--scratch-size", "lots", "--", "/bin/true"}, wantStatus: 2, wantErr: "--scratch-size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				if _, err := os.Stat(tc.skip); err != nil {
					t.Skipf("needs %s: %v", tc.skip, err)
				}
			}
			args := append([]string{"exec", "--state-dir", state}, tc.args...)
			out, errOut, status := run(t, exec.Command(bin, args...))
			if status != tc.wantStatus {
				t.Errorf("status %d, want %d (stderr %q)", status, tc.wantStatus, errOut)
			}
			if tc.wantOut != "" && out != tc.wantOut {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
			if tc.wantErr == "" && errOut != "" {
				t.Errorf("stderr %q, want nothing", errOut)
			}
			if tc.wantErr != "" && !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.wantErr)
			}
		})
	}
}

// TestExecGOMAXPROCS: exec hands GOMAXPROCS=1 to libcontainer's setup
// process through its own environment (singlePInit), after the subject's
// environment was read. The subject must see the caller's GOMAXPROCS, or
// none: never the one exec set for libcontainer.
func TestExecGOMAXPROCS(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			env = append(env, e)
		}
	}
	for _, tc := range []struct {
		name, caller, want string
	}{
		{"caller sets none", "", "unset\n"},
		{"caller's passes through", "GOMAXPROCS=3", "3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/sh", "-c", "echo ${GOMAXPROCS-unset}")
			cmd.Env = env
			if tc.caller != "" {
				cmd.Env = append(env[:len(env):len(env)], tc.caller)
			}
			out, errOut, status := run(t, cmd)
			if status != 0 || out != tc.want {
				t.Errorf("status %d stdout %q (stderr %q), want 0 and %q", status, out, errOut, tc.want)
			}
		})
	}
}

// TestExecRootfsWithoutLibc runs a static program in a --rootfs that holds
// nothing else: no C library, no loader. Our PID-1 reaper (this binary,
// statically linked) must start there and report the subject's own exit.
func TestExecRootfsWithoutLibc(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	root := echoSubjectRoot(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	// An unknown mode makes the echo subject say so and exit 2.
	_, errOut, status := run(t, exec.Command(bin, "exec", "--state-dir", state, "--rootfs", root, "--", "/echo-subject", "no-such-mode"))
	if status != 2 || !strings.Contains(errOut, "unknown mode") {
		t.Fatalf("status %d, stderr %q; want the subject's own exit 2 and its message", status, errOut)
	}
}

// TestExecSupervisorKilled SIGKILLs exec mid-run: the sandbox must end
// within a second, and the next start's sweep must leave nothing behind.
func TestExecSupervisorKilled(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	marker := sandboxtest.SleepMarker(1)
	sandboxtest.CheckNoLeaks(t, state, marker)
	cmd := exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/sh", "-c", "(setsid sleep "+marker+" &); sleep "+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(sandboxtest.PidsMatching("sleep "+marker)) < 2 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("subject never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The dead supervisor's sandbox: its state entry names it, and so
	// does the claim on its own uid (uids/<uid> -> entry).
	all, err := os.ReadDir(state)
	var ents []os.DirEntry
	for _, e := range all {
		if strings.HasPrefix(e.Name(), "tvs-") {
			ents = append(ents, e)
		}
	}
	if err != nil || len(ents) != 1 {
		t.Fatalf("state entries after the crash: %v %v", all, err)
	}
	sandboxtest.CheckNoCgroups(t, ents[0].Name())
	if claims, err := os.ReadDir(filepath.Join(state, "uids")); err != nil || len(claims) != 1 {
		t.Errorf("uid claims after the crash: %v %v, want the crashed sandbox's", claims, err)
	} else if to, err := os.Readlink(filepath.Join(state, "uids", claims[0].Name())); err != nil || to != ents[0].Name() {
		t.Errorf("claim %s -> %q %v, want %s", claims[0].Name(), to, err, ents[0].Name())
	}
	for len(sandboxtest.PidsMatching(marker)) > 0 {
		if time.Since(killed) > time.Second {
			t.Fatalf("sandbox processes alive 1s after the supervisor's SIGKILL: %v", sandboxtest.PidsMatching(marker))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("sandbox gone %v after the supervisor's SIGKILL", time.Since(killed).Round(time.Millisecond))
	// The dead supervisor's state dir and cgroups are still there...
	if len(sandboxtest.Leaks(state, "")) == 0 {
		t.Log("nothing left even before the sweep")
	}
	// Its scratch root was a tmpfs of the sandbox's own mount namespace:
	// gone with it, nothing of it in the temporary directory.
	scratch := filepath.Join(os.TempDir(), "termverify-scratch-"+ents[0].Name())
	if _, err := os.Lstat(scratch); !os.IsNotExist(err) {
		t.Errorf("the crashed exec left a scratch root on the host: %s %v", scratch, err)
	}
	// ...until the next start sweeps them (CheckNoLeaks verifies).
	if _, errOut, status := run(t, exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/true")); status != 0 {
		t.Fatalf("exec after crash: %d %s", status, errOut)
	}
}

// TestRootless runs exec and probe as an unprivileged user: a user
// namespace replaces root, cgroup limits and the allow-list are reported
// unavailable, and everything else still holds.
func TestRootless(t *testing.T) {
	sandboxtest.RequireRoot(t) // to become uid 65534
	bin := buildBinary(t)
	// The state dir (also TMPDIR, for the scratch root) is uid 65534's
	// own: a directory another user could write is refused (SECURITY.md).
	state := publicTempDir(t, 0o700)
	if err := os.Chown(state, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	sandboxtest.CheckNoLeaks(t, state, "")
	asNobody := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + state}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		return cmd
	}
	out, errOut, status := run(t, asNobody("probe", "--json", "--state-dir", state))
	if status != 0 {
		t.Fatalf("probe: %d %s", status, errOut)
	}
	var res supervisor.ProbeReport
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("probe json: %v\n%s", err, out)
	}
	if !res.Rootless {
		t.Error("probe did not notice it runs rootless")
	}
	for _, m := range res.Mechanisms {
		if m.Name == "user-namespace" && !m.OK {
			t.Skipf("no user namespace for uid 65534: %s", m.Detail)
		}
	}
	tiers := map[receipts.Constraint]supervisor.ConstraintProbe{}
	for _, c := range res.Constraints {
		tiers[c.Constraint] = c
	}
	if tiers[receipts.Filesystem].Tier != receipts.OS || tiers[receipts.Network].Tier != receipts.OS {
		t.Errorf("rootless tiers: %+v %+v", tiers[receipts.Filesystem], tiers[receipts.Network])
	}
	if res.AllowList.Tier != receipts.None || !strings.Contains(res.AllowList.Reason, "EPERM") {
		t.Errorf("rootless allow-list: %+v, want unsupported with EPERM", res.AllowList)
	}
	for _, m := range res.Mechanisms {
		if strings.HasPrefix(m.Name, "cgroup-") && (m.OK || m.Detail != "rootless-not-delegated") {
			t.Errorf("rootless %s: %+v", m.Name, m)
		}
	}

	out, errOut, status = run(t, asNobody("exec", "--state-dir", state, "--", "/bin/sh", "-c",
		"id -u; grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status | tr -s '\\t' ' '; exit 5"))
	if status != 5 {
		t.Fatalf("rootless exec status %d, stderr %q", status, errOut)
	}
	want := "0\nCapEff: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2\n"
	if out != want {
		t.Errorf("rootless exec output %q, want %q", out, want)
	}
	if _, errOut, status := run(t, asNobody("exec", "--state-dir", state, "--allow", "127.0.0.1:9", "--", "/bin/true")); status == 0 || !strings.Contains(errOut, "network policy") {
		t.Errorf("rootless allow-list: status %d stderr %q, want a refusal", status, errOut)
	}
}

// TestExecSignals: exec does not die by SIGTERM's default action (which
// would skip every cleanup). The first signal reaches the subject; a
// second kills the sandbox; either way exec ends with the subject's status
// and leaves nothing behind, the scratch root included.
func TestExecSignals(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	cases := []struct {
		name    string
		script  string
		signals int
		status  int
	}{
		{"first signal reaches the subject", "trap 'exit 7' TERM; touch scratch-file; echo ready; while :; do sleep 0.02; done", 1, 7},
		{"second signal kills the sandbox", "trap '' TERM; touch scratch-file; echo ready; while :; do sleep 0.02; done", 2, 128 + 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			sandboxtest.CheckNoLeaks(t, state, "")
			cmd := exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/sh", "-c", tc.script)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
			defer timer.Stop()
			line, _ := bufio.NewReader(out).ReadString('\n')
			if line != "ready\n" {
				t.Fatalf("subject said %q", line)
			}
			for i := 0; i < tc.signals; i++ {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if status := exitStatus(t, cmd, cmd.Wait()); status != tc.status {
				t.Errorf("exec status %d, want %d", status, tc.status)
			}
		})
	}
}

// TestExecCallerFilesUntouched is the stdio-chown attack with files:
// libcontainer's init fchowns whatever it receives as fds 0-2 to the
// subject's uid, so an exec that handed in the caller's own files would
// leave a root-only 0600 secret owned by the subject. exec relays through
// pipes of its own instead: every caller file keeps owner and mode, and
// the data still flows both ways.
func TestExecCallerFilesUntouched(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	dir := t.TempDir()
	secret := strings.Repeat("top secret\n", 10000) // more than a pipe holds
	files := []struct {
		name    string
		content string
	}{{"stdin", secret}, {"stdout", ""}, {"stderr", ""}}
	var fds []*os.File
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		fds = append(fds, fd)
	}
	cmd := exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/sh", "-c", "cat; echo oops >&2")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = fds[0], fds[1], fds[2]
	if status := exitStatus(t, cmd, cmd.Run()); status != 0 {
		t.Errorf("status %d, want 0", status)
	}
	want := map[string]string{"stdin": secret, "stdout": secret, "stderr": "oops\n"}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 0 || st.Gid != 0 || st.Mode&0o7777 != 0o600 {
			t.Errorf("caller's %s file after exec: uid %d gid %d mode %#o, want 0 0 0600", f.name, st.Uid, st.Gid, st.Mode&0o7777)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want[f.name] {
			t.Errorf("caller's %s file holds %d bytes, want %d", f.name, len(b), len(want[f.name]))
		}
	}
}

// TestExecRelay: exec's pipes behave as the caller's own stdio would have.
// A caller stdin that never ends, or a background process that keeps the
// subject's stdout open, does not keep exec waiting (the sandbox dies with
// the subject); a reader that goes away makes the subject's next write
// fail (SIGPIPE), not exec die.
func TestExecRelay(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	cases := []struct {
		name       string
		script     string
		stdinOpen  bool // the caller's stdin is a pipe nobody closes
		readLine   bool // the caller reads one line of stdout, then closes it
		wantOut    string
		wantStatus int
	}{
		{name: "stdin held open by the caller", script: "echo hi", stdinOpen: true, wantOut: "hi\n"},
		{name: "background process holds stdout", script: "(sleep 765.4322 &); echo hi", wantOut: "hi\n"},
		{name: "reader gone: subject gets SIGPIPE", script: "yes", readLine: true, wantStatus: 128 + int(syscall.SIGPIPE)},
		{name: "subject closes stdin early", script: "exec 0<&-; echo closed", stdinOpen: true, wantOut: "closed\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/sh", "-c", tc.script)
			if tc.stdinOpen {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				defer r.Close()
				cmd.Stdin = r
			}
			timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
			defer timer.Stop()
			if !tc.readLine {
				out, errOut, status := run(t, cmd)
				if status != tc.wantStatus || out != tc.wantOut {
					t.Errorf("status %d stdout %q stderr %q, want %d %q", status, out, errOut, tc.wantStatus, tc.wantOut)
				}
				return
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			out.Close()
			status := exitStatus(t, cmd, cmd.Wait())
			if line != "y\n" || status != tc.wantStatus {
				t.Errorf("line %q status %d, want %q %d", line, status, "y\n", tc.wantStatus)
			}
		})
	}
}

// openPty opens a new pseudoterminal pair of the host's devpts, as a
// terminal emulator does: the test reads and writes the master, exec gets
// the slave as its controlling terminal and stdio.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudoterminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// ptyReader collects what the master side of a pty shows.
type ptyReader struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // signalled after each read; closed at EOF/EIO
}

func readPty(master *os.File) *ptyReader {
	r := &ptyReader{more: make(chan struct{}, 1)}
	go func() {
		defer close(r.more)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			r.mu.Lock()
			r.buf.Write(b[:n])
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO: every slave descriptor is closed
			}
		}
	}()
	return r
}

func (r *ptyReader) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// waitFor returns once s has been shown, false if the pty ended first.
func (r *ptyReader) waitFor(s string) bool {
	for !strings.Contains(r.String(), s) {
		if _, ok := <-r.more; !ok {
			return strings.Contains(r.String(), s)
		}
	}
	return true
}

// execOnPty runs `exec -- /bin/sh -c script` as a terminal session's
// leader with slave as its controlling terminal and stdio, as a shell in a
// terminal emulator would, and returns what the master shows.
func execOnPty(t *testing.T, bin, state string, master, slave *os.File, script string) (*exec.Cmd, *ptyReader) {
	t.Helper()
	cmd := exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // exec holds the only slave descriptors now: EIO when it ends
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	t.Cleanup(func() { timer.Stop() })
	return cmd, readPty(master)
}

// TestExecTerminal is the stdio-chown attack from a terminal: handed the
// operator's own pty, the subject's init would chown it to the subject's
// uid (writable by every later process of that uid), and the subject's
// `stty` changes would outlive exec. exec gives the subject a pty of the
// sandbox's own devpts instead: the caller's terminal keeps owner, mode
// and termios exactly; it is raw while the subject runs; its size is
// passed in at the start and on SIGWINCH; input and output are relayed.
func TestExecTerminal(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	master, slave := openPty(t)
	mfd := int(master.Fd())
	if err := unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100}); err != nil {
		t.Fatal(err)
	}
	var before unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &before); err != nil {
		t.Fatal(err)
	}
	modesBefore, err := unix.IoctlGetTermios(mfd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	script := `tty; test -t 0 && test -t 1 && test -t 2 && echo all-terminals
echo "uid $(id -u)"; stat -c "owner %u %U" "$(tty)"
echo "size $(stty size)"
echo ready; read line; echo "got $line"
while [ "$(stty size)" != "40 120" ]; do sleep 0.01; done; echo resized
stty -echo -icanon; echo done`
	cmd, out := execOnPty(t, bin, state, master, slave, script)

	if !out.waitFor("ready") {
		t.Fatalf("the subject never said ready; the terminal showed %q", out)
	}
	// While the subject runs, the caller's terminal is raw: keys go to
	// the subject's own pty, whose modes are the subject's business.
	if m, err := unix.IoctlGetTermios(mfd, unix.TCGETS); err != nil {
		t.Fatal(err)
	} else if m.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 || m.Oflag&unix.OPOST != 0 {
		t.Errorf("caller's terminal while the subject runs: lflag %#x oflag %#x, want raw", m.Lflag, m.Oflag)
	}
	if err := unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatal(err)
	}
	if _, err := master.Write([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	status := exitStatus(t, cmd, cmd.Wait())
	out.waitFor("\x00never") // to EIO: everything exec relayed
	shown := out.String()
	if status != 0 {
		t.Errorf("exec status %d, want 0; the terminal showed %q", status, shown)
	}
	// The pty is the subject's: its own uid, a fresh one per sandbox
	// (never 65534, which host daemons share), named sandbox inside.
	uid := ""
	if m := regexp.MustCompile(`(?m)^uid ([0-9]+)\r?$`).FindStringSubmatch(shown); m != nil {
		uid = m[1]
	}
	if uid == "" || uid == "0" || uid == "65534" {
		t.Errorf("subject uid %q, want its own unprivileged uid; the terminal showed %q", uid, shown)
	}
	for _, want := range []string{"all-terminals", "owner " + uid + " sandbox", "size 30 100", "got hello", "resized", "done"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the terminal showed %q, want it to contain %q", shown, want)
		}
	}
	if !regexp.MustCompile(`(?m)^/dev/pts/[0-9]+\r?$`).MatchString(shown) {
		t.Errorf("tty inside printed no /dev/pts/N line: %q", shown)
	}

	var after unix.Stat_t
	if err := unix.Stat(slave.Name(), &after); err != nil {
		t.Fatal(err)
	}
	if after.Uid != before.Uid || after.Gid != before.Gid || after.Mode != before.Mode {
		t.Errorf("caller's pty after exec: uid %d gid %d mode %#o, want %d %d %#o",
			after.Uid, after.Gid, after.Mode, before.Uid, before.Gid, before.Mode)
	}
	modesAfter, err := unix.IoctlGetTermios(mfd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *modesAfter != *modesBefore {
		t.Errorf("caller's terminal modes after exec:\n %+v\nwant\n %+v", *modesAfter, *modesBefore)
	}
}

// TestExecOutputHeldOutside: a process outside the sandbox (here root,
// reopening the subject's stdout through /proc/<pid>/fd/1) holds a copy
// of the subject's stdout and keeps it. exec still returns once the
// sandbox is gone, with everything the subject wrote: it relays what the
// pipe holds at that point and stops, instead of waiting for an EOF that
// an outside holder can withhold.
func TestExecOutputHeldOutside(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	root := publicTempDir(t, 0o777)
	marker := fmt.Sprintf("held-outside-%d", time.Now().UnixNano())
	// The outside holder: keeps what it opened until released.
	var mu sync.Mutex
	var held *os.File
	released := false
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		if held != nil {
			held.Close()
		}
		released = true
	}
	got := make(chan error, 1)
	go func() {
		got <- func() error {
			deadline := time.Now().Add(20 * time.Second)
			for !fileExists(filepath.Join(root, "ready")) {
				if time.Now().After(deadline) {
					return errors.New("the subject never got ready")
				}
				time.Sleep(5 * time.Millisecond)
			}
			pid, err := pidWithArg(marker)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", pid), os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			mu.Lock()
			held = f
			late := released
			mu.Unlock()
			if late {
				release()
			}
			return os.WriteFile(filepath.Join(root, "go"), nil, 0o644)
		}()
	}()
	script := `echo sent; touch ready; while [ ! -e go ]; do sleep 0.01; done; printf 'tail %.0s' $(seq 20000); echo`
	cmd := exec.Command(bin, "exec", "--state-dir", state, "--root", root, "--", "/bin/sh", "-c", script, marker)
	// A hang is the failure: after a minute the holder lets go, so that
	// exec can still end and clean up, and the test says what happened.
	var hung atomic.Bool
	timer := time.AfterFunc(60*time.Second, func() { hung.Store(true); release() })
	out, errOut, status := run(t, cmd)
	timer.Stop()
	release()
	if err := <-got; err != nil {
		t.Fatalf("the outside process holds no copy of the subject's stdout: %v (stderr %q)", err, errOut)
	}
	if hung.Load() {
		t.Error("exec waited for the outside holder of the subject's stdout")
	}
	if status != 0 || !strings.HasPrefix(out, "sent\n") || len(out) != len("sent\n")+len("tail ")*20000+1 {
		t.Errorf("status %d, stdout %d bytes (%.20q...), stderr %q; want 0 and all of it", status, len(out), out, errOut)
	}
}

// pidWithArg is the host pid of the /bin/sh with arg in its argv.
func pidWithArg(arg string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		// The subject itself, not exec or the reaper, whose argv carry
		// the subject's.
		argv := strings.Split(string(b), "\x00")
		if argv[0] == "/bin/sh" && slices.Contains(argv, arg) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process with argument %q", arg)
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestExecTerminalKeys: with the caller's terminal raw, its control keys
// reach the subject's own terminal, whose line discipline acts on them
// for the subject's foreground group: ^C interrupts, ^D ends input. On
// every way out, a killed sandbox included, the caller's modes come back.
func TestExecTerminalKeys(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	cases := []struct {
		name       string
		script     string
		keys       string
		sigterms   int // sent to exec instead of keys
		want       string
		wantStatus int
	}{
		{name: "^C interrupts the subject", script: `trap 'echo caught-int; exit 9' INT; echo ready; while :; do sleep 0.05; done`, keys: "\x03", want: "caught-int", wantStatus: 9},
		{name: "^D ends its input", script: `echo ready; cat; echo "cat ended"`, keys: "typed\r\x04", want: "cat ended"},
		{name: "second SIGTERM kills the sandbox", script: `trap 'echo got-term' TERM; stty raw -echo; echo ready; while :; do sleep 0.05; done`, sigterms: 2, want: "got-term", wantStatus: 128 + 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			master, slave := openPty(t)
			modes, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			cmd, out := execOnPty(t, bin, state, master, slave, tc.script)
			if !out.waitFor("ready") {
				t.Fatalf("the subject never said ready; the terminal showed %q", out)
			}
			if _, err := master.Write([]byte(tc.keys)); err != nil {
				t.Fatal(err)
			}
			for i := range tc.sigterms {
				// One at a time: two pending SIGTERMs would merge into one.
				if i > 0 && !out.waitFor("got-term") {
					t.Fatalf("the subject never got SIGTERM %d; the terminal showed %q", i, out)
				}
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			status := exitStatus(t, cmd, cmd.Wait())
			out.waitFor("\x00never")
			if status != tc.wantStatus || !strings.Contains(out.String(), tc.want) {
				t.Errorf("status %d, the terminal showed %q; want %d and %q", status, out, tc.wantStatus, tc.want)
			}
			if after, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS); err != nil {
				t.Fatal(err)
			} else if *after != *modes {
				t.Errorf("caller's terminal modes after exec:\n %+v\nwant\n %+v", *after, *modes)
			}
		})
	}
}
