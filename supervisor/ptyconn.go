package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/ptyinput"
	"github.com/termverify/termverify-sandbox/ptyrecord"
	"github.com/termverify/termverify-sandbox/quiesce"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// PTY mode (run --pty, docs/PTY.md). The subject is an unmodified
// terminal program on a pseudoterminal of the sandbox's own devpts. Its
// inputs are typed into the terminal as xterm would send them, and what
// comes back is an observation of the screen it drew, taken when the
// kernel says it waits for input again (ptydrive, quiesce). No control/v1
// byte is exchanged: ptyConn builds the session's records from the
// terminal (said, in the lifecycle place of the message a control subject
// would have sent), so the lifecycle, the deadlines, the recording and
// the OS exit are the session's, as for every conn.

// Diagnostic codes of PTY mode, each recorded in the epoch it concerns.
const (
	DiagOutputInvalid   = ptyrecord.DiagOutputInvalid   // bytes of the output that are not UTF-8, replaced by U+FFFD
	DiagOutputIdle      = ptyrecord.DiagOutputIdle      // output written while no epoch was open, recorded in this one
	DiagSizeChanged     = ptyrecord.DiagSizeChanged     // the program set its terminal's size; frames keep the emulator's
	DiagMouseOff        = "terminal-mouse-not-enabled"  // input.mouse while the program reports no mouse: nothing written
	DiagRepliesDropped  = ptyrecord.DiagRepliesDropped  // query replies the program did not take, dropped
	DiagNotWaiting      = ptyrecord.DiagNotWaiting      // at a deadline: what quiesce last saw
	DiagStopGraceKilled = ptyrecord.DiagStopGraceKilled // the program outlived the hangup's grace period and was killed
)

// Failure words (details.failure) of PTY mode.
const (
	FailureInput    = "input-unencodable" // an input the terminal cannot send: nothing of it was written
	FailureTerminal = "terminal-failed"   // the terminal itself failed (not the program)
)

// maxStopGrace bounds how long a program may take to end after the
// hangup of input.stop before its tree is killed; half the epoch deadline
// when that is shorter, so the kill comes before the deadline would.
const maxStopGrace = 2 * time.Second

// ptyConn is the PTY adapter's conn.
type ptyConn struct {
	proc   ptyProc
	drv    *ptydrive.Driver
	slave  *os.File      // from TIOCGPTPEER: polled and queried by quiesce, never read
	exited chan struct{} // closed once everything in the sandbox has ended

	grace time.Duration

	state ptyState
	epoch ptyEpoch // the current epoch's input, as deliver found it
	queue []said   // made by this epoch, not yet returned by next
	err   error    // returned by next once queue is empty
	stuck bool     // a write did not complete: the program stopped reading

	held     string // the mouse button down, for input.mouse move
	sizeSaid [2]int // the size the program set that a diagnostic already reported
	marker   []byte // the readiness marker (Request.ReadyMarker); nil: quiesce decides

	replies int64 // the driver's dropped replies already reported
}

// ptyState is where the program is in the conn's lifecycle. It starts
// (ptyStarting) until its first quiet point, which next returns as the
// readiness observation; runs (ptyRunning), each quiet point closing an
// epoch, until input.stop hangs its terminal up (ptyStopping: next only
// awaits the end); and ends (ptyEnded: next returns io.EOF), from any
// state, when everything on the terminal has.
type ptyState int

const (
	ptyStarting ptyState = iota
	ptyRunning
	ptyStopping
	ptyEnded
)

// ptyEpoch is what deliver found of the current epoch's input.
type ptyEpoch struct {
	atOnce  bool // the epoch closes without waiting (a resize to the same size)
	idleOut bool // output waited in the terminal when the input was sent
}

// ptyProc is what the PTY conn needs of the running program besides its
// terminal: signals for the hangup, the kill after the grace period, and
// the end of everything on the terminal. *sandbox.Sandbox is one.
type ptyProc interface {
	proc
	Signal(sig unix.Signal) error
}

// newPTYConn drives the terminal of a started sandbox (Spec.Terminal).
// The tasks quiesce judges are the sandbox's: read from its cgroup where
// it has one (one file, whatever the host runs), else found by scanning
// the host's processes for its PID namespace, which exists even where no
// cgroup can be made.
func newPTYConn(box *sandbox.Sandbox, size config.Terminal, epoch time.Duration, marker []byte) (*ptyConn, error) {
	master := box.Console()
	if master == nil {
		return nil, errors.New("the sandbox has no terminal")
	}
	pidNS := box.Evidence().Namespaces["pid"]
	if pidNS == 0 {
		return nil, errors.New("the sandbox's PID namespace is unknown: quiescence cannot be judged")
	}
	slave, err := box.ConsolePeer()
	if err != nil {
		return nil, err
	}
	c, err := newTerminalConn(box, master, slave, quiesce.SandboxTasks(box.Processes, pidNS), size, epoch, marker)
	if err != nil {
		_ = slave.Close()
	}
	return c, err
}

