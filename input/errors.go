package input

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Rule ids of the refusals. They are the transcript's ids for the same
// rules (a script line is refused for the reason its record would be), and
// package transcript takes its input rules from here; JSON-level rules
// (json.*, number.*, limit.line-bytes, ...) are internal/canon's.
const (
	RuleText           = "input.text"
	RuleKeyChord       = "input.key.chord"
	RuleResize         = "input.resize"
	RuleMousePosition  = "input.mouse.position"
	RuleMouseButton    = "input.mouse.button"
	RuleMouseDelta     = "input.mouse.delta"
	RuleClipboard      = "input.clipboard-set"
	RuleClockAdvanced  = "input.clock-advanced"
	RuleKind           = "input.kind"  // not an input kind, or one the caller did not admit
	RuleScriptLine     = "script.line" // a script line is not {"kind": string, "payload": object}
	RulePayloadMembers = "payload.members"
	RuleAfterStop      = "epoch.after-stop"
	// RuleScriptBytes is the transcript's limit.transcript-bytes: every
	// input of a script is recorded in one transcript.
	RuleScriptBytes = "limit.transcript-bytes"
)

// Error is the first violation ReadScript, Check or DecodeRecord found:
// where, and which rule. Callers branch on Rule, never on the message
// text.
type Error struct {
	Line int    // one-based line of an input script; 0 for a whole-script rule or a single value
	Path string // the member at fault, e.g. "payload" or "kind"; "" for the whole line
	Rule string // stable id, e.g. "input.key.chord", "json.duplicate-member"
	Err  error  // the cause (a *canon.Error, or a detail); see Unwrap
}

func (e *Error) Error() string {
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
func (e *Error) Unwrap() error { return e.Err }

func detail(format string, args ...any) error {
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}
