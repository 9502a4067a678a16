package sandbox

import (
	"os"
	"runtime"
	"testing"
)

// TestMain needs no dispatch of its own: libcontainer re-executes the test
// binary with argv[1] == "init", and the package's init (reaper.go) hands
// that process to libcontainer before any test code exists; every test
// that starts a sandbox depends on it. (The sandbox's PID 1 is the test
// binary too, in reaper mode: C run before the Go runtime.)
func TestMain(m *testing.M) {
	// Keep the main thread for the main goroutine: libcontainer leaves a
	// locked thread in each container's mount namespace for good, and on
	// the main thread that would pin the namespace.
	runtime.LockOSThread()
	code := m.Run()
	removeEscape()
	os.Exit(code)
}
