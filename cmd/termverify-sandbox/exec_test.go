package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
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
	marker := "765.4321"
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
	// The dead supervisor's sandbox: its state entry names it.
	ents, err := os.ReadDir(state)
	if err != nil || len(ents) != 1 {
		t.Fatalf("state entries after the crash: %v %v", ents, err)
	}
	sandboxtest.CheckNoCgroups(t, ents[0].Name())
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
	// So is its scratch root, in the temporary directory.
	scratch := filepath.Join(os.TempDir(), "termverify-scratch-"+ents[0].Name())
	if _, err := os.Stat(scratch); err != nil {
		t.Errorf("the crashed exec's scratch root: %v", err)
	}
	// ...until the next start sweeps them (CheckNoLeaks verifies).
	if _, errOut, status := run(t, exec.Command(bin, "exec", "--state-dir", state, "--", "/bin/true")); status != 0 {
		t.Fatalf("exec after crash: %d %s", status, errOut)
	}
	if _, err := os.Stat(scratch); !os.IsNotExist(err) {
		t.Errorf("scratch root %s survives the sweep: %v", scratch, err)
	}
}

// TestRootless runs exec and probe as an unprivileged user: a user
// namespace replaces root, cgroup limits and the allow-list are reported
// unavailable, and everything else still holds.
func TestRootless(t *testing.T) {
	sandboxtest.RequireRoot(t) // to become uid 65534
	bin := buildBinary(t)
	state := publicTempDir(t, 0o777)
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
	var res sandbox.ProbeResult
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
	tiers := map[receipts.Constraint]sandbox.ConstraintProbe{}
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
