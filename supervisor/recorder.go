package supervisor

import (
	"errors"
	"fmt"
	"io"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/ptyrecord"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// recorder owns the run's transcript Writer and what the supervisor must
// remember about it: the negotiated receipts and whether they are out yet.
// Everything the run records goes through it, from run.started to the
// terminal record; a Writer refusal becomes the run's ending in fail.
type recorder struct {
	w        *transcript.Writer
	outcome  receipts.Outcome
	receipts bool // the seven applied receipts were written
}

func newRecorder(out io.Writer, runID string) *recorder {
	return &recorder{w: transcript.NewWriter(out, runID)}
}

// start records run.started.
func (r *recorder) start(cfg config.Config, subject transcript.Subject) error {
	if err := r.w.Start(cfg, subject); err != nil {
		return fmt.Errorf("record run.started: %w", err)
	}
	return nil
}

func (r *recorder) input(in input.Input) error               { return r.w.Input(in) }
func (r *recorder) observe(o transcript.Observation) error   { return r.w.Observe(o) }
func (r *recorder) diagnostic(d transcript.Diagnostic) error { return r.w.Diagnostic(d) }

// now is the manual clock as the Writer keeps it: input.clock carries
// the time after its record.
func (r *recorder) now() int64 { return r.w.Now() }

// room reports whether n more records of at most size bytes in all fit
// the transcript's budgets with the terminal record's room kept.
func (r *recorder) room(n, size int) bool { return r.w.Room(n, size) }

// fail maps a Writer refusal to the run's ending: a budget breach ends
// with FailBudget; a record the transcript's rules refuse can only be
// subject evidence (inputs were checked before the run), so the subject is
// at fault; any other error means the transcript file itself failed.
//
// A refusal that comes after the epoch's input was sent (which
// session.sendFirst exists to rule out) is recorded as such: the failure
// says the subject was sent an input the transcript does not hold.
func (r *recorder) fail(err error, p phase) *ending {
	if err == nil {
		return nil
	}
	_, sent := errors.AsType[*sentUnrecordedError](err)
	if errors.Is(err, transcript.ErrBudget) && !sent {
		return &ending{budget: err}
	}
	if be, ok := errors.AsType[*transcript.BudgetError](err); ok {
		d := details{}.str("failure", FailureBudget).str("limit", string(be.Limit)).str("phase", string(p)).val("input_sent_unrecorded", canon.BoolValue(true))
		return failedEnding(startCode(p.ready()), "the transcript reached a v1 limit: "+err.Error(), d)
	}
	if te, ok := errors.AsType[*transcript.Error](err); ok {
		d := details{}.str("failure", FailureTranscript).str("phase", string(p)).str("rule", te.Rule)
		if sent {
			d = d.val("input_sent_unrecorded", canon.BoolValue(true))
		}
		return failedEnding(startCode(p.ready()), "the subject's evidence cannot be recorded: "+err.Error(), d)
	}
	return &ending{host: err}
}

// finish writes the terminal record for end and closes the transcript.
func (r *recorder) finish(end *ending) (Result, error) {
	var res Result
	var err error
	switch {
	case end.host != nil:
		return res, end.host
	case end.unsupported != nil:
		res.Outcome = transcript.KindRunUnsupported
		res.Refusal = end.unsupported
	case end.finished != nil:
		res.Outcome, res.Exit = transcript.KindRunFinished, end.finished
		var ext []canon.Member
		if end.claimed != nil {
			ext = append(ext, canon.M("x-claimed-exit", end.claimed.Value()))
		}
		err = r.w.Finish(*end.finished, ext...)
	case end.failed != nil:
		res.Outcome, res.Error = transcript.KindRunFailed, end.failed
		err = r.w.Fail(*end.failed)
	case end.budget != nil:
		err = end.budget
	}
	if err != nil {
		// The terminal record itself did not fit (or something before it
		// did not): the room kept for FailBudget always does.
		if ferr := r.w.FailBudget(err); ferr != nil {
			return res, fmt.Errorf("record the terminal record: %w", ferr)
		}
		res.Outcome, res.Exit = transcript.KindRunFailed, nil
		res.Error = &transcript.Failure{Code: "transcript-budget", Message: err.Error()}
	}
	res.Records = r.w.Records()
	if err := r.w.Close(); err != nil {
		return res, fmt.Errorf("close transcript: %w", err)
	}
	return res, nil
}

// writeReceipts writes the seven applied receipts of the negotiated
// outcome, once. They are deferred until the subject's first message so
// that a subject's session.unsupported can still be recorded truthfully as
// an unsupported receipt (see docs/SUPERVISOR.md).
func (r *recorder) writeReceipts() error {
	if r.receipts {
		return nil
	}
	r.receipts = true
	for _, rc := range r.outcome.Receipts {
		if err := r.w.Applied(rc.Constraint, rc.Tier, rc.Delivery, mechanism(rc)...); err != nil {
			return err
		}
	}
	return nil
}

// refuse records a negotiation that ends the run: the applied prefix, the
// unsupported receipt, run.unsupported.
func (r *recorder) refuse(out receipts.Outcome) *ending {
	ref := out.Refusal
	// These are the run's receipts, written or not: never the seven
	// applied ones after them.
	r.receipts = true
	for _, rc := range out.Receipts {
		var err error
		if rc.Status == receipts.Unsupported {
			err = r.w.Unsupported(rc.Constraint, rc.Reason)
		} else {
			err = r.w.Applied(rc.Constraint, rc.Tier, rc.Delivery, mechanism(rc)...)
		}
		if err != nil {
			return r.fail(err, phaseNegotiation)
		}
	}
	if err := r.w.EndUnsupported(ref.Code, ref.Message); err != nil {
		return r.fail(err, phaseNegotiation)
	}
	return &ending{unsupported: ref}
}

// subjectRefused records the subject's session.unsupported as the truer
// record ADAPTER-RULES.md allows: the receipts before the refused
// constraint as applied, the refused one unsupported, run.unsupported with
// the subject's code.
func (r *recorder) subjectRefused(c receipts.Constraint, code, message string) *ending {
	out := receipts.Outcome{Refusal: &receipts.Refusal{Constraint: c, Code: code, Message: message}}
	for _, rc := range r.outcome.Receipts {
		if rc.Constraint == c {
			break
		}
		out.Receipts = append(out.Receipts, rc)
	}
	out.Receipts = append(out.Receipts, receipts.Receipt{Constraint: c, Status: receipts.Unsupported,
		Reason: "the subject refused it: " + message})
	return r.refuse(out)
}

// mechanism names an os-tier receipt's mechanism in an x-mechanism
// member (ptyrecord.XMechanism).
func mechanism(rc receipts.Receipt) []canon.Member { return ptyrecord.XMechanism(rc) }
