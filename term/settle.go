package term

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/termverify/termverify-sandbox/quiesce"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// Back-off of a settled wait between evaluations that found the program
// busy with no event to wait for (a task running): quiesce is evaluated on
// events, and a running task makes none, so it is looked at again after
// a pause that grows to settleBackoff.
const (
	settleFirst   = time.Millisecond
	settleBackoff = 50 * time.Millisecond
)

// ErrNoJudge: a settled wait on a daemon whose terminal quiesce cannot
// judge (the program never started, or the slave could not be opened).
var ErrNoJudge = errors.New("settled waits are unavailable for this program")

// judge is quiesce's view of the program's terminal: the slave kept open
// for it (TIOCGPTPEER), and one Judge, which is not safe for concurrent
// use, behind mu.
type judge struct {
	mu    sync.Mutex
	slave *os.File // nil once closed
	j     *quiesce.Judge
}

// newJudge opens the slave of the sandbox's terminal and a Judge of it,
// with the sandbox's processes as the tasks (its cgroup's listing, else
// its PID namespace's).
func newJudge(box *sandbox.Sandbox, master *os.File) (*judge, error) {
	slave, err := box.ConsolePeer()
	if err != nil {
		return nil, err
	}
	j, err := quiesce.New(master, slave, sandboxTasks(box))
	if err != nil {
		slave.Close()
		return nil, fmt.Errorf("judge the terminal: %w", err)
	}
	return &judge{slave: slave, j: j}, nil
}

// sandboxTasks is the task list quiesce judges: the sandbox's cgroup
// listing, else its PID namespace's; isolation none (a downgraded start)
// has no PID namespace, and without a cgroup (not root) its processes are
// the reaper's tree, which as their subreaper adopts every orphan.
func sandboxTasks(box *sandbox.Sandbox) func() ([]int, error) {
	ev := box.Evidence()
	if ns, ok := ev.Namespaces["pid"]; !ok || ns == 0 {
		if _, listed, _ := box.Processes(); !listed {
			init := ev.InitPID
			return func() ([]int, error) { return quiesce.ProcessTree(init) }
		}
	}
	return quiesce.SandboxTasks(box.Processes, ev.Namespaces["pid"])
}

// close closes the slave, which the master's EIO at the program's end
// waits for. No-op on nil.
func (jd *judge) close() {
	if jd == nil {
		return
	}
	jd.mu.Lock()
	defer jd.mu.Unlock()
	if jd.slave != nil {
		jd.slave.Close()
		jd.slave = nil
	}
}

// evaluate runs one evaluation; ok is false once the terminal is closed.
func (jd *judge) evaluate() (v quiesce.Verdict, ok bool, err error) {
	jd.mu.Lock()
	defer jd.mu.Unlock()
	if jd.slave == nil {
		return v, false, nil
	}
	v, err = jd.j.Evaluate()
	return v, true, err
}

// Settle blocks until the program waits for input again by quiesce's
// rule (docs/PTY.md), or has ended, or ctx ends. It evaluates on events
// (output) and after the verdict's RetryAfter, backing off while a task
// runs.
func (d *Daemon) Settle(ctx context.Context) (Status, error) {
	if d.judge == nil && !d.Exited() {
		return Status{}, ErrNoJudge
	}
	pause := settleFirst
	for {
		if d.Exited() {
			return d.Status(false), nil
		}
		d.mu.Lock()
		output := d.output
		d.mu.Unlock()
		v, ok, err := d.judge.evaluate()
		switch {
		case err != nil && d.Exited():
			// The tasks went away under the evaluation: the end, not a fault.
			return d.Status(false), nil
		case err != nil:
			return Status{}, fmt.Errorf("settled wait: %w", err)
		case !ok:
			<-d.exited // the terminal closed: the program has ended
			continue
		case v.Quiet && d.drained():
			return d.Status(false), nil
		}
		wait := pause
		if v.Quiet {
			// Quiet, but the screen is not up to date yet (a read in
			// flight, output since) or a reply waits to be taken: look
			// again at the next output, or soon.
			wait = settleFirst
		} else if v.RetryAfter > 0 {
			wait = v.RetryAfter
		}
		pause = min(pause*2, settleBackoff)
		t := time.NewTimer(wait)
		select {
		case <-output:
			pause = settleFirst
		case <-t.C:
		case <-d.exited:
		case <-ctx.Done():
			t.Stop()
			return Status{}, context.Cause(ctx)
		}
		t.Stop()
	}
}

// drained reports whether a quiet verdict may stand: the screen has all
// the program wrote and no reply to a query waits to be taken (caughtUp,
// under readMu). The Judge sees only the kernel: it finds the master
// drained once the reader has read it, before the emulator has what was
// read, and a settled wait's screen came from there.
func (d *Daemon) drained() bool {
	d.readMu.Lock()
	defer d.readMu.Unlock()
	return d.caughtUp()
}

// caughtUp reports, with readMu held (so that no read of the master is
// in flight), whether nothing waits unread on the master and no reply is
// owed to the program: the emulator is up to date with the terminal.
func (d *Daemon) caughtUp() bool {
	return !d.masterReadable() && !d.repliesOwed()
}

// WaitText blocks until the screen shows text (on 1-based screen line
// line, when not 0), or the program has ended, or ctx ends. found says
// which; at is the line it was found on.
func (d *Daemon) WaitText(ctx context.Context, text string, line int) (found bool, at int, err error) {
	for {
		d.mu.Lock()
		output := d.output
		at = d.find(text, line)
		d.mu.Unlock()
		if at > 0 {
			return true, at, nil
		}
		select {
		case <-output:
		case <-d.exited:
			d.mu.Lock()
			at = d.find(text, line)
			d.mu.Unlock()
			return at > 0, at, nil
		case <-ctx.Done():
			return false, 0, context.Cause(ctx)
		}
	}
}

// find is the first screen line (1-based) showing text, 0 for none; d.mu
// is held.
func (d *Daemon) find(text string, line int) int {
	for i, l := range d.emu.Lines() {
		if (line == 0 || line == i+1) && strings.Contains(l, text) {
			return i + 1
		}
	}
	return 0
}
