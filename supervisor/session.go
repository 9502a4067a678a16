package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// proc is what a session needs of the running subject: its OS-observed
// end, and a way to kill its whole tree.
type proc interface {
	Wait() (sandbox.Exit, error)
	Kill() error
}

// session drives one subject over termverify.control/v1.
//
// All protocol I/O happens on the goroutine that calls handshake and
// runEpochs, through pipeIO with deadlines: a phase deadline (or a signal,
// which interrupts the I/O for good) unblocks a read or a write without a
// goroutine per pipe to own and wait for. Reading on the same goroutine
// that decides is also what makes the idle check exact: before each input,
// the bytes already buffered by the Reader plus a zero-timeout poll of the
// pipe are everything the subject has sent, so a message there arrived
// while no epoch was open (ADAPTER-RULES.md, improvement 2).
type session struct {
	rec   *recorder
	proc  proc
	io    *pipeIO // our ends of the subject's stdin and stdout
	rd    *control.Reader
	lim   Deadlines
	runID string
	cfg   config.Config

	stopIO    func() bool
	ioStopped chan struct{} // closed once a started stopIO func is over

	ready bool   // the readiness observation is recorded
	phase string // handshake, epoch, stop, idle
	input int    // 1-based index of the current input
	open  bool   // an epoch is open in the transcript
	exit  *sandbox.Exit

	// The next input's wire line, encoded while the subject works on the
	// current one (inputs whose line does not depend on the clock).
	enc       control.Encoder
	aheadFor  int // the 1-based index of the input aheadLine encodes; 0: none
	aheadLine []byte
	aheadErr  error

	// The observation that closed the last epoch, not yet recorded: the
	// next epoch sends its input first when it can (see epoch).
	deferred *transcript.Observation
	obsBytes int // the length of its wire line
}

func newSession(ctx context.Context, rec *recorder, p proc, pio *pipeIO, req *Request) *session {
	s := &session{rec: rec, proc: p, io: pio, rd: control.NewReader(stdoutReader{pio}),
		lim: req.Deadlines, runID: req.RunID, cfg: req.Config, ioStopped: make(chan struct{})}
	// A signal or the run deadline must unblock whatever I/O is in
	// flight, and every later I/O fails at once: no deadline set by arm
	// undoes an interruption.
	s.stopIO = context.AfterFunc(ctx, func() {
		defer close(s.ioStopped)
		pio.interrupt()
	})
	return s
}

// close stops the run context's hold on the I/O; once it returns, no
// goroutine of the session uses the pipes or the eventfd.
func (s *session) close() {
	if !s.stopIO() {
		<-s.ioStopped // the context is done and the func was started
	}
}

// arm sets both pipes' deadline to the phase's.
func (s *session) arm(pctx context.Context) {
	dl, _ := pctx.Deadline()
	s.io.setDeadline(dl)
}

func (s *session) send(m control.Message) error {
	line, err := control.Encode(m)
	if err != nil {
		return err
	}
	_, err = s.io.write(line)
	return err
}

// sendInput sends the current input: the line encoded ahead when there
// is one.
func (s *session) sendInput(in transcript.Input) error {
	line, err := s.aheadLine, s.aheadErr
	if s.aheadFor != s.input {
		line, err = control.Encode(controlInput(in, s.rec.w.Now()))
	}
	s.aheadFor, s.aheadErr = 0, nil
	if err != nil {
		return err
	}
	_, err = s.io.write(line)
	return err
}

// encodeAhead encodes the next input, unless its line depends on the
// manual clock (input.clock carries the time after it is recorded). It
// is pure work done while the subject handles the current input, off the
// round trip; nothing is sent or recorded before its own epoch.
func (s *session) encodeAhead(next transcript.Input) {
	if _, clock := next.(transcript.ClockAdvanced); next == nil || clock {
		return
	}
	s.aheadFor = s.input + 1
	// The Encoder's error names the message kind already.
	s.aheadLine, s.aheadErr = s.enc.Append(s.aheadLine[:0], controlInput(next, 0))
}

