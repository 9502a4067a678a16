// Package ptydrive drives one unmodified program on a pseudoterminal, an
// input epoch at a time: the engine of the PTY mode (docs/PTY.md), apart
// from where the terminal comes from (the sandbox's devpts, or any
// pseudoterminal in the tests) and from how epochs are recorded.
//
// It joins three packages: ptyinput turns inputs into the bytes xterm
// sends in the modes the program set; vt keeps the screen the program
// drew and answers its queries (cursor position, device attributes,
// OSC 52); quiesce decides from kernel state when the program waits for
// input again, which ends the epoch.
//
// One goroutine runs everything, on a non-blocking duplicate of the
// master: reading the output, feeding the emulator, writing the replies
// and the input, and evaluating quiesce all happen in one loop, so an
// epoch that closes has every byte the program wrote before it waited in
// the emulator — there is no reader goroutine whose buffer could still
// hold some. Between epochs nobody reads: output a program writes then
// (a background job, a clock) waits in the kernel and belongs to the
// next epoch. The loop evaluates after each read and each write, and
// otherwise backs off from 0.25 ms to 20 ms (the bound on how late a program
// that went quiet without writing, after a sleep, is noticed); a short
// timeout in the program's wait (quiesce rule 6) is waited out instead.
//
// A write to a program that stopped reading is bounded by the caller's
// context (the epoch deadline) and drains the program's output while it
// waits, so that neither side can block the other. An epoch's output is
// kept up to a budget; beyond it bytes still reach the emulator but are
// only counted, so memory stays bounded under a flood.
package ptydrive
