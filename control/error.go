package control

import (
	"fmt"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// Class is the adapter failure class a control error belongs to, spelled as
// the failure codes of the protocol's failure taxonomy (seed 000, "Failure
// taxonomy") so the supervisor can copy it into details.failure unchanged.
type Class string

// PeerMalformed is the class of every error Parse and Reader.Next return: a
// child message that is not a valid v1 message, whatever the rule.
const PeerMalformed Class = "peer-malformed"

// Rules are the stable identifiers of what Parse enforces, in check order.
// JSON-level rules (json.*, limit.* other than the line, number.*) come from
// internal/canon and keep its spelling; config.* rules come from package
// config. Callers branch on Rule, never on message text.
const (
	RuleLineBytes       = canon.RuleLineBytes // the line exceeds 4 MiB + LF
	RuleBOM             = "framing.bom"
	RuleCR              = "framing.cr"
	RuleMissingLF       = "framing.missing-lf"
	RuleEmbeddedLF      = "framing.embedded-lf"
	RuleDepth           = canon.RuleDepth
	RuleEnvelopeUnknown = "envelope.unknown-member"
	RuleEnvelopeMissing = "envelope.missing-member"
	RuleProtocol        = "envelope.protocol"
	RuleKind            = "envelope.kind"

	RuleUnknownMember = "payload.unknown-member" // a member outside the closed set, not x-
	RuleMissingMember = "payload.missing-member" // a required member is absent
	RuleType          = "payload.type"           // wrong JSON type (integers: RuleInteger)
	RuleInteger       = "payload.integer"        // not an integer literal: "1", 1.0, 1e2, true
	RuleRange         = "payload.range"          // an integer below its minimum
	RuleEmpty         = "payload.empty"          // an empty string or array where one is required non-empty
	RuleIdentifier    = "payload.identifier"     // run_id outside [a-z0-9._-]+
	RuleVocabulary    = "payload.vocabulary"     // a string outside its closed set

	RuleDuplicateRegion   = "observation.duplicate-region"
	RuleFocusUnknown      = "observation.focus-unknown"
	RuleFrameRows         = "observation.frame-rows"
	RuleRunningWithExit   = "observation.running-with-exit"
	RuleExitedWithoutExit = "observation.exited-without-exit"
	RuleExitedInReady     = "observation.exited-in-ready"

	// RuleDiagnostics is not Parse's: the supervisor counts diagnostics
	// and reports the 101st as peer-malformed under this id.
	RuleDiagnostics = "limit.diagnostics"
)

// Error is a control message that is not a valid termverify.control/v1
// message. Every Error is peer-malformed (Class); the supervisor decides
// lifecycle violations, which are not Parse's business.
type Error struct {
	Rule   string // stable id, one of the Rule constants or a canon/config rule
	Member string // offending member path ("payload.ui.cursor.row"); "" for line-level rules
	Detail string // human-readable; never compare it
	Class  Class  // always PeerMalformed for errors from this package
	Err    error  // the *canon.Error or *config.Error behind it, if any
}

func (e *Error) Error() string {
	if e.Member == "" {
		return fmt.Sprintf("%s: %s", e.Rule, e.Detail)
	}
	return fmt.Sprintf("%s: %s: %s", e.Rule, e.Member, e.Detail)
}

// Unwrap returns the underlying canon or config error, if any.
func (e *Error) Unwrap() error { return e.Err }

func malformed(rule, member, format string, args ...any) *Error {
	return &Error{Rule: rule, Member: member, Detail: fmt.Sprintf(format, args...), Class: PeerMalformed}
}