// Bounds on record sizes for sending an input before the records that
// precede it are written (see sendFirst). An observation record is at
// most 7 times its wire line plus a constant: at_ms, the record envelope
// and the run id, null focus and mode, a bounds object per region (20%
// of a region's wire bytes at most), and canonical numbers (a 4-byte
// literal such as 1e15 spells out to 16 bytes; one that would spell out
// as an integer beyond 2^53 is refused by Parse); strings and whitespace
// only shrink. An input record has the payload of its wire line plus
// at_ms. TestRecordBounds, TestRecordBoundsRandom and FuzzRecordBound
// check both bounds.
const (
	maxSentFirstLine = 64 << 10 // longer lines take the plain order
	recordOverhead   = 512
)

func observationBound(wireBytes int, runID string) int {
	return 7*wireBytes + recordOverhead + len(runID)
}

func inputBound(wireBytes int, runID string) int { return 2*wireBytes + recordOverhead + len(runID) }

// sendFirst reports whether the current input may be sent before the
// deferred observation and the input itself are recorded: its line is
// encoded, it is not a clock input (whose line carries the time the
// Writer computes), both wire lines are short (so neither record can
// break a per-record limit: a record's line, values and strings grow by
// a bounded factor over its wire line's), and both records fit the
// transcript's remaining budget whatever their exact size (a Parse-valid
// observation, and an input of the checked script, are otherwise always
// accepted by the Writer). Then no input can ever reach the subject that
// the transcript does not record.
func (s *session) sendFirst() bool {
	if s.deferred == nil || s.aheadFor != s.input || s.aheadErr != nil ||
		s.obsBytes > maxSentFirstLine || len(s.aheadLine) > maxSentFirstLine {
		return false
	}
	return s.rec.w.Room(2, observationBound(s.obsBytes, s.runID)+inputBound(len(s.aheadLine), s.runID))
}

// recordDeferred records the observation that closed the last epoch.
func (s *session) recordDeferred() error {
	if s.deferred == nil {
		return nil
	}
	o := s.deferred
	s.deferred = nil
	if err := s.rec.w.Observe(*o); err != nil {
		return err
	}
	s.open = false
	return nil
}

func (s *session) next() (control.Message, error) {
	m, _, err := s.rd.Next()
	return m, err
}

func (s *session) kill() { _ = s.proc.Kill() }

// handshake sends session.hello and reads the reply under the handshake
// deadline, which bounds the whole handshake (improvement 5).
func (s *session) handshake(ctx context.Context) *ending {
	s.phase = "handshake"
	pctx, cancel := context.WithTimeoutCause(ctx, s.lim.Handshake, errHandshakeDeadline)
	defer cancel()
	s.arm(pctx)
	if err := s.send(control.NewHello(s.runID, s.cfg)); err != nil {
		if end := s.writeEnd(pctx, err); end != nil {
			return s.withReceipts(end)
		}
	}
	diags := 0
	for {
		m, err := s.next()
		if errors.Is(err, io.EOF) {
			return s.withReceipts(s.exitedInHandshake(pctx))
		}
		if err != nil {
			return s.withReceipts(s.readEnd(pctx, err))
		}
		switch m := m.(type) {
		case control.Diagnostic:
			if err := s.rec.writeReceipts(); err != nil {
				return s.recordEnd(err)
			}
			if diags++; diags > maxDiagnostics {
				s.kill()
				return tooManyDiagnostics(false, s.phase, 0)
			}
			if err := s.rec.w.Diagnostic(diagnosticRecord(m)); err != nil {
				return s.recordEnd(err)
			}
		case control.Ready:
			if err := s.rec.writeReceipts(); err != nil {
				return s.recordEnd(err)
			}
			if err := s.rec.w.Observe(observationRecord(&m.Observation)); err != nil {
				return s.recordEnd(err)
			}
			s.ready = true
			return nil
		case control.SessionFailed, control.Unsupported:
			// The run is over without readiness: no exit evidence is
			// recorded, so the subject need not be waited for.
			s.kill()
			if diags > 0 {
				// Seed 000: diagnostics may precede only session.ready.
				return s.withReceipts(lifecycleEnding(false, s.phase, violDiagBeforeReply, m.Kind(), 0,
					fmt.Sprintf("the subject sent %d diagnostics before %s, which only session.ready may follow", diags, m.Kind())))
			}
			if u, ok := m.(control.Unsupported); ok {
				return s.rec.subjectRefused(u.Constraint, u.Code, u.Message)
			}
			f := m.(control.SessionFailed).Error
			d := details{}.str("subject-code", f.Code)
			if f.Details != nil {
				d = d.val("subject-details", *f.Details)
			}
			return s.withReceipts(failedEnding(transcript.CodeAdapterStartFailed, f.Message, d))
		default:
			s.kill()
			return s.withReceipts(s.misplaced(m))
		}
	}
}

