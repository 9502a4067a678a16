package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// backend is what runs a started sandbox's init: a libcontainer container
// for isolation os (container.go), our reaper on the host for isolation
// none (direct.go). Sandbox's Signal, Kill, Wait and Destroy are written
// once, against it; what differs is only how the init is reached.
type backend interface {
	// signal sends sig to the init, which forwards it to the subject.
	signal(sig unix.Signal) error
	// kill ends the init and every process of the sandbox with it, now.
	// It may be called more than once.
	kill() error
	// wait blocks until the init has been reaped and returns its status.
	// Sandbox.Wait calls it once.
	wait() (*os.ProcessState, error)
}
