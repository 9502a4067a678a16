package transcript

import (
	"errors"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// This file reads the records of a parsed transcript back into the types
// the Writer takes (records.go), as decode.go does for inputs: callers
// (replay, compare, the CLI) get a run's subject, its observations and its
// ending as typed values and never walk canon.Value trees. Each accessor
// reports false for a record of another kind. On a record Parse returned
// every member read is present and well typed; on one built by hand a
// missing or mistyped member reads as its zero value, never a panic. x-
// members are not read: no typed value carries them. The values returned share memory with the record (State, Event.Data,
// Details): do not modify them.

// MaxBytes is the largest transcript Read and Parse accept, every LF
// included (seed 000's fixed v1 budget); Read stops after MaxBytes + 1.
const MaxBytes = canon.MaxTranscriptBytes

// Subject returns run.started's replay subject, decoded by DecodeSubject
// (so its error for a record that has none, or another kind's).
func (r *Record) Subject() (Subject, error) {
	if r.Kind != KindRunStarted {
		return Subject{}, &DecodeError{Path: "subject", Rule: RuleSubject, Err: errors.New("only run.started has a subject, not " + r.Kind)}
	}
	return DecodeSubject(memberOf(r.Payload(), "subject"))
}

// Subject returns the run's replay subject (run.started's).
func (t *Transcript) Subject() (Subject, error) {
	if len(t.Records) == 0 {
		return Subject{}, &DecodeError{Path: "subject", Rule: RuleSubject, Err: errors.New("no run.started")}
	}
	return t.Records[0].Subject()
}

// Receipt returns a capability.result's receipt, as Receipts lists it.
func (r *Record) Receipt() (Receipt, bool) {
	if r.Kind != KindCapability {
		return Receipt{}, false
	}
	return receiptOf(r), true
}

// Observation returns an observation's payload, without at_ms (the
// Writer's manual time, Record.AtMS).
func (r *Record) Observation() (Observation, bool) {
	if r.Kind != KindObservation {
		return Observation{}, false
	}
	p := r.Payload()
	o := Observation{State: valueOf(p, "state"), UI: uiOf(memberOf(p, "ui"))}
	if ev := memberOf(p, "events"); ev != nil {
		o.Events = make([]Event, len(ev.Items))
		for i := range ev.Items {
			e := &ev.Items[i]
			o.Events[i] = Event{Type: strOf(e, "type"), Data: valueOf(e, "data")}
		}
	}
	if f := memberOf(p, "frame"); f != nil {
		lines := memberOf(f, "lines")
		fr := &Frame{Columns: intOf(f, "columns"), Rows: intOf(f, "rows")}
		if lines != nil {
			fr.Lines = make([]string, len(lines.Items))
			for i := range lines.Items {
				fr.Lines[i] = lines.Items[i].Str
			}
		}
		o.Frame = fr
	}
	if pr := memberOf(p, "process"); pr != nil {
		o.Process = &Process{}
		if strOf(pr, "state") == "exited" {
			o.Process.Exited = true
			o.Process.Exit, _ = parseExit(memberOf(pr, "exit"))
		}
	}
	return o, true
}

// uiOf reads an observation's ui member.
func uiOf(ui *canon.Value) UI {
	var out UI
	if regions := memberOf(ui, "regions"); regions != nil {
		out.Regions = make([]Region, len(regions.Items))
		for i := range regions.Items {
			rg := &regions.Items[i]
			b := memberOf(rg, "bounds")
			out.Regions[i] = Region{ID: strOf(rg, "id"), Role: strOf(rg, "role"), Bounds: Bounds{
				Column: intOf(b, "column"), Row: intOf(b, "row"), Columns: intOf(b, "columns"), Rows: intOf(b, "rows"),
			}}
		}
	}
	out.Focus, out.Mode = nullableStr(ui, "focus"), nullableStr(ui, "mode")
	c := memberOf(ui, "cursor")
	out.Cursor = Cursor{Column: intOf(c, "column"), Row: intOf(c, "row")}
	if v := memberOf(c, "visible"); v != nil {
		out.Cursor.Visible = v.Bool
	}
	return out
}

// AtMS returns the record's at_ms: the manual time of an input,
// observation or diagnostic; false for the kinds that carry none.
func (r *Record) AtMS() (int64, bool) {
	v := memberOf(r.Payload(), "at_ms")
	if v == nil {
		return 0, false
	}
	return v.Int()
}

// Diagnostic returns a diagnostic's payload, without at_ms.
func (r *Record) Diagnostic() (Diagnostic, bool) {
	if r.Kind != KindDiagnostic {
		return Diagnostic{}, false
	}
	p := r.Payload()
	return Diagnostic{Code: strOf(p, "code"), Message: strOf(p, "message"), Details: memberOf(p, "details")}, true
}

// Exit returns run.finished's exit.
func (r *Record) Exit() (Exit, bool) {
	if r.Kind != KindRunFinished {
		return Exit{}, false
	}
	e, _ := parseExit(memberOf(r.Payload(), "exit"))
	return e, true
}

// Failure returns run.failed's error.
func (r *Record) Failure() (Failure, bool) {
	if r.Kind != KindRunFailed {
		return Failure{}, false
	}
	e := memberOf(r.Payload(), "error")
	return Failure{Code: strOf(e, "code"), Message: strOf(e, "message"), Details: memberOf(e, "details")}, true
}

// Refusal returns run.unsupported's constraint, code and message (its
// optional details, which upstream admits, are not part of a Refusal).
func (r *Record) Refusal() (receipts.Refusal, bool) {
	if r.Kind != KindRunUnsupported {
		return receipts.Refusal{}, false
	}
	p := r.Payload()
	return receipts.Refusal{Constraint: receipts.Constraint(strOf(p, "constraint")), Code: strOf(p, "code"), Message: strOf(p, "message")}, true
}

// memberOf is obj's member name, or nil when obj is nil, not an object or
// without it.
func memberOf(obj *canon.Value, name string) *canon.Value {
	if obj == nil {
		return nil
	}
	v, _ := obj.Get(name)
	return v
}

// valueOf is obj's member name, or null.
func valueOf(obj *canon.Value, name string) canon.Value {
	if v := memberOf(obj, name); v != nil {
		return *v
	}
	return canon.Value{}
}

// strOf is obj's string member name, or "".
func strOf(obj *canon.Value, name string) string {
	s, _ := canon.Str(memberOf(obj, name))
	return s
}

// intOf is obj's integer member name, or 0.
func intOf(obj *canon.Value, name string) int64 {
	v := memberOf(obj, name)
	if v == nil {
		return 0
	}
	n, _ := v.Int()
	return n
}

// nullableStr is obj's member name when it is a string, nil otherwise
// (JSON null, as the Writer writes a nil *string).
func nullableStr(obj *canon.Value, name string) *string {
	v := memberOf(obj, name)
	if v == nil || v.Kind != canon.String {
		return nil
	}
	s := v.Str
	return &s
}
