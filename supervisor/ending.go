package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Failure codes of details.failure: the five of seed 000's taxonomy, plus
// ours for what the taxonomy does not cover.
const (
	FailureSpawn       = "spawn-failed"
	FailureSandbox     = "sandbox-failed" // the os sandbox failed after namespaces were available: never a fallback
	FailureHandshake   = "handshake-timeout"
	FailureMalformed   = "peer-malformed"
	FailureLifecycle   = "peer-lifecycle"
	FailureEpoch       = "epoch-timeout"
	FailureInterrupted = "interrupted"       // SIGINT/SIGTERM/SIGHUP to the supervisor
	FailureExitUnknown = "exit-unobserved"   // the init vanished without reporting the subject's end
	FailureTranscript  = "transcript-rule"   // subject evidence the transcript cannot hold
	FailureBudget      = "transcript-budget" // written by transcript.Writer.FailBudget
)

// deadlineError is the cause a phase or run context carries when its
// deadline fires, so the record can name which deadline it was.
type deadlineError struct{ name string }

func (e *deadlineError) Error() string { return e.name + " deadline expired" }

var (
	errHandshakeDeadline = &deadlineError{"handshake"}
	errEpochDeadline     = &deadlineError{"epoch"}
	errRunDeadline       = &deadlineError{"run"}
)

// Interrupted is the cancellation cause for a signal to the supervisor
// (see InterruptContext); the run ends with run.failed naming it.
type Interrupted struct{ Signal string }

func (e *Interrupted) Error() string { return "interrupted by SIG" + e.Signal }

// phase is where a run is in its lifecycle, as run.failed's
// details.phase names it. The session moves through handshake, then idle
// and epoch (or stop, the last epoch) in turn; launch knows only
// negotiation and spawn.
type phase string

const (
	phaseNegotiation phase = "negotiation" // receipts decided against the backend
	phaseSpawn       phase = "spawn"       // the sandbox is being built
	phaseHandshake   phase = "handshake"   // session.hello through the readiness observation
	phaseIdle        phase = "idle"        // ready, no epoch open in the transcript
	phaseEpoch       phase = "epoch"       // an input recorded, its closing observation not yet
	phaseStop        phase = "stop"        // input.stop recorded: the stop drain
)

// ready reports whether the readiness observation is recorded, which
// decides adapter-start-failed versus adapter-runtime-failed.
func (p phase) ready() bool {
	return p == phaseIdle || p == phaseEpoch || p == phaseStop
}

// open reports whether an epoch is open in the transcript: its input is
// recorded and its closing observation is not.
func (p phase) open() bool { return p == phaseEpoch || p == phaseStop }

// ending is how a run ended, before its terminal record is written.
// Exactly one of the fields is set.
type ending struct {
	finished    *transcript.Exit    // run.finished with the OS exit
	claimed     *transcript.Exit    // a differing exit the subject claimed while idle
	failed      *transcript.Failure // run.failed
	unsupported *receipts.Refusal   // run.unsupported, already written
	budget      error               // a *transcript.BudgetError: FailBudget
	host        error               // the transcript could not be written at all
}

func failedEnding(code, message string, d details) *ending {
	return &ending{failed: &transcript.Failure{Code: code, Message: message, Details: d.value()}}
}

func startCode(ready bool) string {
	if ready {
		return transcript.CodeAdapterRuntimeFailed
	}
	return transcript.CodeAdapterStartFailed
}

// abortEnding records a deadline expiry or a signal: the deadline, the
// phase and whether the input could not be written or the reply never
// came. It carries no exit: a deadline abort discloses no exit evidence.
//
// A deadline's details are upstream's (abort-deadline-ms, phase, during),
// plus ours: which deadline it was (deadline, deadline_ms) and the input.
func abortEnding(cause error, p phase, during string, input int, lim Deadlines) *ending {
	ready := p.ready()
	d := details{}.str("phase", string(p)).str("during", during)
	if input > 0 {
		d = d.num("input", int64(input))
	}
	if in, ok := errors.AsType[*Interrupted](cause); ok {
		d = d.str("failure", FailureInterrupted).str("signal", in.Signal)
		return failedEnding(startCode(ready), "the supervisor was interrupted by SIG"+in.Signal+"; the subject was killed", d)
	}
	failure := FailureEpoch
	if !ready {
		failure = FailureHandshake
	}
	name, ms := "run", lim.Run.Milliseconds()
	if de, ok := errors.AsType[*deadlineError](cause); ok {
		name = de.name
		switch de {
		case errHandshakeDeadline:
			ms = lim.Handshake.Milliseconds()
		case errEpochDeadline:
			ms = lim.Epoch.Milliseconds()
		}
	}
	d = d.str("failure", failure).str("deadline", name).num("deadline_ms", ms).num("abort-deadline-ms", ms)
	what := map[string]string{
		"write": "the input could not be delivered to the subject",
		"read":  "the subject's reply never came",
		"exit":  "the subject did not exit",
		"spawn": "the sandbox was still being built",
	}[during]
	return failedEnding(startCode(ready), fmt.Sprintf("the %s deadline expired during %s: %s", name, p, what), d)
}

func malformedEnding(p phase, input int, ce *control.Error) *ending {
	d := details{}.str("failure", FailureMalformed).str("phase", string(p)).str("during", "parse").str("rule", ce.Rule)
	if ce.Member != "" {
		d = d.str("member", ce.Member)
	}
	if input > 0 {
		d = d.num("input", int64(input))
	}
	return failedEnding(startCode(p.ready()), "the subject sent an invalid termverify.control/v1 message: "+ce.Error(), d)
}

