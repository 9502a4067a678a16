package interminai

import "fmt"

// Rules are the stable identifiers of what this package enforces. Callers
// and tests branch on Rule, never on the message text; the message text is
// what a daemon sends back in an error reply.
const (
	RuleTooLong      = "frame.too-long"     // the line exceeds its limit (Error.Limit)
	RuleUnterminated = "frame.unterminated" // the connection ended before the newline

	RuleUTF8      = "json.utf8"       // invalid UTF-8, or a lone surrogate escape
	RuleSyntax    = "json.syntax"     // not JSON
	RuleTrailing  = "json.trailing"   // bytes after the one JSON value
	RuleDepth     = "json.depth"      // nested deeper than MaxDepth
	RuleMembers   = "json.members"    // an object with more than MaxMembers members
	RuleDuplicate = "json.duplicate"  // a member name twice in one object
	RuleNotObject = "json.not-object" // the line is JSON but not an object

	RuleMissingType    = "request.missing-type"    // no "type" member, or null
	RuleTypeNotString  = "request.type-not-string" // "type" is not a string
	RuleUnknownCommand = "request.unknown-command" // "type" names no command
	RuleMissingField   = "request.missing-field"   // a required member is absent
	RuleFieldType      = "request.field-type"      // a member has the wrong JSON type
	RuleFieldValue     = "request.field-value"     // a member's value is out of its set or range
	RuleWaitModes      = "request.wait-modes"      // WAIT asks for more than one mode

	RuleSignal = "signal.invalid" // ParseSignal: no such signal
	RuleSize   = "size.invalid"   // ParseSize or RESIZE: not COLSxROWS in bounds

	RuleReply = "reply.invalid" // a reply line that is not a seed reply
)

// Error is a request or reply line this package refuses, or a signal or
// size it cannot parse. Its message is the text a daemon puts in the error
// reply: the seed's own wording where the seed gives one ("Invalid request:
// missing 'type' field", "Unknown command: X"), otherwise the same
// "Invalid request: …" form naming the member.
type Error struct {
	Rule   string // one of the Rule constants
	Field  string // the member read: "signal", "data.signal"; "" for line-level rules
	Offset int64  // byte offset in the line for json.* rules; -1 otherwise
	Limit  int    // the bound exceeded, for frame.too-long, json.depth and json.members
	Err    error  // cause, if any; returned by Unwrap
	msg    string
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// requestErr is an *Error about a member of the request: "Invalid request:"
// and the member's problem.
func requestErr(rule, field, format string, args ...any) *Error {
	return &Error{Rule: rule, Field: field, Offset: -1, msg: "Invalid request: " + fmt.Sprintf(format, args...)}
}

// lineErr is an *Error about a whole line: its framing or its JSON. what
// is the message's opening, "Invalid request" for a request line (the
// daemon sends it back) or "invalid reply" for a reply (a client's own
// error).
func lineErr(what, rule string, offset int64, format string, args ...any) *Error {
	return &Error{Rule: rule, Offset: offset, msg: what + ": " + fmt.Sprintf(format, args...)}
}

// RemoteError is an error reply: the daemon answered
// {"status":"error","error":Message}. Call returns it with the reply, so a
// client can print the daemon's words as they are.
type RemoteError struct {
	Message string
}

func (e *RemoteError) Error() string { return e.Message }