// newTerminalConn drives a program on the terminal of master and slave
// (the conn owns slave from now on; master stays the caller's). size is
// the emulator's: the terminal already has it, set and checked before the
// program was released, and is never set again here, since the program
// may have set its own by now (recorded as DiagSizeChanged).
// A marker (Request.ReadyMarker) closes epochs instead of quiesce.
func newTerminalConn(p ptyProc, master, slave *os.File, tasks func() ([]int, error), size config.Terminal, epoch time.Duration, marker []byte) (*ptyConn, error) {
	drv, err := ptydrive.New(master, slave, ptydrive.Config{
		Cols: int(size.Columns), Rows: int(size.Rows),
		// The frame is the screen: no scrollback is kept (its memory per
		// line is unbounded by the width for combining clusters).
		Scrollback: 0,
		Tasks:      tasks,
		// One string of a record holds at most MaxStringBytes: an epoch
		// whose output is longer cannot be recorded (a budget failure),
		// so no more is kept than shows that.
		OutputBudget:  canon.MaxStringBytes + 1,
		EndOnOverflow: true,
		Marker:        marker,
	})
	if err != nil {
		return nil, err
	}
	c := &ptyConn{proc: p, drv: drv, slave: slave, exited: make(chan struct{}),
		grace: min(maxStopGrace, epoch/2), marker: marker}
	go func() {
		// Wait may be called concurrently with the session's; it returns
		// once everything on the terminal has ended, which the run's
		// teardown guarantees (it kills the tree).
		_, _ = p.Wait()
		close(c.exited)
	}()
	return c, nil
}

// errProgramEnded is the cause of a write's context when the program
// ended before its input was written.
var errProgramEnded = errors.New("the program ended")

