package term

import (
	"os"
	"runtime"
	"testing"
)

// TestMain keeps the main thread for the main goroutine, as the sandbox
// package's does: the tests that start a real daemon start a sandbox,
// and libcontainer leaves a locked thread in each container's mount
// namespace. The test binary is the sandbox's init too (sandbox's
// package init hands that process to libcontainer before tests exist).
func TestMain(m *testing.M) {
	runtime.LockOSThread()
	os.Exit(m.Run())
}
