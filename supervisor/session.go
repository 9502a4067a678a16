package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// session drives one subject through the control/v1 lifecycle:
// handshake, then one single-flight epoch per input, each under its own
// deadline, the last the stop drain; then the OS exit. Every ending goes
// through end, which kills the subject's tree.
type session struct {
	rec   *recorder
	proc  proc
	conn  conn
	wire  protocolConn // conn, when its subject speaks a protocol; else nil
	lim   Deadlines
	runID string
	cfg   config.Config

	phase  phase
	input  int  // 1-based index of the current input
	replay bool // Request.Replay: the inputs may run out with the run open

	// The observation that closed the last epoch, decoded and checked but
	// not yet recorded: the next epoch records it (after sending its input
	// first, when it can), a failed run's end records it as the subject's
	// last word.
	held      transcript.Observation
	heldBytes int // the length of its wire form
	holding   bool

	// drained: the stop drain's optional final observation arrived. It is
	// checked and never recorded (upstream's record): the adapter's
	// synthesized exited-process observation closes the drain.
	drained bool
}

func newSession(rec *recorder, p proc, c conn, req *Request) *session {
	s := &session{rec: rec, proc: p, conn: c, lim: req.Deadlines, runID: req.RunID, cfg: req.Config, replay: req.Replay}
	s.wire, _ = c.(protocolConn)
	return s
}

func (s *session) close() { s.conn.close() }

// recorded tells a protocol conn that what it returned is recorded.
func (s *session) recorded() {
	if s.wire != nil {
		s.wire.recorded()
	}
}

// handshake sends session.hello and reads the reply under the handshake
// deadline, which bounds the whole handshake (improvement 5).
func (s *session) handshake(ctx context.Context) *ending {
	s.phase = phaseHandshake
	pctx, cancel := context.WithTimeoutCause(ctx, s.lim.Handshake, errHandshakeDeadline)
	defer cancel()
	if s.wire != nil {
		if err := s.wire.hello(pctx, s.runID, s.cfg); err != nil {
			if end := s.writeEnd(pctx, err); end != nil {
				return s.end(end)
			}
		}
	}
	return s.end(s.reply(pctx))
}

// reply reads the handshake's reply: diagnostics, then session.ready, or
// the subject's refusal. The receipts are recorded with the subject's
// first message, not before: a session.unsupported changes them.
func (s *session) reply(pctx context.Context) *ending {
	diags := 0
	for {
		m, _, err := s.conn.next(pctx)
		if errors.Is(err, io.EOF) {
			return s.exitedInHandshake(pctx)
		}
		if err != nil {
			return s.readEnd(pctx, err)
		}
		switch m.kind {
		case control.KindDiagnostic:
			if err := s.rec.writeReceipts(); err != nil {
				return s.rec.fail(err, s.phase)
			}
			if diags++; diags > diagnosticLimit(s.phase) {
				return tooManyDiagnostics(s.phase, 0)
			}
			if err := s.rec.diagnostic(m.diag); err != nil {
				return s.rec.fail(err, s.phase)
			}
		case control.KindSessionReady:
			if err := s.rec.writeReceipts(); err != nil {
				return s.rec.fail(err, s.phase)
			}
			if err := s.rec.observe(m.obs); err != nil {
				return s.rec.fail(err, s.phase)
			}
			s.phase = phaseIdle
			return nil
		case control.KindSessionFailed, control.KindUnsupported:
			// The run is over without readiness: no exit evidence is
			// recorded, so the subject need not be waited for.
			if diags > 0 {
				// Seed 000: diagnostics may precede only session.ready.
				return lifecycleEnding(s.phase, violDiagBeforeReply, m.kind, 0,
					fmt.Sprintf("the subject sent %d diagnostics before %s, which only session.ready may follow", diags, m.kind))
			}
			if r := m.refusal; r != nil {
				return s.rec.subjectRefused(r.Constraint, r.Code, r.Message)
			}
			return subjectFailure(false, *m.failure)
		default:
			return s.misplaced(m)
		}
	}
}

