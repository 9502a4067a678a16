package ptyinput_test

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

// modesOf spreads fuzzed bits over Modes, out-of-range enum values
// included.
func modesOf(bits uint16) ptyinput.Modes {
	return ptyinput.Modes{
		AppCursor:      bits&1 != 0,
		AppKeypad:      bits&2 != 0,
		BracketedPaste: bits&4 != 0,
		FocusEvents:    bits&8 != 0,
		Mouse:          ptyinput.MouseMode(bits >> 4 & 7),
		MouseEncoding:  ptyinput.MouseEncoding(bits >> 7 & 7),
	}
}

// FuzzEncodeKey: any chord (keys joined by LF) under any modes never
// panics, errors exactly when input.ValidChord rejects the chord or the table
// has no bytes for it, and otherwise returns bytes that start with ESC or
// are one control or DEL byte.
func FuzzEncodeKey(f *testing.F) {
	for _, c := range allChords() {
		f.Add(strings.Join(c, "\n"), uint16(0))
		f.Add(strings.Join(c, "\n"), uint16(1))
	}
	f.Add("", uint16(0))
	f.Add("Control\nControl\na", uint16(0))
	f.Add("Shift\na", uint16(0xffff))
	f.Fuzz(func(t *testing.T, joined string, bits uint16) {
		chord := strings.Split(joined, "\n")
		got, err := ptyinput.EncodeKey(chord, modesOf(bits))
		if errors.Is(err, ptyinput.ErrInvalidChord) == input.ValidChord(chord) {
			t.Fatalf("%q: ValidChord %v but %v", chord, input.ValidChord(chord), err)
		}
		if err != nil {
			if got != nil || !errors.Is(err, ptyinput.ErrInvalidChord) && !errors.Is(err, ptyinput.ErrUnencodable) {
				t.Fatalf("%q: %q, %v", chord, got, err)
			}
			return
		}
		if len(got) == 0 || len(got) > 1 && got[0] != 0x1b || len(got) == 1 && got[0] >= 0x20 && got[0] != 0x7f {
			t.Fatalf("%q: bytes %q", chord, got)
		}
	})
}

// FuzzEncodeText: any text never panics; the output is valid UTF-8, and
// it is the text itself when the text is valid UTF-8 (every transcript's
// is), with each byte that is not UTF-8 as U+FFFD otherwise.
func FuzzEncodeText(f *testing.F) {
	for _, s := range []string{
		"", "hello", "ls\n", "a\r\nb", "é漢😀\n", "\x1b:wq\r",
		"a\x1b[201~b\n", "\x1b\x1b[201~", "\x1b[200~x", "a\xffb", "\xe6\xbc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		out := string(ptyinput.EncodeText(text))
		if !utf8.ValidString(out) {
			t.Fatalf("%q: output %q is not UTF-8", text, out)
		}
		if utf8.ValidString(text) && out != text {
			t.Fatalf("%q: output %q, want the text itself", text, out)
		}
		if n := utf8.RuneCountInString(text); utf8.RuneCountInString(out) != n {
			t.Fatalf("%q: %d runes out of %d", text, utf8.RuneCountInString(out), n)
		}
	})
}

var sgrReports = regexp.MustCompile(`^(\x1b\[<(0|1|2|3[2-5]|6[45]);[1-9][0-9]*;[1-9][0-9]*[Mm])+$`)

// FuzzEncodeMouse: any event under any modes never panics, and either
// errors with one of the two sentinels or returns well-formed SGR reports.
func FuzzEncodeMouse(f *testing.F) {
	f.Add("press", int64(0), int64(0), "left", int64(0), "", uint16(2<<4|2<<7))
	f.Add("move", int64(5), int64(5), "", int64(0), "right", uint16(3<<4|2<<7))
	f.Add("scroll", int64(1), int64(2), "", int64(-3), "", uint16(4<<4|2<<7))
	f.Add("release", int64(-1), int64(0), "middle", int64(0), "", uint16(0))
	f.Fuzz(func(t *testing.T, action string, col, row int64, button string, delta int64, held string, bits uint16) {
		ev := ptyinput.MouseEvent{Action: action, Column: col, Row: row, Button: button, Delta: delta, Held: held}
		got, err := ptyinput.EncodeMouse(ev, modesOf(bits))
		if err != nil {
			if got != nil || errors.Is(err, ptyinput.ErrInvalidMouse) == errors.Is(err, ptyinput.ErrMouseNotEnabled) {
				t.Fatalf("%+v: %q, %v", ev, got, err)
			}
			return
		}
		if !sgrReports.Match(got) || bytes.Count(got, []byte{0x1b}) > ptyinput.MaxScrollDelta {
			t.Fatalf("%+v: %q", ev, got)
		}
	})
}
