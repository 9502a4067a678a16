package conformance

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// outsideWaitDelay is how long an outside command's output pipes may stay
// open after it exited or was killed (a child of its holding them).
const outsideWaitDelay = time.Second

// outsideCommand is an outside implementation's command (a validator, an
// adapter, a daemon's start), bounded by ctx as a whole: it leads a
// process group of its own, which ctx's end kills entire, and a
// descendant that keeps its stdout or stderr open cannot hold the case
// past outsideWaitDelay (exec.CommandContext alone kills only the
// command, and its Wait then waits for every holder of the pipes).
func outsideCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = outsideWaitDelay
	return cmd
}
