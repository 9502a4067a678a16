package transcript

import (
	"sort"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// Protocol is the envelope protocol tag of every record.
const Protocol = "termverify.transcript/v1"

// SubjectFormat is run.started.payload.subject.format.
const SubjectFormat = "termverify.replay-subject/v1"

// Record kinds. The input kinds are package input's.
const (
	KindRunStarted     = "run.started"
	KindCapability     = "capability.result"
	KindInputText      = input.KindText
	KindInputKey       = input.KindKey
	KindInputResize    = input.KindResize
	KindInputMouse     = input.KindMouse
	KindInputClipboard = input.KindClipboard
	KindInputClock     = input.KindClock
	KindInputStop      = input.KindStop
	KindObservation    = "observation"
	KindDiagnostic     = "diagnostic"
	KindRunFinished    = "run.finished"
	KindRunFailed      = "run.failed"
	KindRunUnsupported = "run.unsupported"
)

// Reserved error codes of run.failed.error.code. The run.unsupported codes
// are the receipt vocabulary's: receipts.CodeUnsupported and
// receipts.CodeNotEnforced.
const (
	CodeAdapterStartFailed   = "adapter-start-failed"
	CodeAdapterRuntimeFailed = "adapter-runtime-failed"
)

// Selector is a versioned replay selector {id, version}.
type Selector struct{ ID, Version string }

// Application is the replay subject's application {id, version, build}.
type Application struct{ ID, Version, Build string }

// Platform is the optional replay platform {os, architecture}.
type Platform struct{ OS, Architecture string }

// Subject is run.started.payload.subject (format termverify.replay-subject/v1).
// Every string must match the identifier grammar [a-z0-9._-]+.
type Subject struct {
	Application Application
	Fixture     Selector
	Adapter     Selector
	Normalizer  Selector
	StateSchema Selector
	Platform    *Platform // optional
}

// Value returns the subject's JSON value.
func (s Subject) Value() canon.Value {
	sel := func(x Selector) canon.Value {
		return canon.ObjectValue(canon.M("id", canon.StringValue(x.ID)), canon.M("version", canon.StringValue(x.Version)))
	}
	m := []canon.Member{
		canon.M("format", canon.StringValue(SubjectFormat)),
		canon.M("application", canon.ObjectValue(
			canon.M("id", canon.StringValue(s.Application.ID)),
			canon.M("version", canon.StringValue(s.Application.Version)),
			canon.M("build", canon.StringValue(s.Application.Build)),
		)),
		canon.M("fixture", sel(s.Fixture)),
		canon.M("adapter", sel(s.Adapter)),
		canon.M("normalizer", sel(s.Normalizer)),
		canon.M("state_schema", sel(s.StateSchema)),
	}
	if s.Platform != nil {
		m = append(m, canon.M("platform", canon.ObjectValue(
			canon.M("os", canon.StringValue(s.Platform.OS)),
			canon.M("architecture", canon.StringValue(s.Platform.Architecture)),
		)))
	}
	return canon.ObjectValue(m...)
}

// deliveryValue returns d's JSON value (channel-tagged: the form emitters
// produce).
func deliveryValue(d *receipts.Delivery) canon.Value {
	m := []canon.Member{canon.M("channel", canon.StringValue(string(d.Channel)))}
	if d.Channel == receipts.SpawnEnv {
		names := make([]string, 0, len(d.Env))
		for k := range d.Env {
			names = append(names, k)
		}
		sort.Strings(names)
		env := make([]canon.Member, len(names))
		for i, k := range names {
			env[i] = canon.M(k, canon.StringValue(d.Env[k]))
		}
		m = append(m, canon.M("env", canon.ObjectValue(env...)))
		if d.Cwd != "" {
			m = append(m, canon.M("cwd", canon.StringValue(d.Cwd)))
		}
	}
	return canon.ObjectValue(m...)
}

// Receipt is one capability.result as Parse read it: the receipt, with its
// x-mechanism word when it has a string one, and the effective value it
// carries.
type Receipt struct {
	receipts.Receipt
	Effective canon.Value // applied only
}

// ExitKind says how a process ended.
type ExitKind string

// The two exit kinds.
const (
	ExitCode   ExitKind = "code"
	ExitSignal ExitKind = "signal"
)

// Exit is a process exit: {"kind":"code","value":int} or
// {"kind":"signal","value":"KILL"} (signal name without SIG).
type Exit struct {
	Kind   ExitKind
	Code   int64  // ExitCode
	Signal string // ExitSignal, non-empty
}

// Value returns the exit's JSON value.
func (e Exit) Value() canon.Value {
	if e.Kind == ExitSignal {
		return canon.ObjectValue(canon.M("kind", canon.StringValue("signal")), canon.M("value", canon.StringValue(e.Signal)))
	}
	return canon.ObjectValue(canon.M("kind", canon.StringValue("code")), canon.M("value", canon.IntValue(e.Code)))
}

// Bounds is a region's rectangle in cells.
type Bounds struct{ Column, Row, Columns, Rows int64 }

// Region is one UI region; Columns and Rows of its bounds are > 0.
type Region struct {
	ID, Role string
	Bounds   Bounds
}

// Cursor is the UI cursor.
type Cursor struct {
	Column, Row int64
	Visible     bool
}

// UI is an observation's ui member. Focus, when set, names a region;
// Mode is nullable.
type UI struct {
	Regions []Region
	Focus   *string
	Cursor  Cursor
	Mode    *string
}

// Event is one observation event; Data is any JSON value (null included).
type Event struct {
	Type string
	Data canon.Value
}

// Frame is an optional text frame: len(Lines) == Rows.
type Frame struct {
	Lines         []string
	Columns, Rows int64
}

// Process is an optional process state: running, or exited with Exit.
type Process struct {
	Exited bool
	Exit   Exit
}

// Observation is an observation record's payload without at_ms (the
// Writer stamps the current manual time). State is any JSON value; the
// zero Value is null.
type Observation struct {
	State   canon.Value
	Events  []Event
	UI      UI
	Frame   *Frame
	Process *Process
}

// payload builds the observation's payload in a, members in RFC 8785
// order so that the encoder writes them as they stand.
func (o *Observation) payload(ms int64, a *canon.Arena) canon.Value {
	regions := a.Items(len(o.UI.Regions))
	for i, r := range o.UI.Regions {
		regions[i] = a.Object(
			canon.M("bounds", a.Object(
				canon.M("column", canon.IntValue(r.Bounds.Column)),
				canon.M("columns", canon.IntValue(r.Bounds.Columns)),
				canon.M("row", canon.IntValue(r.Bounds.Row)),
				canon.M("rows", canon.IntValue(r.Bounds.Rows)),
			)),
			canon.M("id", canon.StringValue(r.ID)),
			canon.M("role", canon.StringValue(r.Role)),
		)
	}
	nullable := func(s *string) canon.Value {
		if s == nil {
			return canon.NullValue()
		}
		return canon.StringValue(*s)
	}
	events := a.Items(len(o.Events))
	for i, e := range o.Events {
		events[i] = a.Object(canon.M("data", e.Data), canon.M("type", canon.StringValue(e.Type)))
	}
	m := a.Members(6)[:0]
	m = append(m, at(ms), canon.M("events", canon.Value{Kind: canon.Array, Items: events}))
	if o.Frame != nil {
		lines := a.Items(len(o.Frame.Lines))
		for i, l := range o.Frame.Lines {
			lines[i] = canon.StringValue(l)
		}
		m = append(m, canon.M("frame", a.Object(
			canon.M("columns", canon.IntValue(o.Frame.Columns)),
			canon.M("lines", canon.Value{Kind: canon.Array, Items: lines}),
			canon.M("rows", canon.IntValue(o.Frame.Rows)),
		)))
	}
	if o.Process != nil {
		if o.Process.Exited {
			m = append(m, canon.M("process", a.Object(
				canon.M("exit", o.Process.Exit.Value()), canon.M("state", canon.StringValue("exited")))))
		} else {
			m = append(m, canon.M("process", a.Object(canon.M("state", canon.StringValue("running")))))
		}
	}
	m = append(m,
		canon.M("state", o.State),
		canon.M("ui", a.Object(
			canon.M("cursor", a.Object(
				canon.M("column", canon.IntValue(o.UI.Cursor.Column)),
				canon.M("row", canon.IntValue(o.UI.Cursor.Row)),
				canon.M("visible", canon.BoolValue(o.UI.Cursor.Visible)),
			)),
			canon.M("focus", nullable(o.UI.Focus)),
			canon.M("mode", nullable(o.UI.Mode)),
			canon.M("regions", canon.Value{Kind: canon.Array, Items: regions}),
		)),
	)
	return canon.Value{Kind: canon.Object, Members: m}
}

// Diagnostic is a diagnostic record's payload without at_ms. Details is
// optional (nil: absent) and may be any JSON value.
type Diagnostic struct {
	Code    string // non-empty
	Message string
	Details *canon.Value
}

// Failure is run.failed.payload.error: Code non-empty (see the reserved
// codes), Details optional.
type Failure struct {
	Code    string
	Message string
	Details *canon.Value
}

func errorShape(code, message string, details *canon.Value) canon.Value {
	m := []canon.Member{canon.M("code", canon.StringValue(code)), canon.M("message", canon.StringValue(message))}
	if details != nil {
		m = append(m, canon.M("details", *details))
	}
	return canon.ObjectValue(m...)
}

func at(ms int64) canon.Member { return canon.M("at_ms", canon.IntValue(ms)) }
