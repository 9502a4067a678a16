package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// TestConcurrentSandboxes starts many short sandboxes at once in one state
// directory, as a CI runner does: scratch roots (each claims a uid of its
// own) and a shared mapped root, both isolation levels, while
// another goroutine sweeps the state directory in a loop, as every exec
// and run does at start. No start may fail, each subject's end must be its
// own, the sweep must never take a live sandbox, and nothing may be left:
// no state entry, claim, cgroup, mount or scratch directory.
func TestConcurrentSandboxes(t *testing.T) {
	f := newFixture(t) // CheckNoLeaks: state entries, their cgroups, mounts
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // scratch roots go here: what is left is ours
	// Isolation none's subject enters its root by the host path, as its
	// own uid: the test's directory (parent of both) must be traversable.
	if err := os.Chmod(filepath.Dir(f.root), 0o711); err != nil {
		t.Fatal(err)
	}
	const n = 24
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		ids   []string
		fails []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fails = append(fails, fmt.Sprintf(format, args...))
	}
	stop := make(chan struct{})
	var sweeper sync.WaitGroup
	sweeper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			rep, err := Sweep(f.stateDir)
			if err != nil {
				fail("sweep: %v", err)
			}
			if len(rep.Removed) > 0 {
				fail("sweep removed live sandboxes %v", rep.Removed)
			}
			time.Sleep(time.Millisecond)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for i := range n {
		wg.Go(func() {
			iso := bothIsolations[i%len(bothIsolations)]
			code := 10 + i
			spec := f.isoSpec(iso, "/bin/sh", "-c", fmt.Sprintf("exit %d", code))
			if i%3 != 0 {
				spec.Root, spec.ScratchRoot = "", true
			}
			sb, err := Start(context.Background(), spec)
			if err != nil {
				if id := FailedID(err); id != "" {
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
				fail("start %d (%s): %v", i, iso, err)
				return
			}
			mu.Lock()
			ids = append(ids, sb.ID())
			mu.Unlock()
			timer := time.AfterFunc(time.Until(deadline), func() { _ = sb.Kill() })
			ex, err := sb.Wait()
			timer.Stop()
			if err != nil || ex.Code != code || ex.Signal != "" {
				fail("sandbox %d (%s): exit %+v %v, want code %d", i, iso, ex, err, code)
			}
			if err := sb.Destroy(); err != nil {
				fail("destroy %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeper.Wait()
	for _, msg := range fails {
		t.Error(msg)
	}
	if len(ids) != n {
		t.Errorf("%d sandboxes made, want %d", len(ids), n)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("sandbox id %s given twice", id)
		}
		seen[id] = true
		for _, cg := range sandboxtest.CgroupsOf(id) {
			t.Errorf("leak: cgroup %s", cg)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, scratchPrefix+"*")); len(left) > 0 {
		t.Errorf("leak: scratch directories %v", left)
	}
	if _, err := os.Lstat(filepath.Join(f.stateDir, uidsDir)); !os.IsNotExist(err) {
		t.Errorf("leak: the claims directory is still there (%v)", err)
	}
}
