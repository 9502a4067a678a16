// Package interminai is interminai's socket protocol (seed 002): the
// request and reply lines a `term` client and daemon exchange over a Unix
// socket, one request line and one reply line per connection.
//
// Decode turns one request line into a typed Request and stops at the
// first violation with an *Error naming the rule, the member and, for JSON
// faults, the byte offset. It enforces the framing the seed states and
// interminai does not: a line of at most MaxLine bytes, terminated by a
// newline. It refuses invalid UTF-8, lone surrogate escapes, duplicate
// members at any depth, a line that is not one JSON object, and trailing
// bytes after the object; it never repairs input and never panics. Members
// it does not read are ignored, as interminai's clients send extras; the
// members it reads are matched by exact name. For WAIT, KILL, RESIZE and
// DEBUG it reads each member at the top level first and, when absent, from
// a "data" object, because interminai's two clients disagree on where
// those members go.
//
// EncodeRequest writes the top-level form and refuses any request Decode
// would reject, so an encoded request decodes to the same value.
// EncodeReply and DecodeReply do the same for the
// {"status":"ok"|"error","data":…,"error":…} reply, and the *Data types
// spell the seed's reply members exactly.
//
// ReadRequest and WriteReply are the daemon's half of one connection, Call
// the client's. The package also holds the vocabulary the CLI and the
// daemon share: signal names and numbers (ParseSignal, ExitStatus), the
// COLSxROWS size (ParseSize) and the escapes of `input --text`
// (DecodeText).
//
// The package does not serve: it holds no terminal, starts no process and
// has no opinion on which request may come when. Whether a WAIT blocks,
// what "settled" means and what a reply contains are the daemon's.
package interminai
