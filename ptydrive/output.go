package ptydrive

import (
	"unicode/utf8"

	"github.com/termverify/termverify-sandbox/ptyinput"
	"github.com/termverify/termverify-sandbox/vt"
)

// OutputBuffer keeps one epoch's output for the transcript, up to a
// budget, and turns it into an Output: the Driver's, and the term
// daemon's for a recorded session, which reads its terminal itself. The
// zero value keeps nothing: make one with NewOutputBuffer. It is not safe
// for concurrent use.
type OutputBuffer struct {
	budget  int
	kept    []byte // this epoch's output, up to budget
	carry   []byte // an incomplete UTF-8 sequence at the end of the last epoch
	dropped int64  // this epoch's bytes beyond the budget
}

// NewOutputBuffer keeps up to budget bytes an epoch (DefaultOutputBudget
// when budget is not positive).
func NewOutputBuffer(budget int) OutputBuffer {
	if budget <= 0 {
		budget = DefaultOutputBudget
	}
	return OutputBuffer{budget: budget}
}

// Add keeps chunk, as far as the budget allows, and counts the rest.
func (b *OutputBuffer) Add(chunk []byte) {
	keep := max(min(len(chunk), b.budget-len(b.kept)), 0)
	b.kept = append(b.kept, chunk[:keep]...)
	b.dropped += int64(len(chunk) - keep)
}

// Dropped is how many bytes of this epoch the budget cut.
func (b *OutputBuffer) Dropped() int64 { return b.dropped }

// Empty reports whether this epoch has no output yet (a carried
// incomplete character does not count).
func (b *OutputBuffer) Empty() bool { return len(b.kept) == 0 && b.dropped == 0 }

// Take returns the epoch's output and starts a new epoch. An incomplete
// UTF-8 sequence at the end is kept for the next epoch rather than
// replaced, unless final (nothing follows) or bytes after it were cut by
// the budget (the next epoch's first bytes would not continue it).
func (b *OutputBuffer) Take(final bool) Output {
	raw := append(b.carry, b.kept...)
	b.carry = nil
	for k := 1; !final && b.dropped == 0 && k <= utf8.UTFMax-1 && k <= len(raw); k++ {
		c := raw[len(raw)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(raw[len(raw)-k:]) {
				b.carry = append([]byte(nil), raw[len(raw)-k:]...)
				raw = raw[:len(raw)-k]
			}
			break
		}
	}
	o := Output{Dropped: b.dropped}
	text := make([]byte, 0, len(raw))
	for len(raw) > 0 {
		r, n := utf8.DecodeRune(raw)
		if r == utf8.RuneError && n == 1 {
			o.Invalid++
			text = utf8.AppendRune(text, utf8.RuneError)
		} else {
			text = append(text, raw[:n]...)
		}
		raw = raw[n:]
	}
	o.Text = string(text)
	b.kept, b.dropped = b.kept[:0], 0
	return o
}

// ScreenOf is what emu shows now. The caller holds whatever guards emu.
func ScreenOf(emu *vt.Terminal) Screen {
	cols, rows := emu.Size()
	return Screen{Cols: cols, Rows: rows, Lines: emu.Lines(), Cursor: emu.Cursor(),
		Alternate: emu.AltScreen(), Title: emu.Title()}
}

// ModesOf is the input modes emu's program has set, for ptyinput. The
// caller holds whatever guards emu.
func ModesOf(emu *vt.Terminal) ptyinput.Modes {
	m := emu.Modes()
	enc := ptyinput.MouseEncodingLegacy
	if m.MouseSGR {
		enc = ptyinput.MouseEncodingSGR
	}
	return ptyinput.Modes{
		AppCursor: m.AppCursor, AppKeypad: m.AppKeypad, BracketedPaste: m.BracketedPaste,
		Mouse: ptyinput.MouseMode(m.Mouse), MouseEncoding: enc, FocusEvents: m.FocusEvents,
	}
}