// runEpochs runs the input script, one single-flight epoch per input,
// each under its own whole-epoch deadline; the last input is input.stop,
// whose drain ends the run. A replay's recorded inputs need not end with
// input.stop: when they run out with the run still open, the run fails
// (notTerminated) rather than a stop being invented.
func (s *session) runEpochs(ctx context.Context, inputs []input.Input) *ending {
	for i, in := range inputs {
		s.input = i + 1
		var next input.Input
		if i+1 < len(inputs) {
			next = inputs[i+1]
		}
		pctx, cancel := context.WithTimeoutCause(ctx, s.lim.Epoch, errEpochDeadline)
		end := s.epoch(pctx, in, next)
		cancel()
		if end != nil {
			return s.end(end)
		}
	}
	if s.replay {
		pctx, cancel := context.WithTimeoutCause(ctx, s.lim.Epoch, errEpochDeadline)
		defer cancel()
		return s.end(s.notTerminated(pctx, len(inputs)))
	}
	// Unreachable: the script ends with input.stop and its drain always
	// ends the run. Say so rather than leave the run without an end.
	return s.end(lifecycleEnding(phaseStop, violAfterFinal, "", s.input, "the stop drain ended without a terminal message"))
}

// notTerminated ends a replay whose inputs ran out before the run ended.
// The last epoch's observation is recorded, and what the subject sent
// since is looked at exactly as before a next input would be (idle): a
// subject that already finished on its own is recorded truthfully. A run
// still open fails with CodeReplayNotTerminated; no stop is invented.
func (s *session) notTerminated(pctx context.Context, inputs int) *ending {
	if err := s.flush(); err != nil {
		return s.rec.fail(err, s.phase)
	}
	s.recorded()
	if end := s.idle(pctx); end != nil {
		return end
	}
	d := details{}.str("failure", CodeReplayNotTerminated).str("phase", string(s.phase)).num("inputs", int64(inputs))
	return failedEnding(CodeReplayNotTerminated,
		fmt.Sprintf("the replayed inputs ran out with the run still open: the last of the %d was not input.stop, and a replay invents none", inputs), d)
}

// epoch runs one input's epoch. The observation that closed the last one
// is recorded here, not there: when nothing arrived since and the budget
// allows (sendFirst, sendfirst.go), the input is sent first and both
// records are written while the subject works on it, which takes the
// Writer off the round trip. The transcript is the same either way: the
// observation, then the input, then what the subject answered.
func (s *session) epoch(pctx context.Context, in, next input.Input) *ending {
	var sendErr error
	sent := s.sendFirst() && !s.conn.arrived()
	if sent {
		sendErr = s.conn.deliver(pctx, in, s.rec.now())
	}
	if err := s.flush(); err != nil {
		return s.rec.fail(sentUnrecorded(err, sent), s.phase)
	}
	// Every message read so far is recorded and none is kept.
	s.recorded()
	if !sent {
		if end := s.idle(pctx); end != nil {
			return end
		}
	}
	_, stop := in.(input.Stop)
	s.phase = phaseEpoch
	if stop {
		s.phase = phaseStop
	}
	if err := s.rec.input(in); err != nil {
		return s.rec.fail(sentUnrecorded(err, sent), s.phase)
	}
	if !sent {
		sendErr = s.conn.deliver(pctx, in, s.rec.now())
	}
	if sendErr != nil {
		if end := s.writeEnd(pctx, sendErr); end != nil {
			return end
		}
	}
	if s.wire != nil {
		s.wire.prepare(next)
	}
	return s.collect(pctx, stop)
}

// idle looks at what the subject sent since the last epoch closed. A
// terminal message or end of stream is a subject that finished on its own
// (recorded truthfully, improvement 1); any other message is peer-lifecycle
// at once (improvement 2).
func (s *session) idle(pctx context.Context) *ending {
	if !s.conn.arrived() {
		return nil
	}
	m, _, err := s.conn.next(pctx)
	switch {
	case errors.Is(err, io.EOF):
		return s.exited(pctx, nil, nil)
	case errors.Is(err, os.ErrDeadlineExceeded):
		<-pctx.Done()
		if cause := context.Cause(pctx); cause != errEpochDeadline {
			return s.abort(cause, "read")
		}
		return lifecycleEnding(s.phase, violIdleBytes, "", s.input,
			"the subject wrote bytes while no epoch was open and never completed the message")
	case err != nil:
		return s.readEnd(pctx, err)
	}
	return s.terminalOr(pctx, m)
}

