// Package asciicast turns a recorded run into an asciicast recording, the
// format asciinema's recorder writes and its player (and every other
// terminal player) reads: version 2, the default, or version 3, each as
// published at docs.asciinema.org/manual/asciicast/v2 and /v3.
//
// A PTY-mode transcript keeps the terminal's output byte for byte (its
// observations' terminal.output chunks), so its recording is that output
// as "o" events, in order, with each input as the "i" event of the bytes
// the driver wrote to the terminal for it, each input.resize as "r", each
// observation as an "m" marker naming its epoch, and in version 3 the
// real exit as "x". A control/v1 transcript has no terminal stream; when
// its observations carry frames, each frame becomes a redraw of the
// screen. Transcripts carry no wall clock, so time is logical: epoch k is
// at k × Pace, its inputs half a pace before. The same transcript and
// options always give the same bytes. docs/REPORTS.md has the mapping.
//
// The package only encodes: it reads a parsed transcript and writes to an
// io.Writer; it opens no file and prints nothing.
package asciicast