// misplaced is a structurally valid message in a position where the
// lifecycle allows nothing of its kind.
func (s *session) misplaced(m control.Message) *ending {
	viol, why := violBeforeReply, "before its handshake reply"
	switch {
	case m.Kind().Direction() == control.AdapterToSubject:
		viol, why = violAdapterKind, "which only the adapter sends"
	case s.ready && (m.Kind() == control.KindSessionReady || m.Kind() == control.KindUnsupported || m.Kind() == control.KindSessionFailed):
		viol, why = violSecondReady, "after the handshake was over"
	case s.ready:
		viol, why = violIdleMessage, "while no epoch was open"
	}
	return lifecycleEnding(s.ready, s.phase, viol, m.Kind(), s.input, fmt.Sprintf("the subject sent %s %s", m.Kind(), why))
}

// withReceipts makes sure a run that ends in the handshake still states
// what was applied: the seven receipts precede its run.failed.
func (s *session) withReceipts(end *ending) *ending {
	if end == nil || end.failed == nil {
		return end
	}
	if err := s.rec.writeReceipts(); err != nil {
		return s.recordEnd(err)
	}
	return end
}

// recordEnd ends the run after the Writer refused a record.
func (s *session) recordEnd(err error) *ending {
	s.kill()
	return s.rec.fail(err, s.ready, s.phase)
}

// runEpochs runs the input script, one single-flight epoch per input,
// each under its own whole-epoch deadline; the last input is input.stop,
// whose drain ends the run.
func (s *session) runEpochs(ctx context.Context, inputs []transcript.Input) *ending {
	for i, in := range inputs {
		s.input = i + 1
		_, stop := in.(transcript.Stop)
		var next transcript.Input
		if i+1 < len(inputs) {
			next = inputs[i+1]
		}
		pctx, cancel := context.WithTimeoutCause(ctx, s.lim.Epoch, errEpochDeadline)
		end := s.epoch(pctx, in, next, stop)
		cancel()
		if end != nil {
			return end
		}
	}
	// Unreachable: the script ends with input.stop and its drain always
	// ends the run. Say so rather than leave the run without an end.
	s.kill()
	if err := s.recordDeferred(); err != nil {
		return s.rec.fail(err, s.ready, s.phase)
	}
	return lifecycleEnding(true, "stop", violAfterFinal, "", s.input, "the stop drain ended without a terminal message")
}