// collect reads an epoch's messages: diagnostics, then one closing
// observation or a terminal message. The closing observation is held for
// the next epoch to record. In the stop drain it is checked and dropped,
// as upstream does: only a terminal message or end of stream may follow
// it, and the adapter's synthesized exited-process observation closes the
// drain (exitWith).
func (s *session) collect(pctx context.Context, stop bool) *ending {
	diags := 0
	for {
		m, wireBytes, err := s.conn.next(pctx)
		if errors.Is(err, io.EOF) {
			return s.exited(pctx, nil, nil)
		}
		if err != nil {
			return s.readEnd(pctx, err)
		}
		switch m.kind {
		case control.KindDiagnostic:
			if s.drained {
				return s.afterFinal(m)
			}
			if diags++; diags > diagnosticLimit(s.phase) {
				return tooManyDiagnostics(s.phase, s.input)
			}
			if err := s.rec.diagnostic(m.diag); err != nil {
				return s.rec.fail(err, s.phase)
			}
		case control.KindObservation:
			if s.drained {
				return s.afterFinal(m)
			}
			if m.ownExit {
				// Exit evidence is the OS's to give (seed 000).
				return lifecycleEnding(s.phase, violExited, m.kind, s.input,
					"the subject's observation reports its own exit; only the adapter observes that")
			}
			if stop {
				s.drained = true
				continue
			}
			// A next epoch records it, or the replay's or the run's end.
			s.hold(m.obs, wireBytes)
			return nil
		default:
			return s.terminalOr(pctx, m)
		}
	}
}

// terminalOr handles a terminal message, and any other message in a
// position where the lifecycle allows nothing of its kind.
func (s *session) terminalOr(pctx context.Context, m said) *ending {
	switch m.kind {
	case control.KindRunFinished:
		return s.terminal(pctx, m.exit, nil)
	case control.KindRunFailed:
		return s.terminal(pctx, nil, m.failure)
	}
	return s.misplaced(m)
}

// terminal handles run.finished (claim) or run.failed (failure): nothing
// may follow it, so the stream is read to its end; then the OS exit is
// awaited and recorded.
func (s *session) terminal(pctx context.Context, claim *transcript.Exit, failure *transcript.Failure) *ending {
	m, _, err := s.conn.next(pctx)
	if err == nil {
		return lifecycleEnding(s.phase, violAfterTerminal, m.kind, s.input,
			fmt.Sprintf("the subject sent %s after its terminal message", m.kind))
	}
	if !errors.Is(err, io.EOF) {
		return s.readEnd(pctx, err)
	}
	return s.exited(pctx, claim, failure)
}

// exited ends a run whose subject closed its stdout, after a terminal
// message or without one: it exited (or is about to). Its OS exit ends
// the run.
func (s *session) exited(pctx context.Context, claim *transcript.Exit, failure *transcript.Failure) *ending {
	exit, end := s.waitExit(pctx)
	if end != nil {
		return end
	}
	return s.exitWith(exit, claim, failure)
}

// exitRecorder is a conn that observes the ended subject itself: the PTY
// conn's last observation shows the screen the program left.
type exitRecorder interface {
	exitRecords(exit transcript.Exit) ([]transcript.Diagnostic, transcript.Observation, error)
}

// observeExit records the observation that closes an open epoch with the
// OS exit: upstream's synthesized one, or the conn's own.
func (s *session) observeExit(exit transcript.Exit) *ending {
	er, ok := s.conn.(exitRecorder)
	if !ok {
		if err := s.rec.observe(exitedObservation(exit)); err != nil {
			return s.rec.fail(err, s.phase)
		}
		return nil
	}
	diags, o, err := er.exitRecords(exit)
	if err != nil {
		return s.rec.fail(err, s.phase)
	}
	for _, d := range diags {
		if err := s.rec.diagnostic(d); err != nil {
			return s.rec.fail(err, s.phase)
		}
	}
	if err := s.rec.observe(o); err != nil {
		return s.rec.fail(err, s.phase)
	}
	return nil
}

