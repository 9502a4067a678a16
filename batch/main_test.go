package batch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// env is the example subject built once into a root every user can read.
var env struct {
	root     string
	buildErr error
}

// TestMain makes the test binary a sandbox binary too (libcontainer
// re-executes it with argv[1] == "init"), as supervisor's tests do.
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == sandbox.InitArg {
		sandbox.LibcontainerInit()
	}
	// libcontainer leaves a locked thread in each container's mount
	// namespace; keep the main goroutine's thread out of that.
	runtime.LockOSThread()
	dir, err := os.MkdirTemp("", "batch-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Isolation none would run the subject as 65534: the root must be
	// reachable and readable by every user.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	env.root = filepath.Join(dir, "root")
	env.buildErr = buildSubject(env.root)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildSubject(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(root, "echo-subject"), "../examples/echo-subject")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build echo-subject: %v\n%s", err, out)
	}
	return nil
}

// needSandbox skips a test that needs root and the example subject.
func needSandbox(t *testing.T) {
	t.Helper()
	sandboxtest.RequireRoot(t)
	if env.buildErr != nil {
		t.Fatal(env.buildErr)
	}
}
