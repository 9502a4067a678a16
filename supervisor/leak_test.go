package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/receipts"
)

// TestResultSandboxes: Result.Sandboxes names the sandbox that ran, as
// the evidence does, so the leak check looks for the right cgroups; and a
// finished run leaves none of them.
func TestResultSandboxes(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	for _, iso := range []receipts.Isolation{receipts.IsolationOS, receipts.IsolationNone} {
		t.Run(string(iso), func(t *testing.T) {
			req := exampleRequest(t)
			req.Isolation = iso
			req.EvidencePath = filepath.Join(t.TempDir(), "evidence.json")
			o := runCase(t, req)
			data, err := os.ReadFile(req.EvidencePath)
			if err != nil {
				t.Fatal(err)
			}
			var ev Evidence
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Sandbox == nil || !slices.Equal(o.res.Sandboxes, []string{ev.Sandbox.ID}) {
				t.Fatalf("Result.Sandboxes %q, want the evidence's sandbox id (%s)", o.res.Sandboxes, data)
			}
			if left := cgroupsOf(o.res.Sandboxes); len(left) > 0 {
				t.Errorf("cgroups left after the run: %q", left)
			}
		})
	}
}

// TestLeakCheckFails proves that the leak check TestMain runs can fail: it
// leaves, on purpose, what a sandbox that was not torn down leaves — a
// state entry with its cgroup, and a cgroup whose state entry is gone —
// checks that leaks reports each, then removes them and checks that
// leaks reports nothing.
func TestLeakCheckFails(t *testing.T) {
	sandboxtest.RequireRoot(t)
	parent, err := cgroupParentDir()
	if err != nil {
		t.Skipf("needs a cgroup hierarchy to leave a cgroup in: %v", err)
	}
	stateDir := t.TempDir()
	withState, stateless := fakeID(t), fakeID(t)
	if err := os.Mkdir(filepath.Join(stateDir, withState), 0o700); err != nil {
		t.Fatal(err)
	}
	var cgroups []string
	for _, id := range []string{withState, stateless} {
		cg := filepath.Join(parent, id)
		if err := os.Mkdir(cg, 0o755); err != nil {
			t.Fatalf("leave a cgroup: %v", err)
		}
		cgroups = append(cgroups, cg)
		t.Cleanup(func() { _ = unix.Rmdir(cg) })
	}

	// The fake ids are not in env.sandboxes: TestMain's own check never
	// sees them, whatever this test does.
	got := leaks(stateDir, "", []string{withState, stateless})
	for _, want := range []string{
		"state entry " + filepath.Join(stateDir, withState),
		"cgroup " + cgroups[0],
		"cgroup " + cgroups[1],
	} {
		if !slices.Contains(got, want) {
			t.Errorf("leaks does not report %q; it reports %q", want, got)
		}
	}
	if n := len(got); n != 3 {
		t.Errorf("leaks reports %d leftovers, want 3 (each once): %q", n, got)
	}

	for _, cg := range cgroups {
		if err := unix.Rmdir(cg); err != nil {
			t.Fatalf("remove %s: %v", cg, err)
		}
	}
	if err := os.Remove(filepath.Join(stateDir, withState)); err != nil {
		t.Fatal(err)
	}
	if got := leaks(stateDir, "", []string{withState, stateless}); len(got) > 0 {
		t.Errorf("leaks after the cleanup: %q, want none", got)
	}
}

// cgroupParentDir is the sandboxes' parent cgroup in a hierarchy this
// process can write, made if missing: the sandbox package keeps it for
// good (sandbox/config.go), so it is not removed.
func cgroupParentDir() (string, error) {
	var errs []error
	for _, root := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if err := unix.Statfs(root, &st); err != nil {
			errs = append(errs, &os.PathError{Op: "statfs", Path: root, Err: err})
			continue
		}
		if st.Type != unix.CGROUP_SUPER_MAGIC && st.Type != unix.CGROUP2_SUPER_MAGIC {
			errs = append(errs, &os.PathError{Op: "statfs", Path: root, Err: errors.New("not a cgroup file system")})
			continue
		}
		dir := filepath.Join(root, cgroupParent)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		return dir, nil
	}
	return "", errors.Join(errs...)
}

// fakeID is a sandbox id of the sandbox package's form that no sandbox
// will ever have.
func fakeID(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "tvs-leakcheck-" + hex.EncodeToString(b[:])
}

// TestRunWaitsForRemoval: the sandbox's removal (Destroy) runs beside the
// ending's record and, without an evidence file, beside the transcript's
// commit; Run must still return only once it is over. A removal held up
// by the beforeDestroy seam must have left neither cgroup nor state entry
// by the time Run returns, with an evidence file or without, and the
// transcript and the evidence are in place.
func TestRunWaitsForRemoval(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	for _, evidence := range []bool{false, true} {
		t.Run(map[bool]string{false: "transcript only", true: "with evidence"}[evidence], func(t *testing.T) {
			req := exampleRequest(t)
			req.Isolation = receipts.IsolationNone
			if evidence {
				req.EvidencePath = filepath.Join(t.TempDir(), "evidence.json")
			}
			var removed atomic.Bool
			req.hooks.beforeDestroy = func() {
				time.Sleep(200 * time.Millisecond)
				removed.Store(true)
			}
			o := runCase(t, req)
			if !removed.Load() {
				t.Fatal("Run returned before the removal began")
			}
			if len(o.res.Sandboxes) != 1 {
				t.Fatalf("Result.Sandboxes %q, want one", o.res.Sandboxes)
			}
			if left := cgroupsOf(o.res.Sandboxes); len(left) > 0 {
				t.Errorf("cgroups left when Run returned: %q", left)
			}
			if _, err := os.Lstat(filepath.Join(req.StateDir, o.res.Sandboxes[0])); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("state entry of %s when Run returned: %v", o.res.Sandboxes[0], err)
			}
			if evidence {
				if _, err := os.Stat(req.EvidencePath); err != nil {
					t.Errorf("evidence: %v", err)
				}
			}
		})
	}
}
