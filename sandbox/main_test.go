package sandbox

import (
	"os"
	"runtime"
	"testing"
)

// TestMain makes the test binary a sandbox binary too, as runc's
// integration/init_test.go does: libcontainer re-executes it with
// argv[1] == "init", and the sandbox's PID 1 is it in reaper mode.
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case InitArg:
			LibcontainerInit()
		case ReaperArg:
			ReaperMain()
		}
	}
	// Keep the main thread for the main goroutine: libcontainer leaves a
	// locked thread in each container's mount namespace for good, and on
	// the main thread that would pin the namespace.
	runtime.LockOSThread()
	os.Exit(m.Run())
}
