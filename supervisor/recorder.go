package supervisor

import (
	"errors"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// recorder is the transcript writer plus what the supervisor must
// remember about it: whether the receipts are out yet, and whether the
// readiness observation was written (which decides adapter-start-failed
// versus adapter-runtime-failed).
type recorder struct {
	w        *transcript.Writer
	outcome  receipts.Outcome
	receipts bool // the seven applied receipts were written
}

// fail maps a Writer refusal to the run's ending: a budget breach ends
// with FailBudget; a record the transcript's rules refuse can only be
// subject evidence (inputs were checked before the run), so the subject is
// at fault; any other error means the transcript file itself failed.
//
// A refusal that comes after the epoch's input was sent (which
// session.sendFirst exists to rule out) is recorded as such: the failure
// says the subject was sent an input the transcript does not hold.
func (r *recorder) fail(err error, ready bool, phase string) *ending {
	if err == nil {
		return nil
	}
	_, sent := errors.AsType[*sentUnrecordedError](err)
	if errors.Is(err, transcript.ErrBudget) && !sent {
		return &ending{budget: err}
	}
	if be, ok := errors.AsType[*transcript.BudgetError](err); ok {
		d := details{}.str("failure", FailureBudget).str("limit", string(be.Limit)).str("phase", phase).val("input_sent_unrecorded", canon.BoolValue(true))
		return failedEnding(startCode(ready), "the transcript reached a v1 limit: "+err.Error(), d)
	}
	if te, ok := errors.AsType[*transcript.Error](err); ok {
		d := details{}.str("failure", FailureTranscript).str("phase", phase).str("rule", te.Rule)
		if sent {
			d = d.val("input_sent_unrecorded", canon.BoolValue(true))
		}
		return failedEnding(startCode(ready), "the subject's evidence cannot be recorded: "+err.Error(), d)
	}
	return &ending{host: err}
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
		if err := r.w.Applied(rc.Constraint, rc.Tier, delivery(rc.Delivery), mechanism(rc)...); err != nil {
			return err
		}
	}
	return nil
}

// refuse records a negotiation that ends the run: the applied prefix, the
// unsupported receipt, run.unsupported.
func (r *recorder) refuse(out receipts.Outcome) *ending {
	ref := out.Refusal
	for _, rc := range out.Receipts {
		var err error
		if rc.Status == receipts.Unsupported {
			err = r.w.Unsupported(rc.Constraint, rc.Reason)
		} else {
			err = r.w.Applied(rc.Constraint, rc.Tier, delivery(rc.Delivery), mechanism(rc)...)
		}
		if err != nil {
			return r.fail(err, false, "negotiation")
		}
	}
	if err := r.w.EndUnsupported(ref.Code, ref.Message); err != nil {
		return r.fail(err, false, "negotiation")
	}
	r.receipts = true
	return &ending{unsupported: &refusal{Constraint: ref.Constraint, Code: ref.Code, Message: ref.Message}}
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

func delivery(d *receipts.Delivery) *transcript.Delivery {
	if d == nil {
		return nil
	}
	return &transcript.Delivery{Channel: d.Channel, Env: d.Env, Cwd: d.Cwd}
}

// mechanism names an os-tier receipt's mechanism in an x-mechanism member:
// a deterministic word (never a path, pid or namespace id), so auditors
// see how the constraint was enforced and transcripts stay replay-comparable.
func mechanism(rc receipts.Receipt) []canon.Member {
	if rc.Tier != receipts.OS || rc.Mechanism == "" {
		return nil
	}
	return []canon.Member{canon.M("x-mechanism", canon.StringValue(rc.Mechanism))}
}