// writeContext is the phase's ctx that also ends when the program does: a
// write into a terminal nobody reads any more would otherwise wait for
// the deadline, and the exit would be lost. The handshake writes nothing
// (a terminal program is not told it is tested): it is waiting for the
// program's first quiet point (next).
func (c *ptyConn) writeContext(pctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(pctx)
	go func() {
		select {
		case <-c.exited:
			cancel(errProgramEnded)
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// deliver types in into the terminal. Errors: os.ErrDeadlineExceeded when
// the program stopped reading before the deadline or the run ended; a
// *terminalError for an input the terminal cannot send (nothing written)
// or a failed terminal.
func (c *ptyConn) deliver(pctx context.Context, in input.Input, _ int64) error {
	c.epoch = ptyEpoch{}
	if pending, err := c.drv.Pending(); err != nil {
		return &terminalError{failure: FailureTerminal, err: err}
	} else if pending {
		c.epoch.idleOut = true
	}
	ctx, cancel := c.writeContext(pctx)
	defer cancel(nil)
	var err error
	switch v := in.(type) {
	case input.Text:
		err = c.drv.Text(ctx, v.Text)
	case input.Key:
		err = c.drv.Key(ctx, v.Keys)
	case input.Resize:
		var changed bool
		changed, err = c.drv.Resize(int(v.Columns), int(v.Rows))
		if err != nil {
			return &terminalError{failure: FailureInput, err: err}
		}
		// At once, unless output waits from while no epoch was open:
		// this epoch's observation says it holds that output, so it
		// must read it.
		c.epoch.atOnce = !changed && !c.epoch.idleOut
		if changed {
			// The kernel has our size again: a size the program sets
			// after this is news.
			c.sizeSaid = [2]int{}
		}
	case input.Mouse:
		err = c.mouse(ctx, v)
	case input.ClipboardSet:
		c.drv.SetClipboard([]byte(v.Text))
	case input.ClockAdvanced:
		// A terminal has no clock to advance: nothing is written, and the
		// epoch closes at the next quiet point.
	case input.Stop:
		c.state = ptyStopping
		c.hangup()
	default:
		return &terminalError{failure: FailureInput, err: fmt.Errorf("%T cannot be sent to a terminal", in)}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ptyinput.ErrUnencodable), errors.Is(err, ptyinput.ErrInvalidChord), errors.Is(err, ptyinput.ErrInvalidMouse):
		return &terminalError{failure: FailureInput, err: err}
	case errors.Is(err, ptydrive.ErrStoppedReading) && context.Cause(ctx) == errProgramEnded:
		// Not a program that stopped reading: one that ended. The read
		// that follows records how.
		return unix.EPIPE
	case errors.Is(err, ptydrive.ErrStoppedReading):
		c.stuck = true
		return os.ErrDeadlineExceeded
	}
	return &terminalError{failure: FailureTerminal, err: err}
}

// mouse sends an SGR report, or notes that the program reports no mouse
// (nothing written). A move carries the button a preceding press left
// down, as a terminal knows it.
func (c *ptyConn) mouse(ctx context.Context, m input.Mouse) error {
	ev := ptyinput.MouseEvent{Action: m.Action, Column: m.Column, Row: m.Row, Button: m.Button, Delta: m.Delta}
	if m.Action == input.MouseMove {
		// Only a move carries the held button: ptyinput refuses it on
		// a press, a release or a scroll, which name their own.
		ev.Held = c.held
	}
	err := c.drv.Mouse(ctx, ev)
	switch m.Action {
	case "press":
		c.held = m.Button
	case "release":
		c.held = ""
	}
	if errors.Is(err, ptyinput.ErrMouseNotEnabled) {
		c.queue = append(c.queue, said{kind: control.KindDiagnostic, diag: ptyDiagnostic(DiagMouseOff,
			"the program has not enabled mouse reporting: nothing was written", nil)})
		return nil
	}
	return err
}

// hangup is what closing a terminal does to its session: SIGHUP, then
// SIGCONT for a stopped job. The sandbox's init is the session leader; it
// passes both on to the subject. An error means the program is already
// gone, which the wait that follows finds out.
func (c *ptyConn) hangup() {
	_ = c.proc.Signal(unix.SIGHUP)
	_ = c.proc.Signal(unix.SIGCONT)
}

// next returns, in order: this epoch's diagnostics, then its closing
// observation (at the first input wait: session.ready with it), or io.EOF
// once the program has ended. After input.stop it only waits for the end.
func (c *ptyConn) next(ctx context.Context) (said, int, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, 0, nil
	}
	if c.err != nil {
		err := c.err
		c.err = nil
		return said{}, 0, err
	}
	switch c.state {
	case ptyEnded:
		return said{}, 0, io.EOF
	case ptyStopping:
		if err := c.awaitEnd(ctx); err != nil {
			return said{}, 0, err
		}
		// Ended: its diagnostic (if any), then io.EOF.
		return c.next(ctx)
	}
	if c.epoch.atOnce {
		c.epoch.atOnce = false
		return c.closeEpoch(ctx)
	}
	var st ptydrive.Settled
	var err error
	if c.marker != nil {
		st, err = c.drv.SettleOnMarker(ctx, c.exited)
	} else {
		st, err = c.drv.Settle(ctx, c.exited)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// The deadline (or the run's end): say what quiesce last saw, as
		// the backstop for what it cannot see, then fail.
		c.err = os.ErrDeadlineExceeded
		when := "when the deadline came"
		if _, interrupted := errors.AsType[*Interrupted](context.Cause(ctx)); interrupted {
			when = "when the run was interrupted"
		}
		return said{kind: control.KindDiagnostic, diag: ptyDiagnostic(DiagNotWaiting, "the program was not waiting for input "+when+": "+st.Why, nil)}, 0, nil
	case err != nil:
		return said{}, 0, &terminalError{failure: FailureTerminal, err: err}
	case st.Exited:
		c.state = ptyEnded
		return said{}, 0, io.EOF
	}
	return c.closeEpoch(ctx)
}

// closeEpoch makes the epoch's closing records: its diagnostics, then the
// observation, which next returns first.
func (c *ptyConn) closeEpoch(ctx context.Context) (said, int, error) {
	out := c.drv.TakeOutput()
	if out.Dropped > 0 {
		return said{}, 0, outputBudget(out)
	}
	for _, d := range c.notes(out) {
		c.queue = append(c.queue, said{kind: control.KindDiagnostic, diag: d})
	}
	m := said{kind: control.KindObservation, obs: c.observation(out)}
	if c.state == ptyStarting {
		// The first quiet point: the screen before any input.
		c.state = ptyRunning
		m.kind = control.KindSessionReady
	}
	c.queue = append(c.queue, m)
	return c.next(ctx)
}

// notes are the diagnostics of an epoch's close.
func (c *ptyConn) notes(out ptydrive.Output) []transcript.Diagnostic {
	var d []transcript.Diagnostic
	if c.epoch.idleOut {
		c.epoch.idleOut = false
		d = append(d, ptyrecord.IdleOutput())
	}
	if out.Invalid > 0 {
		d = append(d, ptyrecord.InvalidOutput(out.Invalid))
	}
	if n := c.drv.RepliesDropped; n > c.replies {
		d = append(d, ptyrecord.RepliesDropped(n-c.replies))
		c.replies = n
	}
	// The emulator's size, not its Screen: the observation builds that.
	ec, er := c.drv.Emulator().Size()
	// Said once per size the program sets, not at every epoch after.
	if cols, rows, err := c.drv.KernelSize(); err == nil && (cols != ec || rows != er) && c.sizeSaid != [2]int{cols, rows} {
		c.sizeSaid = [2]int{cols, rows}
		d = append(d, ptyrecord.SizeChanged(cols, rows, ec, er))
	}
	return d
}

// observation is the screen now, as the transcript records it
// (ptyrecord.Observation), with the epoch's output.
func (c *ptyConn) observation(out ptydrive.Output) transcript.Observation {
	return ptyrecord.Observation(c.drv.Screen(), out.Text)
}

// exitRecords are the records that end a program that exited: the
// diagnostics of its last output, and an observation of the screen it
// left with the OS-observed exit.
func (c *ptyConn) exitRecords(exit transcript.Exit) ([]transcript.Diagnostic, transcript.Observation, error) {
	out := c.drv.TakeFinalOutput()
	if out.Dropped > 0 {
		return nil, transcript.Observation{}, outputBudget(out)
	}
	o := c.observation(out)
	o.Process = &transcript.Process{Exited: true, Exit: exit}
	return c.notes(out), o, nil
}

// awaitEnd waits, after the hangup, for the program to end (then the
// state is ptyEnded); past the grace period its tree is killed. The
// output it writes meanwhile is read (a program blocked writing cannot
// end) and kept for the last observation.
func (c *ptyConn) awaitEnd(ctx context.Context) error {
	gctx, gcancel := context.WithTimeout(ctx, c.grace)
	defer gcancel()
	for {
		st, err := c.drv.Settle(gctx, c.exited)
		if err == nil && st.Overflow {
			// Not a quiet point (looping on it would spin past every
			// deadline): output no record can hold ends the run.
			return outputBudget(c.drv.TakeOutput())
		}
		if err == nil && st.Exited {
			c.state = ptyEnded
			return nil
		}
		if err != nil && gctx.Err() == nil {
			return &terminalError{failure: FailureTerminal, err: err}
		}
		if err != nil {
			break // the grace period is over
		}
		// Quiet: still waiting for input after the hangup.
		select {
		case <-c.exited:
		case <-gctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	if ctx.Err() != nil {
		return os.ErrDeadlineExceeded
	}
	_ = c.proc.Kill()
	c.queue = append(c.queue, said{kind: control.KindDiagnostic, diag: ptyDiagnostic(DiagStopGraceKilled,
		fmt.Sprintf("the program did not end within %v of the hangup; its tree was killed", c.grace), nil)})
	select {
	case <-c.exited:
	case <-ctx.Done():
		return os.ErrDeadlineExceeded
	}
	if _, err := c.drv.Settle(ctx, c.exited); err != nil {
		return &terminalError{failure: FailureTerminal, err: err}
	}
	c.state = ptyEnded
	return nil
}

// arrived is the idle check: a terminal program may write while idle (its
// output goes to the next epoch, said in a diagnostic), so only its end
// counts, which next then returns as io.EOF.
func (c *ptyConn) arrived() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

func (c *ptyConn) undelivered() bool { return c.stuck }

// close releases the driver's master and the slave; the master itself is
// the sandbox's (Destroy closes it).
func (c *ptyConn) close() {
	_ = c.drv.Close()
	_ = c.slave.Close()
}

// ptyDiagnostic is a diagnostic of the PTY adapter, under its own code
// (a subject's may not use the terminal- family: subjectDiagnosticCode).
func ptyDiagnostic(code, message string, d *canon.Value) transcript.Diagnostic {
	return transcript.Diagnostic{Code: code, Message: message, Details: d}
}

// outputBudget is an epoch whose output exceeds what one record can hold:
// the run ends with the transcript's budget failure, as upstream's
// terminal adapter ends a flood, rather than keep a cut chunk.
func outputBudget(out ptydrive.Output) error {
	return &transcript.BudgetError{Limit: transcript.LimitValues,
		Detail: fmt.Sprintf("one epoch's terminal output is more than %d bytes, the longest string a record holds (%d more bytes were read and not kept)", canon.MaxStringBytes, out.Dropped)}
}

// terminalError is an input the terminal cannot send (nothing of it was
// written) or a failure of the terminal itself; either ends the run with
// run.failed.
type terminalError struct {
	failure string
	err     error
}

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

func (e *terminalError) ending(p phase, input int) *ending {
	d := details{}.str("failure", e.failure).str("phase", string(p))
	if input > 0 {
		d = d.num("input", int64(input))
	}
	msg := "the terminal failed: " + e.err.Error()
	if e.failure == FailureInput {
		msg = "the input cannot be sent to a terminal (nothing of it was written): " + e.err.Error()
	}
	return failedEnding(startCode(p.ready()), msg, d)
}
