package supervisor

import (
	"strings"

	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/ptyrecord"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// The control/v1 adapter's edge: a subject's messages become the
// session's records here (saidOf), and inputs become messages
// (controlInput); recorder.go writes the records. Upstream's recording
// rules (ADAPTER-RULES.md, "How upstream's adapter runs a subject"): flat
// control regions become {id, role, bounds}, absent focus and mode become
// null, x- members are dropped (control.Parse keeps none), and adjacent
// terminal.output events with exactly {"chunk": s} data are merged.

// saidOf is a subject's control/v1 message as the session records it:
// its diagnostic under the code a subject may use, its observation under
// upstream's rules, its claims and refusals as the transcript spells them.
func saidOf(m control.Message) said {
	s := said{kind: m.Kind()}
	switch m := m.(type) {
	case control.Diagnostic:
		s.diag = subjectDiagnosticRecord(m)
	case control.Ready:
		s.obs = observationRecord(&m.Observation)
	case control.Observation:
		if s.ownExit = m.Process != nil && m.Process.State == control.ProcessExited; !s.ownExit {
			s.obs = observationRecord(&m)
		}
	case control.RunFinished:
		e := wireExit(m.Exit)
		s.exit = &e
	case control.RunFailed:
		s.failure = wireFailure(m.Error)
	case control.SessionFailed:
		s.failure = wireFailure(m.Error)
	case control.Unsupported:
		s.refusal = &receipts.Refusal{Constraint: m.Constraint, Code: m.Code, Message: m.Message}
	}
	return s
}

func wireFailure(f control.Failure) *transcript.Failure {
	return &transcript.Failure{Code: f.Code, Message: f.Message, Details: f.Details}
}

func observationRecord(o *control.Observation) transcript.Observation {
	out := transcript.Observation{
		State:  o.State,
		Events: mergeOutput(o.Events),
		UI: transcript.UI{
			Regions: make([]transcript.Region, len(o.UI.Regions)),
			Focus:   o.UI.Focus,
			Cursor:  transcript.Cursor{Column: o.UI.Cursor.Column, Row: o.UI.Cursor.Row, Visible: o.UI.Cursor.Visible},
			Mode:    o.UI.Mode,
		},
	}
	for i, r := range o.UI.Regions {
		out.UI.Regions[i] = transcript.Region{ID: r.ID, Role: r.Role,
			Bounds: transcript.Bounds{Column: r.Column, Row: r.Row, Columns: r.Columns, Rows: r.Rows}}
	}
	if f := o.Frame; f != nil {
		out.Frame = &transcript.Frame{Lines: f.Lines, Columns: f.Columns, Rows: f.Rows}
	}
	if p := o.Process; p != nil {
		// Only a running process reaches here: exited evidence from the
		// subject is refused before it is recorded.
		out.Process = &transcript.Process{}
	}
	return out
}

// mergeOutput joins runs of terminal.output events whose data is exactly
// {"chunk": string}, as upstream's recorder does.
func mergeOutput(events []control.Event) []transcript.Event {
	out := make([]transcript.Event, 0, len(events))
	for _, e := range events {
		chunk, ok := outputChunk(e)
		if ok && len(out) > 0 {
			if prev, pok := outputChunk(control.Event{Type: out[len(out)-1].Type, Data: out[len(out)-1].Data}); pok {
				merged := canon.ObjectValue(canon.M("chunk", canon.StringValue(prev+chunk)))
				out[len(out)-1].Data = merged
				continue
			}
		}
		out = append(out, transcript.Event{Type: e.Type, Data: e.Data})
	}
	return out
}

func outputChunk(e control.Event) (string, bool) {
	if e.Type != "terminal.output" || e.Data.Kind != canon.Object || len(e.Data.Members) != 1 {
		return "", false
	}
	m := e.Data.Members[0]
	if m.Key != "chunk" || m.Value.Kind != canon.String {
		return "", false
	}
	return m.Value.Str, true
}

// exitedObservation is upstream's synthesized end of a process: no state,
// no events, an empty UI, and the OS-observed exit.
func exitedObservation(exit transcript.Exit) transcript.Observation {
	return transcript.Observation{
		State:   canon.NullValue(),
		Events:  []transcript.Event{},
		UI:      transcript.UI{Regions: []transcript.Region{}},
		Process: &transcript.Process{Exited: true, Exit: exit},
	}
}

func wireExit(e control.Exit) transcript.Exit {
	if e.Kind == control.ExitSignal {
		return transcript.Exit{Kind: transcript.ExitSignal, Signal: e.Signal}
	}
	return transcript.Exit{Kind: transcript.ExitCode, Code: e.Code}
}

// osExit is the exit our PID-1 init observed. A signal death is
// {"kind":"signal","value":"KILL"}: the name without SIG, as upstream's
// POSIX terminal binding spells it (upstream's adapter itself reports a
// negative code).
func osExit(e sandbox.Exit) transcript.Exit { return ptyrecord.Exit(e) }

// DiagExitMismatch is upstream's adapter diagnostic: the subject's claimed
// exit differs from the OS-observed one (details: claimed, observed).
const DiagExitMismatch = "exit-record-mismatch"

// ReservedDiagnosticPrefix goes before the code of a subject's diagnostic
// that uses a code the adapter reserves (subjectDiagnosticCode).
const ReservedDiagnosticPrefix = "subject:"

// subjectDiagnosticRecord is the record of a diagnostic the subject sent:
// its message and details as sent, its code as subjectDiagnosticCode
// gives it.
func subjectDiagnosticRecord(d control.Diagnostic) transcript.Diagnostic {
	return transcript.Diagnostic{Code: subjectDiagnosticCode(d.Code), Message: d.Message, Details: d.Details}
}

// subjectDiagnosticCode is the code a subject's diagnostic is recorded
// under. The adapter's own codes mean that the adapter observed something
// (an exit-record-mismatch's observed exit is the OS's), so a subject may
// not record under them: a reserved code gets ReservedDiagnosticPrefix
// before it, every other code is kept. Reserved are upstream's adapter
// diagnostic (DiagExitMismatch), every code of PTY mode's terminal-
// family (the ones it has and any it gains), the transcript's reserved
// failure codes, which upstream says are never diagnostics, and the
// prefix itself, so that the subject's own code is always the recorded
// one with one prefix taken off.
func subjectDiagnosticCode(code string) string {
	switch {
	case code == DiagExitMismatch,
		strings.HasPrefix(code, "terminal-"),
		code == transcript.CodeAdapterStartFailed, code == transcript.CodeAdapterRuntimeFailed,
		code == receipts.CodeUnsupported, code == receipts.CodeNotEnforced,
		strings.HasPrefix(code, ReservedDiagnosticPrefix):
		return ReservedDiagnosticPrefix + code
	}
	return code
}

// controlInput is the wire message for an input; now is the manual time
// after the Writer recorded it (so input.clock carries the advanced time).
func controlInput(in input.Input, now int64) control.Message {
	switch v := in.(type) {
	case input.Text:
		return control.Text{Text: v.Text}
	case input.Key:
		return control.Key{Keys: v.Keys}
	case input.Resize:
		return control.Resize{Columns: v.Columns, Rows: v.Rows}
	case input.ClockAdvanced:
		return control.Clock{AtMS: now}
	}
	return control.Stop{}
}

// details builds a run.failed details object; members are sorted by the
// canonical writer.
type details []canon.Member

func (d details) str(k, v string) details { return append(d, canon.M(k, canon.StringValue(v))) }
func (d details) num(k string, v int64) details {
	return append(d, canon.M(k, canon.IntValue(v)))
}
func (d details) val(k string, v canon.Value) details { return append(d, canon.M(k, v)) }
func (d details) value() *canon.Value {
	v := canon.ObjectValue(d...)
	return &v
}