// epoch runs one input's epoch. The observation that closed the last one
// is recorded here, not there: when nothing arrived since and the
// budget allows (sendFirst), the input is sent first and both records
// are written while the subject works on it, which takes the Writer off
// the round trip. The transcript is the same either way: the
// observation, then the input, then what the subject answered.
func (s *session) epoch(pctx context.Context, in, next transcript.Input, stop bool) *ending {
	s.arm(pctx)
	var sendErr error
	sent := false
	if s.sendFirst() && !s.pending() {
		sendErr, sent = s.sendInput(in), true
	}
	if err := s.recordDeferred(); err != nil {
		return s.recordEnd(sentUnrecorded(err, sent))
	}
	// Every message read so far is recorded and none is kept: the Reader
	// may decode this epoch's messages into the same memory.
	s.rd.Recycle()
	if !sent {
		if end := s.idle(pctx); end != nil {
			return end
		}
	}
	s.phase = "epoch"
	if stop {
		s.phase = "stop"
	}
	if err := s.rec.w.Input(in); err != nil {
		return s.recordEnd(sentUnrecorded(err, sent))
	}
	s.open = true
	if sent {
		// Recording took the time the subject needed to answer, more
		// often than not: try to read the reply before waiting for it.
		s.io.readFirst()
	} else {
		sendErr = s.sendInput(in)
	}
	if sendErr != nil {
		if end := s.writeEnd(pctx, sendErr); end != nil {
			return end
		}
	}
	s.encodeAhead(next)
	return s.collect(pctx, stop)
}

// sentUnrecorded marks a Writer refusal that came after the input was
// sent, which sendFirst exists to rule out: if it ever happens, the
// failure says so rather than leave an input the subject saw unrecorded
// and unmentioned.
func sentUnrecorded(err error, sent bool) error {
	if !sent {
		return err
	}
	return &sentUnrecordedError{err}
}

type sentUnrecordedError struct{ err error }

func (e *sentUnrecordedError) Error() string {
	return e.err.Error() + " (the input of this epoch had already been sent)"
}
func (e *sentUnrecordedError) Unwrap() error { return e.err }

// idle looks at what the subject sent since the last epoch closed. A
// terminal message or end of stream is a subject that finished on its own
// (recorded truthfully, improvement 1); any other message is peer-lifecycle
// at once (improvement 2).
func (s *session) idle(pctx context.Context) *ending {
	if !s.pending() {
		return nil
	}
	s.phase = "idle"
	m, err := s.next()
	switch {
	case errors.Is(err, io.EOF):
		return s.endOfStream(pctx, nil)
	case errors.Is(err, os.ErrDeadlineExceeded):
		<-pctx.Done()
		if cause := context.Cause(pctx); cause != errEpochDeadline {
			return s.abort(cause, "read")
		}
		s.kill()
		return lifecycleEnding(true, s.phase, violIdleBytes, "", s.input,
			"the subject wrote bytes while no epoch was open and never completed the message")
	case err != nil:
		return s.readEnd(pctx, err)
	}
	switch m := m.(type) {
	case control.RunFinished:
		return s.terminal(pctx, &m.Exit, nil, nil)
	case control.RunFailed:
		return s.terminal(pctx, nil, &m.Error, nil)
	}
	s.kill()
	return s.misplaced(m)
}

// pending reports whether the subject has sent anything not yet read:
// bytes the Reader holds, bytes in the pipe, or end of stream (POLLHUP).
func (s *session) pending() bool { return s.rd.Buffered() > 0 || s.io.pending() }

// unreadInput reports whether bytes we wrote still sit in the subject's
// stdin pipe: then, at a deadline, the input never reached the subject
// ("during": "write") even if our write itself completed into the pipe
// buffer.
func (s *session) unreadInput() bool { return s.io.unreadInput() }

