package control

import (
	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// Protocol is the envelope protocol tag of every v1 message.
const Protocol = "termverify.control/v1"

// The diagnostic ceilings of seed 000 ("Fixed v1 resource limits"): the
// codec declares them, the supervisor counts them, and the 101st diagnostic
// before session.ready, or within one epoch or stop drain, is
// peer-malformed (report it with RuleDiagnostics).
const (
	MaxStartupDiagnostics = 100
	MaxEpochDiagnostics   = 100
)

// Kind is a message kind from the v1 set.
type Kind string

// The thirteen v1 kinds: six the adapter sends, seven the subject sends.
// The inputs are the input vocabulary's kinds, but for the clock: control/v1
// carries input.clock_advanced as input.clock, with the advanced time.
const (
	KindSessionHello  Kind = "session.hello"
	KindInputText     Kind = input.KindText
	KindInputKey      Kind = input.KindKey
	KindInputResize   Kind = input.KindResize
	KindInputClock    Kind = "input.clock"
	KindInputStop     Kind = input.KindStop
	KindUnsupported   Kind = "session.unsupported"
	KindSessionFailed Kind = "session.failed"
	KindSessionReady  Kind = "session.ready"
	KindDiagnostic    Kind = "diagnostic"
	KindObservation   Kind = "observation"
	KindRunFinished   Kind = "run.finished"
	KindRunFailed     Kind = "run.failed"
)

// Kinds returns the thirteen v1 kinds, adapter kinds first, each group in
// the order seed 000 lists it.
func Kinds() []Kind {
	return []Kind{
		KindSessionHello, KindInputText, KindInputKey, KindInputResize, KindInputClock, KindInputStop,
		KindUnsupported, KindSessionFailed, KindSessionReady, KindDiagnostic, KindObservation, KindRunFinished, KindRunFailed,
	}
}

// Direction says which peer sends a kind.
type Direction uint8

// The two directions. The zero Direction belongs to no v1 kind.
const (
	AdapterToSubject Direction = 1 + iota // written to the subject's stdin
	SubjectToAdapter                      // read from the subject's stdout
)

func (d Direction) String() string {
	switch d {
	case AdapterToSubject:
		return "adapter→subject"
	case SubjectToAdapter:
		return "subject→adapter"
	}
	return "no direction"
}

// Direction returns who sends messages of kind k, or 0 if k is not a v1 kind.
// Parse accepts both directions: deciding that a subject sent an adapter
// kind is the supervisor's lifecycle check, not a codec rule.
func (k Kind) Direction() Direction {
	switch k {
	case KindSessionHello, KindInputText, KindInputKey, KindInputResize, KindInputClock, KindInputStop:
		return AdapterToSubject
	case KindUnsupported, KindSessionFailed, KindSessionReady, KindDiagnostic, KindObservation, KindRunFinished, KindRunFailed:
		return SubjectToAdapter
	}
	return 0
}

// Message is one decoded v1 message: one of the thirteen types below, each
// a value type. The set is closed; the unexported method keeps it so.
//
// Messages never carry x- extension members: they have no meaning to a
// generic v1 peer (seed 000), and the transcript drops them. The raw line
// from Reader.Next keeps them for whoever needs the bytes.
type Message interface {
	Kind() Kind
	payload() canon.Value
}

// Hello is session.hello: the run's identity and its non-negotiable
// configuration. AtMS must equal Config.Clock.InitialMS (a producer
// obligation the codec does not check); NewHello sets it so.
type Hello struct {
	RunID  string
	Config config.Config
	AtMS   int64
}

// NewHello returns the session.hello for a run, with AtMS taken from the
// configuration's initial manual time as the protocol requires.
func NewHello(runID string, cfg config.Config) Hello {
	return Hello{RunID: runID, Config: cfg, AtMS: cfg.Clock.InitialMS}
}

// Text is input.text: literal text input.
type Text struct{ Text string }

// Key is input.key: one termverify.key/v1 chord. The codec checks only that
// Keys is a non-empty list; chord validity (input.ValidChord) is the
// producer's obligation.
type Key struct{ Keys []string }

// Resize is input.resize: a terminal dimension change.
type Resize struct{ Columns, Rows int64 }

// Clock is input.clock: the manual time from this epoch onward.
type Clock struct{ AtMS int64 }

// Stop is input.stop: a request for cooperative shutdown.
type Stop struct{}

// Unsupported is session.unsupported: the subject refuses one constraint.
type Unsupported struct {
	Constraint receipts.Constraint
	Code       string       // receipts.CodeUnsupported or receipts.CodeNotEnforced
	Message    string       // human-readable reason
	Details    *canon.Value // optional structured detail; nil when absent
}

// Failure is the {code, message, details?} error shape shared by
// session.failed and run.failed (the transcript's run.failed error).
type Failure struct {
	Code    string       // non-empty
	Message string       // human-readable
	Details *canon.Value // optional; nil when absent
}

// SessionFailed is session.failed: the subject cannot start the run.
type SessionFailed struct{ Error Failure }

// Ready is session.ready: the readiness observation. Its process, if
// reported, is running: Parse rejects exited-process evidence here.
type Ready struct{ Observation Observation }

// Diagnostic is diagnostic: non-fatal evidence inside an epoch or before
// readiness.
type Diagnostic struct {
	Code    string // non-empty
	Message string
	Details *canon.Value // optional; nil when absent
}

// Observation is observation: the subject's view at epoch quiescence, and
// the payload of session.ready.
//
// An observation reporting an exited process is valid here (Parse accepts
// it); seed 000 makes rejecting it outside readiness the adapter's
// peer-lifecycle decision.
type Observation struct {
	State   canon.Value // opaque subject state, JSON null allowed
	UI      UI
	Events  []Event
	Frame   *Frame   // nil when the subject has no rendered surface
	Process *Process // nil when absent
}

// UI is the structured UI observation with flat regions, as on the wire.
// Focus and Mode are nil when absent or null.
type UI struct {
	Regions []Region
	Focus   *string // names a region
	Cursor  Cursor
	Mode    *string
}

// Region is one flat UI region: id, role and its cell rectangle.
type Region struct {
	ID, Role      string
	Column, Row   int64 // ≥ 0
	Columns, Rows int64 // > 0
}

// Cursor is the terminal cursor.
type Cursor struct {
	Column, Row int64 // ≥ 0
	Visible     bool
}

// Event is one application event, in emission order; Data is opaque.
type Event struct {
	Type string // non-empty
	Data canon.Value
}

// Frame is the rendered surface: exactly Rows lines.
type Frame struct {
	Lines         []string
	Columns, Rows int64 // > 0
}

// ProcessState is the process observation's state.
type ProcessState string

// The two process states.
const (
	ProcessRunning ProcessState = "running"
	ProcessExited  ProcessState = "exited"
)

// Process is the process observation: Exit is set exactly when State is
// ProcessExited.
type Process struct {
	State ProcessState
	Exit  *Exit
}

// ExitKind says how a process ended.
type ExitKind string

// The two exit kinds.
const (
	ExitCode   ExitKind = "code"
	ExitSignal ExitKind = "signal"
)

// Exit is an exit record: Code for ExitCode, Signal (non-empty) for
// ExitSignal. The other field is zero.
type Exit struct {
	Kind   ExitKind
	Code   int64
	Signal string
}

// RunFinished is run.finished: the exit the subject claims. The supervisor
// trusts the OS-observed exit, not this claim.
type RunFinished struct{ Exit Exit }

// RunFailed is run.failed: the subject reports its own failure.
type RunFailed struct{ Error Failure }

// Kind methods.

// Kind returns KindSessionHello.
func (Hello) Kind() Kind { return KindSessionHello }

// Kind returns KindInputText.
func (Text) Kind() Kind { return KindInputText }

// Kind returns KindInputKey.
func (Key) Kind() Kind { return KindInputKey }

// Kind returns KindInputResize.
func (Resize) Kind() Kind { return KindInputResize }

// Kind returns KindInputClock.
func (Clock) Kind() Kind { return KindInputClock }

// Kind returns KindInputStop.
func (Stop) Kind() Kind { return KindInputStop }

// Kind returns KindUnsupported.
func (Unsupported) Kind() Kind { return KindUnsupported }

// Kind returns KindSessionFailed.
func (SessionFailed) Kind() Kind { return KindSessionFailed }

// Kind returns KindSessionReady.
func (Ready) Kind() Kind { return KindSessionReady }

// Kind returns KindDiagnostic.
func (Diagnostic) Kind() Kind { return KindDiagnostic }

// Kind returns KindObservation.
func (Observation) Kind() Kind { return KindObservation }

// Kind returns KindRunFinished.
func (RunFinished) Kind() Kind { return KindRunFinished }

// Kind returns KindRunFailed.
func (RunFailed) Kind() Kind { return KindRunFailed }