// Lifecycle violations (details.violation), each a structurally valid
// message out of position.
const (
	violIdleMessage     = "message-while-idle"
	violIdleBytes       = "bytes-while-idle"
	violSecondReady     = "second-handshake-reply"
	violExited          = "exited-process-observation"
	violAfterTerminal   = "traffic-after-terminal"
	violAdapterKind     = "adapter-message-kind"
	violBeforeReply     = "message-before-handshake-reply"
	violDiagBeforeReply = "diagnostics-before-refusal"
	violAfterFinal      = "message-after-final-observation"
	violExitedInStart   = "exited-before-handshake-reply"
)

// lifecycleEnding is a peer-lifecycle failure. during is the phase word,
// as upstream writes it (handshake, epoch, stop; ours also idle, for the
// traffic upstream does not detect); phase, violation and input are ours.
func lifecycleEnding(p phase, violation string, kind control.Kind, input int, msg string) *ending {
	d := details{}.str("failure", FailureLifecycle).str("phase", string(p)).str("during", string(p)).str("violation", violation)
	if kind != "" {
		d = d.str("kind", string(kind))
	}
	if input > 0 {
		d = d.num("input", int64(input))
	}
	return failedEnding(startCode(p.ready()), msg, d)
}

// tooManyDiagnostics is seed 000's ceiling (control.MaxStartupDiagnostics
// for the handshake, control.MaxEpochDiagnostics for an epoch or the stop
// drain): the next diagnostic in one phase is a resource-limit breach, so
// peer-malformed. The details are upstream's (budget, and during the phase
// word: handshake, epoch or stop), plus ours: the rule that says it is a
// limit breach rather than a parse error, the same ceiling as limit, the
// phase and the input.
func tooManyDiagnostics(p phase, input int) *ending {
	limit := diagnosticLimit(p)
	d := details{}.str("failure", FailureMalformed).str("phase", string(p)).str("during", string(p)).
		num("budget", int64(limit)).str("rule", control.RuleDiagnostics).num("limit", int64(limit))
	if input > 0 {
		d = d.num("input", int64(input))
	}
	return failedEnding(startCode(p.ready()), fmt.Sprintf("the subject sent more than %d diagnostics in one %s", limit, p), d)
}

// diagnosticLimit is control/v1's ceiling of diagnostics for phase p.
func diagnosticLimit(p phase) int {
	if p.ready() {
		return control.MaxEpochDiagnostics
	}
	return control.MaxStartupDiagnostics
}

// misplaced is a structurally valid message in a position where the
// lifecycle allows nothing of its kind.
func (s *session) misplaced(m said) *ending {
	viol, why := violBeforeReply, "before its handshake reply"
	ready := s.phase.ready()
	switch k := m.kind; {
	case k.Direction() == control.AdapterToSubject:
		viol, why = violAdapterKind, "which only the adapter sends"
	case ready && (k == control.KindSessionReady || k == control.KindUnsupported || k == control.KindSessionFailed):
		viol, why = violSecondReady, "after the handshake was over"
	case ready:
		viol, why = violIdleMessage, "while no epoch was open"
	}
	return lifecycleEnding(s.phase, viol, m.kind, s.input, fmt.Sprintf("the subject sent %s %s", m.kind, why))
}

func (s *session) afterFinal(m said) *ending {
	return lifecycleEnding(s.phase, violAfterFinal, m.kind, s.input,
		fmt.Sprintf("the subject sent %s after the stop drain's final observation", m.kind))
}

// readEnd turns a read error into the run's ending.
func (s *session) readEnd(pctx context.Context, err error) *ending {
	if ce, ok := errors.AsType[*control.Error](err); ok {
		return malformedEnding(s.phase, s.input, ce)
	}
	if te, ok := errors.AsType[*terminalError](err); ok {
		return te.ending(s.phase, s.input)
	}
	if _, ok := errors.AsType[*transcript.BudgetError](err); ok {
		// PTY mode: an epoch's output larger than a record can hold.
		return s.rec.fail(err, s.phase)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		<-pctx.Done()
		during := "read"
		if s.conn.undelivered() {
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
	if te, ok := errors.AsType[*terminalError](err); ok {
		return te.ending(s.phase, s.input)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		<-pctx.Done()
		return s.abort(context.Cause(pctx), "write")
	}
	return &ending{host: fmt.Errorf("write the subject's stdin: %w", err)}
}

// abort is a deadline's or a signal's ending.
func (s *session) abort(cause error, during string) *ending {
	return abortEnding(cause, s.phase, during, s.input, s.lim)
}

// subjectFailure records a failure the subject reported itself, as
// upstream does: session.failed before readiness (adapter-start-failed),
// run.failed after it (adapter-runtime-failed). The error code is the
// adapter's; the subject's own code and details are kept in subject-code
// and subject-details (null when it gave none), its message after what
// upstream says.
func subjectFailure(ready bool, f transcript.Failure) *ending {
	msg := "the subject refused the session: "
	if ready {
		msg = "the subject reported run.failed: "
	}
	sd := canon.NullValue()
	if f.Details != nil {
		sd = *f.Details
	}
	d := details{}.str("subject-code", f.Code).val("subject-details", sd)
	return failedEnding(startCode(ready), msg+f.Message, d)
}