// exitedInHandshake is end of stream before any handshake reply. A
// terminal program that ends before it ever waits for input (top -b,
// ls) has run as it should: its last screen is the readiness observation
// and the last one, and the run finishes with its exit.
func (s *session) exitedInHandshake(pctx context.Context) *ending {
	exit, end := s.waitExit(pctx)
	if end != nil {
		return end
	}
	if _, ok := s.conn.(exitRecorder); ok {
		observed := osExit(exit)
		if err := s.rec.writeReceipts(); err != nil {
			return s.rec.fail(err, s.phase)
		}
		if end := s.observeExit(observed); end != nil {
			return end
		}
		return &ending{finished: &observed}
	}
	e := lifecycleEnding(s.phase, violExitedInStart, "", 0, "the subject exited before replying to session.hello")
	*e.failed.Details = canon.ObjectValue(append(e.failed.Details.Members, canon.M("exit", osExit(exit).Value()))...)
	return e
}

// waitExit waits for the OS-observed exit within the phase deadline; on
// expiry the tree is killed, which ends the wait, and the run fails
// without an exit record.
func (s *session) waitExit(pctx context.Context) (sandbox.Exit, *ending) {
	stop := context.AfterFunc(pctx, s.kill)
	exit, err := s.proc.Wait()
	if !stop() {
		<-pctx.Done()
		return exit, s.abort(context.Cause(pctx), "exit")
	}
	if err != nil || (exit.InitLost && !exit.Killed) {
		d := details{}.str("failure", FailureExitUnknown).str("phase", string(s.phase))
		return exit, failedEnding(startCode(s.phase.ready()), "the subject's end could not be observed", d)
	}
	return exit, nil
}

// exitWith records the end of a subject whose OS exit is known. The
// OS-observed exit is authoritative: a different claim adds the
// exit-record-mismatch diagnostic. In an open epoch (the stop drain
// included) the exit is recorded as the observation closing it, which the
// adapter synthesizes as upstream does: no state, no events, an empty UI,
// the OS exit. While idle the transcript admits neither a diagnostic nor
// an observation, so only the terminal record carries the exit. A
// subject's run.failed is recorded as upstream records it
// (subjectFailure).
func (s *session) exitWith(exit sandbox.Exit, claim *transcript.Exit, failure *transcript.Failure) *ending {
	observed := osExit(exit)
	open := s.phase.open()
	if open {
		if claim != nil && *claim != observed {
			d := details{}.val("claimed", claim.Value()).val("observed", observed.Value())
			err := s.rec.diagnostic(transcript.Diagnostic{Code: DiagExitMismatch,
				Message: "the subject's claimed exit differs from the exit the OS observed; the OS exit is recorded",
				Details: d.value()})
			if err != nil {
				return s.rec.fail(err, s.phase)
			}
		}
		if end := s.observeExit(observed); end != nil {
			return end
		}
	}
	if failure != nil {
		return subjectFailure(true, *failure)
	}
	end := &ending{finished: &observed}
	if !open && claim != nil && *claim != observed {
		// Idle: no epoch can carry the exit-record-mismatch diagnostic,
		// so the terminal record keeps the claim in an x- member.
		c := *claim
		end.claimed = &c
	}
	return end
}

// end is the one way a session ends. It kills the subject's tree, once:
// whatever the ending, nothing the subject does afterwards is recorded,
// and waitExit has its exit already where the run records one. A failed
// run also states what was applied (the receipts precede its run.failed,
// even in the handshake) and keeps the held observation as the subject's
// last evidence.
func (s *session) end(e *ending) *ending {
	if e == nil {
		return nil
	}
	s.kill()
	if e.failed == nil {
		return e
	}
	if err := s.rec.writeReceipts(); err != nil {
		return s.rec.fail(err, s.phase)
	}
	if err := s.flush(); err != nil {
		return s.rec.fail(err, s.phase)
	}
	return e
}

func (s *session) kill() { _ = s.proc.Kill() }

// hold puts the observation that closes the current epoch in the slot.
func (s *session) hold(o transcript.Observation, wireBytes int) {
	s.held, s.heldBytes, s.holding = o, wireBytes, true
}

// take empties the slot.
func (s *session) take() (transcript.Observation, bool) {
	o, ok := s.held, s.holding
	s.held, s.heldBytes, s.holding = transcript.Observation{}, 0, false
	return o, ok
}

// flush records the held observation, if any, which closes its epoch.
func (s *session) flush() error {
	o, ok := s.take()
	if !ok {
		return nil
	}
	if err := s.rec.observe(o); err != nil {
		return err
	}
	s.phase = phaseIdle
	return nil
}
