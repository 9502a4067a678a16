// Package report renders recorded runs as one self-contained HTML page
// that a person reads in a browser or prints: a run's verdict, its
// receipts with their tiers, and its epochs in order, each with its
// inputs, diagnostics and observation — for a PTY-mode run the screen
// with its colours, attributes and cursor, rendered by package vt from
// the recorded output and checked against the recorded frame, the lines
// that changed since the epoch before marked; for a control/v1 run the
// state and the frame. It also renders a batch's summary with each run's
// section, and a comparison of two transcripts side by side by seq.
//
// The page loads nothing: no network, no external script, style or font.
// Its Content-Security-Policy allows inline style and exactly its one
// inline script, by hash. Every string that comes from a transcript is the
// subject's or its recorder's text and is escaped by html/template for
// the context it lands in, after termsafe made its controls visible.
// Output is deterministic: the same transcripts give the same bytes.
//
// The package reads parsed transcripts and writes to an io.Writer; it
// opens no file and prints nothing. docs/REPORTS.md has the sections.
package report
