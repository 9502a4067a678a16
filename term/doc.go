// Package term is the sandboxed terminal daemon of `termverify-sandbox
// term`: one program, started inside an os-tier sandbox on a terminal of
// the sandbox's own devpts, kept on an emulated screen with scrollback, and
// served over a Unix socket with interminai's protocol (seed 002).
//
// What it promises:
//
//   - The pseudoterminal is read all the time, on a goroutine of its own,
//     whether or not a client is connected: the program never blocks on a
//     full terminal, and the emulator's answers to its queries (DSR, DA)
//     are written back at once. The scrollback bounds the memory.
//   - Every request is served on its own goroutine: a pending WAIT never
//     holds up another client, and a client that dies, a garbage line or a
//     request over 10 MB gets an error reply (or nothing, if it is gone)
//     and never stops the daemon.
//   - INPUT writes every byte, bounded by a deadline.
//   - STOP escalates SIGTERM, SIGHUP and SIGKILL, destroys the whole
//     sandbox, and removes an auto-generated socket with its directory.
//     A daemon killed outright leaves its sandbox dying with it (the
//     sandbox's liveness pipe).
//
// The protocol's lines are package interminai's; this package decides
// what each request does.
//
// The program sees the host's directories at their own paths (layout.go):
// the working directory and Config.Write read-write, Config.Read
// read-only, and the caller's own $TMPDIR read-write (a shared one, /tmp
// among them, is replaced by the sandbox's private /tmp, because other
// programs' sockets live there); everything else is the sandbox's
// default. Each directory is opened once and verified by the sandbox
// (sandbox.Spec.Binds).
//
// The program runs as the sandbox's unprivileged uid, and every mapped
// directory is idmapped so that it reads and writes there as the caller
// (CallerOwner): its files are the caller's. RECEIPTS (receipts.go) claims
// only what the sandbox verified before the program ran. It never prints
// and never exits the process: the CLI does.
package term