// collect reads an epoch's messages: diagnostics, then one closing
// observation or a terminal message. In the stop drain the final
// observation is held until the terminal message says how the run ends
// (see exitWith).
func (s *session) collect(pctx context.Context, stop bool) *ending {
	diags := 0
	var held *transcript.Observation
	fail := func(end *ending) *ending {
		s.kill()
		if held != nil && end.failed != nil {
			// Keep the subject's last observation as evidence.
			if err := s.rec.w.Observe(*held); err != nil {
				return s.rec.fail(err, s.ready, s.phase)
			}
			s.open = false
		}
		return end
	}
	for {
		m, raw, err := s.rd.Next()
		if errors.Is(err, io.EOF) {
			return s.endOfStream(pctx, held)
		}
		if err != nil {
			return fail(s.readEnd(pctx, err))
		}
		switch m := m.(type) {
		case control.Diagnostic:
			if held != nil {
				return fail(s.afterFinal(m))
			}
			if diags++; diags > maxDiagnostics {
				return fail(tooManyDiagnostics(true, s.phase, s.input))
			}
			if err := s.rec.w.Diagnostic(diagnosticRecord(m)); err != nil {
				return s.recordEnd(err)
			}
		case control.Observation:
			if held != nil {
				return fail(s.afterFinal(m))
			}
			if m.Process != nil && m.Process.State == control.ProcessExited {
				// Exit evidence is the OS's to give (seed 000).
				return fail(lifecycleEnding(true, s.phase, violExited, m.Kind(), s.input,
					"the subject's observation reports its own exit; only the adapter observes that"))
			}
			o := observationRecord(&m)
			if stop {
				held = &o
				continue
			}
			// Recorded by the next epoch (the last input is input.stop,
			// so there is one).
			s.deferred, s.obsBytes = &o, len(raw)
			return nil
		case control.RunFinished:
			return s.terminal(pctx, &m.Exit, nil, held)
		case control.RunFailed:
			return s.terminal(pctx, nil, &m.Error, held)
		default:
			return fail(s.misplaced(m))
		}
	}
}

func (s *session) afterFinal(m control.Message) *ending {
	return lifecycleEnding(true, s.phase, violAfterFinal, m.Kind(), s.input,
		fmt.Sprintf("the subject sent %s after the stop drain's final observation", m.Kind()))
}

// terminal handles run.finished (claim) or run.failed (failure): nothing
// may follow it, so the stream is read to its end; then the OS exit is
// awaited and recorded.
func (s *session) terminal(pctx context.Context, claim *control.Exit, failure *control.Failure, held *transcript.Observation) *ending {
	m, err := s.next()
	if err == nil {
		s.kill()
		return s.flushHeld(held, lifecycleEnding(s.ready, s.phase, violAfterTerminal, m.Kind(), s.input,
			fmt.Sprintf("the subject sent %s after its terminal message", m.Kind())))
	}
	if !errors.Is(err, io.EOF) {
		return s.flushHeld(held, s.readEnd(pctx, err))
	}
	exit, end := s.waitExit(pctx)
	if end != nil {
		return s.flushHeld(held, end)
	}
	return s.exitWith(exit, held, claim, failure)
}

func (s *session) flushHeld(held *transcript.Observation, end *ending) *ending {
	if held == nil || end.failed == nil || !s.open {
		return end
	}
	if err := s.rec.w.Observe(*held); err != nil {
		return s.rec.fail(err, s.ready, s.phase)
	}
	s.open = false
	return end
}

// endOfStream is the subject closing its stdout without a terminal
// message: it exited (or is about to). Its OS exit ends the run.
func (s *session) endOfStream(pctx context.Context, held *transcript.Observation) *ending {
	exit, end := s.waitExit(pctx)
	if end != nil {
		return s.flushHeld(held, end)
	}
	return s.exitWith(exit, held, nil, nil)
}

// exitedInHandshake is end of stream before any handshake reply.
func (s *session) exitedInHandshake(pctx context.Context) *ending {
	exit, end := s.waitExit(pctx)
	if end != nil {
		return end
	}
	e := lifecycleEnding(false, s.phase, violExitedInStart, "", 0, "the subject exited before replying to session.hello")
	*e.failed.Details = canon.ObjectValue(append(e.failed.Details.Members, canon.M("exit", osExit(exit).Value()))...)
	return e
}

