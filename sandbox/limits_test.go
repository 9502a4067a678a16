package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// TestFileSizeLimit: a memory limit does not bound what a subject writes
// to disk (under 32 MiB of memory it can write 1 GiB into /sandbox), so
// RLIMIT_FSIZE caps each file it writes (the writer dies of SIGXFSZ at
// the cap), in both isolation levels. The cap is small: nothing here
// fills a disk.
func TestFileSizeLimit(t *testing.T) {
	const limit = 1 << 20
	for _, iso := range []Isolation{IsolationOS, IsolationNone} {
		t.Run(string(iso), func(t *testing.T) {
			f := newFixture(t)
			if iso == IsolationNone {
				f = directFixture(t)
			}
			spec := f.spec("/bin/sh", "-c", "head -c 3145728 /dev/zero > big; echo status=$?; stat -c size=%s big")
			spec.Isolation = iso
			spec.Limits.FileBytes = limit
			ex, out, stderr, _ := runBox(t, spec, 20*time.Second)
			if ex.ShellStatus() != 0 {
				t.Fatalf("exit %+v stderr %q", ex, stderr)
			}
			// 153 = 128 + SIGXFSZ: head was stopped at the cap.
			if want := fmt.Sprintf("status=153\nsize=%d", limit); out != want {
				t.Errorf("got %q, want %q", out, want)
			}
		})
	}
}

// TestTmpSize: the sandbox's private /tmp is bounded in total, whatever
// the memory limit (a rootless sandbox has none).
func TestTmpSize(t *testing.T) {
	f := newFixture(t)
	spec := f.spec("/bin/sh", "-c", "head -c 3145728 /dev/zero > /tmp/a 2>/dev/null; echo status=$?; stat -c size=%s /tmp/a")
	spec.Limits.TmpBytes = 1 << 20
	ex, out, stderr, _ := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q", ex, stderr)
	}
	if want := fmt.Sprintf("status=1\nsize=%d", 1<<20); out != want {
		t.Errorf("got %q, want %q (ENOSPC at the tmpfs size)", out, want)
	}
}

// limitsChildEnv makes TestLimitsEnforce's re-executed test binary the
// rootless side: its value is "enforce" or "best-effort" and a result
// file, comma-separated.
const limitsChildEnv = "TVS_TEST_LIMITS_CHILD"

// TestLimitsEnforce is item 10: rootless on cgroup v1 no limit can be
// applied; --memory used to be ignored in silence (300 MiB allocated
// under 64M, exit 0). The start must now say so in Applied and, with
// Limits.Enforce, refuse before the subject runs. The test binary runs
// itself as uid 65534 for the rootless side.
func TestLimitsEnforce(t *testing.T) {
	if v := os.Getenv(limitsChildEnv); v != "" {
		limitsChild(t, v)
		return
	}
	sandboxtest.RequireRoot(t)
	dir := t.TempDir()
	// uid 65534 must reach the copy of the test binary (t.TempDir's
	// parent is 0700).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"enforce", "best-effort"} {
		t.Run(mode, func(t *testing.T) {
			work := filepath.Join(dir, mode)
			if err := os.Mkdir(work, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(work, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			result := filepath.Join(work, "result")
			cmd := exec.Command(exe, "-test.run=^TestLimitsEnforce$", "-test.count=1")
			cmd.Env = []string{limitsChildEnv + "=" + mode + "," + result, "PATH=/usr/bin:/bin", "TMPDIR=" + work, "HOME=" + work}
			cmd.Dir = work
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			got, rerr := os.ReadFile(result)
			if rerr != nil {
				t.Fatalf("child wrote no result (%v, %v):\n%s", rerr, err, out)
			}
			res := string(got)
			if strings.HasPrefix(res, "skip: ") {
				t.Skip(strings.TrimPrefix(res, "skip: "))
			}
			switch mode {
			case "enforce":
				if !strings.HasPrefix(res, "refused: ") || !strings.Contains(res, "cgroup-memory") {
					t.Errorf("enforce: %s, want a refusal naming cgroup-memory", res)
				}
			case "best-effort":
				if res != "ran: cgroup-memory not applied (rootless-not-delegated)" {
					t.Errorf("best-effort: %s", res)
				}
			}
		})
	}
}

// limitsChild is the rootless side of TestLimitsEnforce.
func limitsChild(t *testing.T, v string) {
	mode, resultFile, _ := strings.Cut(v, ",")
	result := func(s string) {
		if err := os.WriteFile(resultFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if cgroupsDelegated() {
		result("skip: cgroups are delegated to this user here: limits apply rootless")
		return
	}
	if err := NamespaceTrial(); err != nil {
		result("skip: no user namespace for uid 65534: " + err.Error())
		return
	}
	spec := Spec{
		Args:        []string{"/bin/true"},
		ScratchRoot: true,
		StateDir:    filepath.Join(filepath.Dir(resultFile), "state"),
		Limits:      Limits{MemoryBytes: 64 << 20, Enforce: mode == "enforce"},
	}
	sb, err := Start(context.Background(), spec)
	switch {
	case errors.Is(err, ErrLimitNotEnforced):
		result("refused: " + err.Error())
	case err != nil:
		result("error: " + err.Error())
	default:
		defer sb.Destroy()
		m, _ := sb.Applied().Mechanism("cgroup-memory")
		if _, err := sb.Wait(); err != nil {
			result("wait: " + err.Error())
			return
		}
		result(fmt.Sprintf("ran: cgroup-memory %s (%s)", map[bool]string{true: "applied", false: "not applied"}[m.Applied], m.Reason))
	}
}
