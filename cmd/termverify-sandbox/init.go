package main

import (
	"io"
	"runtime"

	"github.com/sirupsen/logrus"
)

// libcontainer's container-setup process (argv[1] == "init") never gets
// here: package sandbox's own init hands it to libcontainer before this
// package initializes (sandbox/reaper.go). Our PID-1 reaper never gets
// here either: it is C that runs from an ELF constructor before the Go
// runtime (internal/reaper).
//
// init mutes libcontainer's package-global logrus logger, which
// would print warnings (e.g. about rootless cgroups) on our stderr:
// commands print nothing they were not asked for, and every condition
// that matters reaches them as an error or in sandbox.Applied.
func init() {
	logrus.SetOutput(io.Discard)
	// Keep the main thread for the main goroutine. libcontainer's
	// mount-source helper locks a thread, setns(2)s it into the container's
	// mount namespace and never unlocks it, relying on the runtime to kill
	// the thread; the main thread is never killed, only parked, so there it
	// would pin a dead sandbox's mount namespace (and every host mount
	// bound into it) for the rest of our life.
	runtime.LockOSThread()
}