// waitExit waits for the OS-observed exit within the phase deadline; on
// expiry the tree is killed and the run fails without an exit record.
func (s *session) waitExit(pctx context.Context) (sandbox.Exit, *ending) {
	stop := context.AfterFunc(pctx, s.kill)
	exit, err := s.proc.Wait()
	if !stop() {
		<-pctx.Done()
		return exit, s.abort(context.Cause(pctx), "exit")
	}
	if err != nil || (exit.InitLost && !exit.Killed) {
		d := details{}.str("failure", FailureExitUnknown).str("phase", s.phase)
		return exit, failedEnding(startCode(s.ready), "the subject's end could not be observed", d)
	}
	s.exit = &exit
	return exit, nil
}

// exitWith records the end of a subject whose OS exit is known. The
// OS-observed exit is authoritative: a different claim adds the
// exit-record-mismatch diagnostic. In an open epoch the exit is recorded
// as an exited-process observation closing it: the stop drain's held
// final observation carrying the OS exit, or upstream's synthesized empty
// one. While idle the transcript admits neither a diagnostic nor an
// observation, so only the terminal record carries the exit.
func (s *session) exitWith(exit sandbox.Exit, held *transcript.Observation, claim *control.Exit, failure *control.Failure) *ending {
	observed := osExit(exit)
	wasOpen := s.open
	if s.open {
		if claim != nil && wireExit(*claim) != observed {
			d := details{}.val("claimed", wireExit(*claim).Value()).val("observed", observed.Value())
			err := s.rec.w.Diagnostic(transcript.Diagnostic{Code: "exit-record-mismatch",
				Message: "the subject's claimed exit differs from the exit the OS observed; the OS exit is recorded",
				Details: d.value()})
			if err != nil {
				return s.rec.fail(err, s.ready, s.phase)
			}
		}
		o := exitedObservation(observed)
		if held != nil {
			o = *held
			o.Process = &transcript.Process{Exited: true, Exit: observed}
		}
		if err := s.rec.w.Observe(o); err != nil {
			return s.rec.fail(err, s.ready, s.phase)
		}
		s.open = false
	}
	if failure != nil {
		// Subject-reported failures keep the subject's own error code.
		return &ending{failed: &transcript.Failure{Code: failure.Code, Message: failure.Message, Details: failure.Details}}
	}
	end := &ending{finished: &observed}
	if !wasOpen && claim != nil && wireExit(*claim) != observed {
		// Idle: no epoch can carry the exit-record-mismatch diagnostic,
		// so the terminal record keeps the claim in an x- member.
		c := wireExit(*claim)
		end.claimed = &c
	}
	return end
}

// readEnd turns a read error into the run's ending.
func (s *session) readEnd(pctx context.Context, err error) *ending {
	s.kill()
	if ce, ok := errors.AsType[*control.Error](err); ok {
		return malformedEnding(s.ready, s.phase, s.input, ce)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		<-pctx.Done()
		during := "read"
		if s.unreadInput() {
			during = "write"
		}
		return s.abort(context.Cause(pctx), during)
	}
	return &ending{host: fmt.Errorf("read the subject's stdout: %w", err)}
}

// writeEnd turns a write error into the run's ending, or nil when the
// subject's stdin is closed (EPIPE): it has exited or is exiting, and the
// read that follows finds out how.
func (s *session) writeEnd(pctx context.Context, err error) *ending {
	if errors.Is(err, unix.EPIPE) {
		return nil
	}
	s.kill()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		<-pctx.Done()
		return s.abort(context.Cause(pctx), "write")
	}
	return &ending{host: fmt.Errorf("write the subject's stdin: %w", err)}
}

func (s *session) abort(cause error, during string) *ending {
	s.kill()
	return abortEnding(cause, s.ready, s.phase, during, s.input, s.lim)
}
