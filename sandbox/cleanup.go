package sandbox

import (
	"errors"
	"os"
)

// cleanup is a stack of undo functions, run in reverse order unless
// released (the gVisor pkg/cleanup pattern): each resource registers its
// undo the moment it is acquired, so a half-built sandbox never leaks.
type cleanup struct {
	fns []func() error
}

func (c *cleanup) add(f func() error) { c.fns = append(c.fns, f) }

// run executes every undo, newest first, and joins their errors. A file
// that was closed already (liveness, closed first to end the init) is no
// failure.
func (c *cleanup) run() error {
	var errs []error
	for i := len(c.fns) - 1; i >= 0; i-- {
		if err := c.fns[i](); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	c.fns = nil
	return errors.Join(errs...)
}

// release hands the registered undos over in a new stack and empties
// this one: Start's stack becomes the started sandbox's, which Destroy
// runs.
func (c *cleanup) release() cleanup {
	fns := c.fns
	c.fns = nil
	return cleanup{fns: fns}
}
