// Package ptyinput turns termverify inputs into the bytes an
// xterm-compatible terminal sends to the program, given the terminal modes
// the program has set. It is the input half of the PTY mode (issue 14): a
// person's keystroke, paste or click becomes what xterm would write to the
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
// validity is transcript.ValidChord's, so the two cannot disagree. A chord
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
// Not modelled, because the registry fixes these bytes: LNM (CSI 20 h,
// after which a VT100's Return sends CR LF), DECBKM (?67, Backspace as BS)
// and extended key protocols (modifyOtherKeys, CSI u). Enter is always
// CR and Backspace always DEL.
//
// # Text
//
// EncodeText sends input.text as UTF-8, with three decisions:
//
//   - Every LF is sent as CR. A terminal's Enter key sends CR, and a paste
//     into xterm, or tmux's paste-buffer, sends each pasted LF as CR. The
//     kernel's line discipline translates CR back to LF in cooked mode
//     (ICRNL is on by default), so a program reading lines (cat, python's
//     input()) sees exactly "\n". A raw-mode program (vim, less, readline)
//     sees the CR a person's Enter sends; sent as LF it would read Control+j,
//     which in vim's normal mode is a different motion. Upstream writes LF
//     unchanged, and relies on ICRNL for cooked readers only. CR is sent
//     unchanged, so "\r\n" becomes CR CR, two Enters, as in xterm and tmux;
//     write a line break as "\n".
//   - When the program enabled bracketed paste (?2004) and the text holds a
//     line break (LF or CR), the text is wrapped in ESC [200~ … ESC [201~:
//     a multi-line input.text is a paste, since nobody types a line break
//     without pressing Enter, and bracketing is what tells a program that a
//     line break is pasted text rather than a command to run. Text without
//     a line break is sent as typed, unbracketed, because a program then
//     handles it as the keys it is. The consequence is the one a person
//     pasting gets: bash (readline's enable-bracketed-paste is on by
//     default since 5.1) inserts a pasted "ls\n" at the prompt and runs it
//     only at the next Enter, so a script sends input.key Enter after it.
//     Driving tmux the same way means paste-buffer -p for text with a line
//     break and send-keys -l for text without (paste-buffer -p brackets
//     any text when the pane asked).
//   - An ESC that starts a paste marker inside the text (ESC [200~ or
//     ESC [201~) is dropped, together with any ESCs just before it, in
//     every mode. Otherwise an input could end its own paste early and
//     have the rest read as keys, or open a paste that never ends and
//     swallows the keys after it. Only the ESC goes; "[201~" arrives as
//     text, and every other byte, ESC included, is kept. Dropping a run,
//     not one ESC, matters: from "ESC ESC [201~" dropping the second ESC
//     would leave the first to form the marker again. The output therefore
//     holds a paste marker only where EncodeText put one. The 8-bit C1 CSI
//     (byte 0x9B) is left alone: in UTF-8 that byte is only ever part of a
//     multi-byte character, so a program decoding its input as UTF-8 never
//     reads it as CSI.
//
// input.text in a parsed transcript is always valid UTF-8; bytes that are
// not (only a Go caller can pass them) are each sent as U+FFFD.
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
