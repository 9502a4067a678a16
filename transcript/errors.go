package transcript

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
)

// Error is the first violation Parse (or a Writer refusal) found. Callers
// branch on Rule, never on the message text.
type Error struct {
	Record int    // zero-based record index (= seq); -1 for a whole-file rule
	Line   int    // one-based line number; 0 for a whole-file rule
	Kind   string // the record's kind when known, else ""
	Rule   string // stable id, e.g. "framing.no-cr", "epoch.idle-observation"
	Err    error  // the cause (a *canon.Error, a *config.Error, or a detail); see Unwrap
}

func (e *Error) Error() string {
	detail := ""
	if e.Err != nil {
		detail = ": " + e.Err.Error()
	}
	switch {
	case e.Record < 0:
		return "transcript: " + e.Rule + detail
	case e.Kind != "":
		return "record " + strconv.Itoa(e.Record) + " (" + e.Kind + ", line " + strconv.Itoa(e.Line) + "): " + e.Rule + detail
	}
	return "record " + strconv.Itoa(e.Record) + " (line " + strconv.Itoa(e.Line) + "): " + e.Rule + detail
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Rule ids. JSON-level rules (json.*, number.*, limit.depth, limit.items,
// limit.values, limit.string-bytes, limit.record-string-bytes,
// limit.line-bytes) are canon's and keep canon's ids; the input payload
// rules are package input's, which holds an input script to them.
const (
	RuleTranscriptBytes = "limit.transcript-bytes"
	RuleRecords         = "limit.records"
	RuleBOM             = "framing.bom"
	RuleCR              = "framing.no-cr"
	RuleFinalLF         = "framing.final-lf"
	RuleEmptyLine       = "framing.empty-line"
	RuleCanonical       = "canonical.form"

	RuleEnvelopeMembers  = "envelope.members"
	RuleProtocol         = "envelope.protocol"
	RuleSeq              = "envelope.seq"
	RuleRunID            = "envelope.run-id"
	RuleID               = "envelope.id"
	RuleKind             = "envelope.kind"
	RulePayloadMembers   = "payload.members"
	RuleDuplicateID      = "placement.duplicate-id"
	RuleStartedFirst     = "placement.started-first"
	RuleStartedOnce      = "placement.started-once"
	RuleTerminalLast     = "placement.terminal"
	RuleStartedMembers   = "started.members"
	RuleSubject          = "started.subject"
	RuleFinishedExit     = "terminal.finished"
	RuleFailedError      = "terminal.failed"
	RuleUnsupportedEnd   = "terminal.unsupported"
	RuleCapMembers       = "capability.members"
	RuleCapStatus        = "capability.status"
	RuleCapOrder         = "capability.order"
	RuleCapEffective     = "capability.effective"
	RuleCapTimezone      = "capability.timezone"
	RuleCapTier          = "capability.tier"
	RuleCapDelivery      = "capability.delivery"
	RuleNegIncomplete    = "negotiation.incomplete"
	RuleNegUnsupported   = "negotiation.unsupported"
	RuleEpochReadiness   = "epoch.readiness"
	RuleEpochOpen        = "epoch.open"
	RuleIdleObservation  = "epoch.idle-observation"
	RuleIdleDiagnostic   = "epoch.idle-diagnostic"
	RuleAfterStop        = "epoch.after-stop"
	RuleAfterExit        = "epoch.after-exit"
	RuleInputAtMS        = "input.at-ms"
	RuleClock            = "input.clock"
	RuleInputText        = input.RuleText
	RuleKeyChord         = input.RuleKeyChord
	RuleResize           = input.RuleResize
	RuleMousePosition    = input.RuleMousePosition
	RuleMouseButton      = input.RuleMouseButton
	RuleMouseDelta       = input.RuleMouseDelta
	RuleClipboard        = input.RuleClipboard
	RuleClockAdvanced    = input.RuleClockAdvanced
	RuleDiagnostic       = "diagnostic.payload"
	RuleObservation      = "observation.payload"
	RuleUI               = "observation.ui"
	RuleRegion           = "observation.region"
	RuleFocus            = "observation.focus"
	RuleCursor           = "observation.cursor"
	RuleEvent            = "observation.event"
	RuleFrame            = "observation.frame"
	RuleProcess          = "observation.process"
	RuleExitMismatch     = "observation.exit-mismatch"
	RuleEvidenceTime     = "evidence.at-ms"
	RuleInternal         = "internal" // a bug in this package, never a verdict on the input
	RuleWriterState      = "writer.state"
	RuleWriterValue      = "writer.value"
	RuleWriterTerminalSz = "writer.terminal-size"
	RuleScriptLine       = input.RuleScriptLine // input.ReadScript: a script line is not {"kind": string, "payload": object}
	RuleInputKind        = input.RuleKind       // decoders: not an input kind, or one the caller did not admit
)

// DecodeError is the first violation DecodeSubject found: where, and
// which rule (a transcript rule id, or canon's for JSON-level rules).
// Callers branch on Rule, never on the message text. (An input script's
// refusal is an *input.Error.)
type DecodeError struct {
	Line int    // one-based line; 0 for a single value
	Path string // the member at fault, e.g. "subject.fixture.id"; "" for the whole value
	Rule string // stable id, e.g. "started.subject", "json.duplicate-member"
	Err  error  // the cause (a *canon.Error, or a detail); see Unwrap
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	b.WriteString(e.Rule)
	if e.Path != "" {
		b.WriteString(": " + e.Path)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// Limit names what a BudgetError ran out of.
type Limit string

// The limits the Writer counts while it writes.
const (
	LimitTranscriptBytes Limit = "transcript-bytes" // 32 MiB minus the terminal reserve
	LimitRecords         Limit = "records"          // 10,000 minus one kept for the terminal
	LimitLineBytes       Limit = "line-bytes"       // 4 MiB per canonical line
	LimitValues          Limit = "values"           // the per-record value budgets, by canon rule
	LimitTerminalBytes   Limit = "terminal-bytes"   // a terminal record larger than its reserve
)

// BudgetError is a Writer refusal: the record would exceed a v1 limit (or
// the room kept for the terminal record). Nothing was written; the
// transcript can still be ended, with FailBudget for example.
type BudgetError struct {
	Limit  Limit
	Detail string
	Err    error // the canon budget error, for LimitValues
}

func (e *BudgetError) Error() string {
	return "transcript budget " + string(e.Limit) + ": " + e.Detail
}

// Unwrap returns the canon budget error, if any.
func (e *BudgetError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBudget) true for every BudgetError.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// ErrBudget matches any *BudgetError with errors.Is.
var ErrBudget = errors.New("transcript budget exhausted")

// ErrNoTerminal is returned by Writer.Close when no terminal record was
// written: what was written so far is not a valid transcript.
var ErrNoTerminal = errors.New("transcript has no terminal record")

// ErrClosed is returned by Writer methods after Close.
var ErrClosed = errors.New("transcript writer is closed")

func detail(format string, args ...any) error {
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}

// fileErr is a whole-file violation.
func fileErr(rule string, cause error) *Error {
	return &Error{Record: -1, Rule: rule, Err: cause}
}

// lineErr is a violation on line index i (zero-based) before its kind is known.
func lineErr(i int, rule string, cause error) *Error {
	return &Error{Record: i, Line: i + 1, Rule: rule, Err: cause}
}

// canonErr turns a canon error into a line error keeping canon's rule id.
func canonErr(i int, err error) *Error {
	if ce, ok := errors.AsType[*canon.Error](err); ok {
		return lineErr(i, ce.Rule, err)
	}
	return lineErr(i, canon.RuleSyntax, err)
}
