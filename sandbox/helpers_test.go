package sandbox

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// fixture is one test's sandbox environment: a state dir checked for
// leaks, a mapped root writable by the sandbox uid, and the escape helper
// in it.
type fixture struct {
	stateDir string
	root     string
}

var (
	escapeOnce sync.Once
	escapeDir  string
	escapeErr  string
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	sandboxtest.RequireRoot(t)
	f := &fixture{stateDir: t.TempDir(), root: t.TempDir()}
	if err := os.Chmod(f.root, 0o777); err != nil {
		t.Fatal(err)
	}
	sandboxtest.CheckNoLeaks(t, f.stateDir, "")
	return f
}

// removeEscape deletes the escape helper's build directory; TestMain calls
// it after the tests, since the build is shared by every test of the binary
// and no single test's cleanup may remove it.
func removeEscape() {
	if escapeDir != "" {
		_ = os.RemoveAll(escapeDir)
	}
}

// withEscape copies the escape helper (built once per test binary, removed
// by TestMain) into the mapped root.
func (f *fixture) withEscape(t *testing.T) {
	t.Helper()
	escapeOnce.Do(func() {
		d, err := os.MkdirTemp("", "escape-build-")
		if err != nil {
			escapeErr = err.Error()
			return
		}
		// Recorded before the build, so that removeEscape deletes it even
		// when the build fails (BuildEscape then ends this test).
		escapeDir, escapeErr = d, "the build failed in an earlier test"
		sandboxtest.BuildEscape(t, d)
		escapeErr = ""
	})
	if escapeErr != "" {
		t.Fatalf("escape helper: %s", escapeErr)
	}
	b, err := os.ReadFile(filepath.Join(escapeDir, "escape"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.root, "escape"), b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) spec(args ...string) Spec {
	return Spec{Args: args, Root: f.root, StateDir: f.stateDir, Limits: Limits{MemoryBytes: 256 << 20, Pids: 128}}
}

// runBox starts spec with stdout and stderr captured, waits (killing it
// after timeout) and destroys it.
func runBox(t *testing.T, spec Spec, timeout time.Duration) (Exit, string, string, *Sandbox) {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	spec.Stdout, spec.Stderr = outW, errW
	sb, err := Start(context.Background(), spec)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		// Start released what it made: nothing of it may be left.
		if id := FailedID(err); id != "" {
			sandboxtest.CheckNoCgroups(t, id)
		}
		t.Fatalf("start %v: %v", spec.Args, err)
	}
	sandboxtest.CheckNoCgroups(t, sb.ID()) // runs after the Destroy below
	t.Cleanup(func() {
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	var wg sync.WaitGroup
	var stdout, stderr []byte
	wg.Go(func() { stdout, _ = io.ReadAll(outR); outR.Close() })
	wg.Go(func() { stderr, _ = io.ReadAll(errR); errR.Close() })
	timer := time.AfterFunc(timeout, func() { _ = sb.Kill() })
	ex, err := sb.Wait()
	timer.Stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return ex, strings.TrimSpace(string(stdout)), strings.TrimSpace(string(stderr)), sb
}
