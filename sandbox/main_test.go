package sandbox

import (
	"os"
	"runtime"
	"testing"
)

// TestMain makes the test binary a sandbox binary too, as runc's
// integration/init_test.go does: libcontainer re-executes it with
// argv[1] == "init". (The sandbox's PID 1 is it too, in reaper mode, but
// that is C run before the Go runtime: nothing to dispatch here.)
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == InitArg {
		LibcontainerInit()
	}
	// Keep the main thread for the main goroutine: libcontainer leaves a
	// locked thread in each container's mount namespace for good, and on
	// the main thread that would pin the namespace.
	runtime.LockOSThread()
	code := m.Run()
	removeEscape()
	os.Exit(code)
}
