// Package input is the termverify input vocabulary: the termverify.key/v1
// chord registry, the mouse words, the seven input kinds as the Input sum
// type (Text, Key, Resize, Mouse, ClipboardSet, ClockAdvanced, Stop), and
// the reader of an input script (JSONL, one {"kind","payload"} input a
// line).
//
// An input script is not a transcript, and a key chord is not a record:
// the transcript codec records inputs, control/v1 carries some of them,
// and the terminal encoder (ptyinput) turns them into bytes, and each of
// them takes the words from here rather than from the others. The package
// imports nothing of the project's but internal/canon, so that each of
// those can depend on it without depending on one another.
//
// ReadScript and Check hold an input to the rules its transcript record
// would be held to (TRANSCRIPT-RULES.md), with the transcript's Rule ids,
// so an input they accept is one the transcript Writer records; they stop
// at the first violation, returned as an *Error, and never repair. The
// manual clock (at_ms) is not an input's own: the Writer stamps it, so a
// script line must not carry it.
//
// The package knows nothing of epochs, of which kinds a given way of
// driving a program can carry (the caller passes those), or of the bytes
// a terminal sends (package ptyinput).
package input
