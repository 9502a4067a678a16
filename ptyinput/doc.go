// Package ptyinput turns termverify inputs into the bytes an
// xterm-compatible terminal sends to the program, given the terminal modes
// the program has set. It is the input half of the PTY mode: a person's
// keystroke, typed text or click becomes what xterm would write to the
// pseudoterminal master.
//
// It is pure: no pseudoterminal, no I/O, no state. Modes is a plain struct
// the emulator (package vt) fills from what the program wrote, and every
// function takes it by value. An error means no byte may be written, and
// none is returned.
//
// # Keys
//
// EncodeKey encodes one termverify.key/v1 chord. With the zero Modes its
// output is the termverify.key-encoding/v1 table byte for byte: all 1,382
// rows of upstream's key-encoding-v1.tsv, and the canonical text rebuilt
// from this encoder hashes to the SHA-256 upstream binds. The table is not
// copied; the encoder computes xterm's legacy rules (CSI 1 ; m for
// modified cursor keys, CSI n ; m ~ for the VT220 keys, ESC before a
// character for Alt, the C0 byte for Control+letter), with xterm's
// modifier parameter 1 + Shift 1 + Alt 2 + Control 4 + Meta 8. Chord
// validity is input.ValidChord's, so the two cannot disagree. A chord
// the table marks unencodable is an error wrapping ErrUnencodable, and the
// run fails before any byte is written, as upstream's does.
//
// The one mode-dependent deviation is xterm's DECCKM: with AppCursor set
// (CSI ? 1 h, which terminfo's smkx sends), unmodified ArrowUp, ArrowDown,
// ArrowRight, ArrowLeft, Home and End are sent as SS3, ESC O A/B/C/D/H/F,
// instead of ESC [ A/B/C/D/H/F. Modified ones keep ESC [ 1 ; m A, as in
// xterm. Unmodified F1–F4 are SS3 in both modes. AppKeypad (DECKPAM, ESC =) changes
// only the numeric keypad's keys, and termverify.key/v1 has no keypad key
// (its Enter, digits and punctuation are the main keyboard's), so it
// changes nothing here; it is kept in Modes so that the emulator's state
// carries over whole.
//
// This is the one place where the bytes differ from upstream's, whose
// terminal adapter tracks no input modes and sends the table's ESC [ A in
// every mode. It is a key's encoding, not a choice about text: a program
// that sent smkx reads its cursor keys by terminfo's kcuu1 and the like,
// ESC O A for xterm-256color, and a curses program in keypad mode reads
// ESC [ A as Escape, "[" and "A"; xterm, tmux and every other terminal
// send SS3 there, and so does this encoder.
//
// Not modelled, because the registry fixes these bytes: LNM (CSI 20 h,
// after which a VT100's Return sends CR LF), DECBKM (?67, Backspace as BS)
// and extended key protocols (modifyOtherKeys, CSI u). Enter is always
// CR and Backspace always DEL.
//
// # Text
//
// EncodeText writes input.text as its UTF-8 bytes, byte for byte, and
// nothing else: no LF→CR, no bracketed paste, no paste marker taken out,
// whatever modes the program set (it takes none). That is what upstream's
// POSIX terminal adapter writes (text.encode("utf-8")), and what every
// terminal driver sends for literal text: tmux's send-keys -l, expect's
// and pexpect's send, interminai's INPUT. A transcript recorded by any of
// them therefore replays here to the same bytes on the wire.
//
//   - CR is the Enter key, as from a keyboard: ":wq\r" into vim,
//     "echo one\r" into bash, "/pattern\r" into less run what they type.
//   - LF reaches the program as Control+j, as it does from upstream. A
//     program in canonical mode (cat, sh, python's input()) ends a line at
//     it as at CR; readline binds it to accept-line; vim's Insert and
//     command-line modes take it as a new line or Enter, and its Normal
//     mode as a move down, as a keyboard's Control+j is.
//   - Text is typed, never pasted, though bash, vim and others enable
//     bracketed paste (?2004): a paste is a choice of the person at the
//     keyboard, not something a script's text implies, and bracketing it
//     silently would make "echo one\r" an inserted line that never runs.
//     No run option pastes; a script that means a paste writes the markers
//     ESC [200~ … ESC [201~ in its text, which go as they are, like
//     every other byte, ESC included.
//
// input.text in a parsed transcript is always valid UTF-8; bytes that are
// not (only a Go caller can pass them) are each sent as U+FFFD, so the
// terminal's input stays UTF-8.
//
// # Mouse
//
// EncodeMouse sends input.mouse as an SGR (?1006) report,
// ESC [ < b ; x ; y M for a press or motion and … m for a release, with x
// and y the 1-based cell (the protocol's column and row are 0-based, like
// the cursor and frame positions). MouseEvent is the protocol's shape
// from TRANSCRIPT-RULES.md: action press|release|move|scroll, column and
// row ≥ 0, a button left|middle|right for press and release, a non-zero
// delta for scroll. The protocol carries no modifiers, so the Shift, Meta
// and Control bits are never set, and it defines no direction for delta;
// here negative scrolls up (away from the user, X11 button 4, code 64) and
// positive down (button 5, code 65), one report per step, as a wheel
// sends one per notch (the sign of a browser's WheelEvent.deltaY).
// MouseEvent adds Held, the button held during a move, which a terminal
// knows from the earlier press; the caller tracks it.
//
// A report is sent only when xterm would send one: tracking on (?9
// presses, wheel steps included; ?1000 also releases; ?1002 also motion with a button
// held; ?1003 all motion) with the SGR encoding selected. Otherwise
// EncodeMouse returns an error wrapping ErrMouseNotEnabled, and the caller
// writes nothing and records a diagnostic. That includes tracking with the
// legacy encoding or with ?1005 (UTF-8) or ?1015 (urxvt): Modes can
// express them, so the refusal is precise, but only SGR is produced.
// ?1016 (SGR with pixel coordinates) is refused as well: a cell position
// is not a pixel one. EncodeMouse does not know the screen size; the
// caller keeps positions on the screen, where a real pointer is.
//
// FocusEvents (?1004) is tracked so that Modes mirrors the emulator, but
// no termverify input reports focus, so nothing here sends CSI I or CSI O.
package ptyinput
