// Package vt is an in-memory VT terminal emulator: bytes a program writes
// to its terminal go in, and the screen that a terminal would show comes
// out, as lines, cells with their attributes, the cursor, the modes and
// the title. It is the screen model of the PTY mode (ptydrive feeds it the
// terminal's output, and the supervisor bounds a requested terminal by
// MaxCols × MaxRows), of the term daemon (which feeds it all the time and
// keeps its scrollback), and of the render command, which prints the
// screen left by a recorded byte stream. It is checked line for line
// against tmux on recorded streams of real programs.
//
// What it promises:
//
//   - Write never fails and never blocks: every byte is consumed. Bytes
//     it does not understand are counted and the last 64 kept, see
//     Diagnostics; they never corrupt the screen and never panic.
//   - The screen is always exactly Cols × Rows cells, and memory is
//     bounded: the size is clamped to MaxCols × MaxRows, the scrollback to
//     its capacity, strings and replies to fixed limits.
//   - Answers to the program's queries (DSR 5n and 6n, DA1, DA2, DECRQM,
//     window size, OSC 52 clipboard) collect in a bounded buffer that the
//     caller drains with Replies and writes to the program.
//   - Lines drops trailing spaces; Cell keeps every column. A wide
//     character appears once in a line; its second column is an empty
//     Cell.
//   - Resize does not rewrap lines. The height changes as tmux changes
//     it: a shorter screen drops lines below the cursor first, then moves
//     lines from the top into the scrollback; a taller one takes back
//     lines that scrolled off before adding blank ones.
//
// What it does not do: it draws no pixels and keeps no per-cell hyperlink,
// underline colour or font; DCS, SOS, PM and APC strings, double-width
// lines, G2/G3 character sets and xterm's window manipulation are
// swallowed and diagnosed; it is not safe for concurrent use, and the
// caller serialises Write with the readers. docs/VT.md lists every
// sequence handled and how each edge case was decided.
package vt
