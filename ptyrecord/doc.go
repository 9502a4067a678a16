// Package ptyrecord builds the records of a PTY-mode transcript that do
// not depend on who drives the terminal: the observation of a screen, the
// diagnostics of an epoch's output, the OS exit, and the receipts of what
// the sandbox applied. `run --pty` (package supervisor, over ptydrive)
// and the term daemon's recorded sessions (term start --transcript) both
// write them through it, so that a recorded session is shaped exactly as
// run --pty records one and replay --pty can re-run it (docs/PTY.md,
// docs/TERM.md).
package ptyrecord
