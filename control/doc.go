// Package control reads and writes termverify.control/v1, the JSONL wire a
// subject speaks on its stdin and stdout. Parse is strict: it applies every
// check of the protocol in upstream's order and returns an *Error naming the
// rule and member; Encode writes RFC 8785-canonical lines.
package control
