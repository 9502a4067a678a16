// Package control reads and writes termverify.control/v1, the JSONL wire a
// subject speaks on its stdin and stdout (seed 000).
//
// Parse checks one message line in upstream's order — framing, lexical
// depth, strict JSON and the v1 budgets (internal/canon), envelope, closed
// payload members, per-kind rules — and stops at the first violation with
// an *Error naming the rule and the member path. Every such error is
// peer-malformed. It accepts non-canonical spelling, as upstream's wire
// does, and never repairs input. It deliberately rejects two things
// upstream accepts: integers beyond ±(2^53−1) and absurdly long digit
// strings, which cannot enter the transcript (docs/CONTROL.md).
//
// Reader splits a subject's stdout into lines without ever buffering more
// than one 4 MiB line, and tells the supervisor whether the subject has
// already sent bytes (Buffered). Encode writes RFC 8785-canonical lines and
// refuses any message Parse would reject.
//
// The package does not judge lifecycle: which kinds may arrive when, and
// from whom, are the supervisor's peer-lifecycle decisions, and so is
// counting diagnostics against MaxStartupDiagnostics and
// MaxEpochDiagnostics. It drops x- extension members from the typed
// messages (they have no v1 meaning) and keeps subject state, details and
// event data as opaque JSON in canonical form.
package control
