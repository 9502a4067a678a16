package main

import (
	"io"
	"os"
	"runtime"

	"github.com/sirupsen/logrus"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// init is the binary's only init(): before cobra or main run, it hands the
// process to libcontainer's container setup (argv[1] == "init", after the
// cgo nsenter constructor has already joined the namespaces); that does not
// return. Our PID-1 reaper never gets here: it is C that runs from an ELF
// constructor before the Go runtime (internal/reaper).
//
// Otherwise it mutes libcontainer's package-global logrus logger, which
// would print warnings (e.g. about rootless cgroups) on our stderr:
// commands print nothing they were not asked for, and every condition
// that matters reaches them as an error or in sandbox.Applied.
func init() {
	if len(os.Args) >= 2 && os.Args[1] == sandbox.InitArg {
		sandbox.LibcontainerInit()
	}
	logrus.SetOutput(io.Discard)
	// Keep the main thread for the main goroutine. libcontainer's
	// mount-source helper locks a thread, setns(2)s it into the container's
	// mount namespace and never unlocks it, relying on the runtime to kill
	// the thread; the main thread is never killed, only parked, so there it
	// would pin a dead sandbox's mount namespace (and every host mount
	// bound into it) for the rest of our life.
	runtime.LockOSThread()
}
