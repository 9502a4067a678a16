// Package supervisor is the termverify.control/v1 adapter: Run spawns a
// subject through the sandbox, sends session.hello, runs the single-flight
// epochs of an input script and the stop drain under whole-phase
// deadlines, tears the sandbox down, and records a termverify.transcript/v1
// transcript whose receipts are negotiated against what the sandbox really
// applied and verified.
//
// Guarantees: no receipt is stronger than a checked mechanism; the exit in
// a transcript is the one the OS observed, never the subject's claim; a
// deadline abort records no exit; the transcript appears at its path only
// complete (or not at all); nothing of the subject survives Run. Run does
// not print, install signal handlers (InterruptContext does, when asked),
// or exit; it refuses inputs control/v1 cannot carry (input.mouse,
// input.clipboard_set). docs/SUPERVISOR.md has the full contract.
//
// With Request.PTY the subject is an unmodified terminal program on a
// pseudoterminal of the sandbox's own instead: its inputs are typed into
// the terminal and each epoch closes with an observation of its screen
// when the kernel says it waits for input (ptyconn.go, docs/PTY.md).
// The session is the same; only its conn differs.
package supervisor
