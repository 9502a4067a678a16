// Package transcript reads and writes termverify.transcript/v1, the JSONL
// evidence of one verified run.
//
// Parse enforces every rule of TRANSCRIPT-RULES.md (seeds 001 and 003) in
// the spec's parse order — sizes and framing, line limits, strict decoding,
// byte-identical RFC 8785 form, the compat rule, then the semantic passes —
// and stops at the first violation, returned as an *Error whose Rule is a
// stable id. It never repairs input beyond the one named compat rule (a
// legacy delivery without channel is read as channel spawn-env), and it
// never panics on any input.
//
// ValidateReader (and Validate) reach Parse's verdict, the same *Error
// included, without keeping the input or any record's tree: they check
// lines on all CPUs as they are read, with the same checks, and feed the
// passes that need the records in order a summary of each record, so
// their memory does not grow with the transcript. They build no
// Transcript.
//
// Writer records a run record by record for the supervisor. It emits only
// RFC 8785-canonical lines, assigns seq and record ids, stamps at_ms from
// the manual clock, and runs the same validator as Parse before each write:
// a record that would make the transcript invalid, or break a v1 limit, is
// refused and nothing is written. It always keeps room for the terminal
// record, so a run can end with run.failed after any refusal.
//
// Encode re-encodes a parsed transcript: the input bytes exactly, except
// records the compat rule rewrote, which come out channel-tagged.
//
// The decoders sit beside the encoders: DecodeSubject reads a subject,
// Transcript.Inputs the inputs a transcript recorded. They apply the
// validator's rules and Rule ids, and report the first violation as a
// *DecodeError (or *Error) naming its line or member. The inputs
// themselves, their payload rules and the input-script reader are the
// input vocabulary's (package input), which the Writer and the validator
// call, so an input that package accepts is one the Writer records.
//
// The package does not interpret what a transcript claims (which tier is
// strong enough is the receipts package's and the auditor's question), does
// not read files, and keeps no global state.
package transcript
