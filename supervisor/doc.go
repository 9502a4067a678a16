// Package supervisor runs one subject in the sandbox and records its
// termverify.transcript/v1 transcript: Run spawns the subject through the
// sandbox, opens the session, runs the single-flight epochs of an input
// script and the stop drain under whole-phase deadlines, tears the sandbox
// down, and commits a transcript whose receipts are negotiated against
// what the sandbox really applied and verified. It drives the subject one
// of two ways: as the termverify.control/v1 adapter (session.hello and
// JSON lines over pipes), or, in the PTY mode, as an unmodified terminal
// program on a pseudoterminal of the sandbox's own (below).
//
// Guarantees: no receipt is stronger than a checked mechanism; the exit in
// a transcript is the one the OS observed, never the subject's claim; a
// deadline abort records no exit; the transcript appears at its path only
// complete (or not at all); nothing of the subject survives Run. Run does
// not print, install signal handlers (InterruptContext does, when asked),
// or exit; in control mode it refuses inputs control/v1 cannot carry
// (input.mouse, input.clipboard_set). docs/SUPERVISOR.md has the full
// contract.
//
// In the PTY mode (Request.PTY) the subject is an unmodified terminal
// program on a pseudoterminal of the sandbox's own instead: its inputs
// are typed into the terminal and each epoch closes with an observation
// of its screen when the kernel says it waits for input (ptyadapter.go,
// ptyconn.go, docs/PTY.md). The session is the same; only the adapter
// the plan holds differs (plan.go): its streams, its part of the sandbox
// spec, its receipt and its conn.
package supervisor
