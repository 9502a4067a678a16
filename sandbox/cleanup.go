package sandbox

import "errors"

// cleanup is a stack of undo functions, run in reverse order unless
// released (the gVisor pkg/cleanup pattern): each resource registers its
// undo the moment it is acquired, so a half-built sandbox never leaks.
type cleanup struct {
	fns []func() error
}

func (c *cleanup) add(f func() error) { c.fns = append(c.fns, f) }

// run executes every undo, newest first, and joins their errors.
func (c *cleanup) run() error {
	var errs []error
	for i := len(c.fns) - 1; i >= 0; i-- {
		if err := c.fns[i](); err != nil {
			errs = append(errs, err)
		}
	}
	c.fns = nil
	return errors.Join(errs...)
}

// release hands the registered undos to the caller and empties the stack.
func (c *cleanup) release() []func() error {
	fns := c.fns
	c.fns = nil
	return fns
}
