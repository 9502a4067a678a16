package ptyinput_test

import (
	"testing"

	"github.com/termverify/termverify-sandbox/ptyinput"
)

func TestEncodeText(t *testing.T) {
	const start, end = ptyinput.PasteStart, ptyinput.PasteEnd
	plain := ptyinput.Modes{}
	paste := ptyinput.Modes{BracketedPaste: true}
	for _, tc := range []struct {
		name string
		text string
		m    ptyinput.Modes
		want string
	}{
		{"empty", "", plain, ""},
		{"empty with paste on", "", paste, ""},
		{"ascii", "hello", plain, "hello"},
		{"utf-8 as is", "é漢😀", plain, "é漢😀"},
		{"LF sent as CR", "ls\n", plain, "ls\r"},
		{"CR kept", "a\rb", plain, "a\rb"},
		{"CRLF is two CRs", "a\r\nb", plain, "a\r\rb"},
		{"one line with paste on is typed", "hello", paste, "hello"},
		{"line break with paste on is bracketed", "ls\n", paste, start + "ls\r" + end},
		{"CR alone counts as a line break", "ls\r", paste, start + "ls\r" + end},
		{"multi-line paste", "a\nb\nc", paste, start + "a\rb\rc" + end},
		{"ESC not before a marker is kept", "\x1b:wq\n", paste, start + "\x1b:wq\r" + end},
		{"paste end inside a paste", "a\x1b[201~b\n", paste, start + "a[201~b\r" + end},
		{"paste start inside a paste", "a\x1b[200~b\n", paste, start + "a[200~b\r" + end},
		{"ESC run before a marker", "\x1b\x1b\x1b[201~x\n", paste, start + "[201~x\r" + end},
		{"marker dropped unbracketed too", "x\x1b[201~", paste, "x[201~"},
		{"marker dropped with paste off", "x\x1b[200~y", plain, "x[200~y"},
		{"ESC kept before other CSI", "\x1b[A\x1b[20~\x1b[2001~", plain, "\x1b[A\x1b[20~\x1b[2001~"},
		{"incomplete marker at the end kept", "\x1b[201", plain, "\x1b[201"},
		{"lone ESC at the end kept", "a\x1b", paste, "a\x1b"},
		{"invalid UTF-8 per byte", "a\xff\xfeb", plain, "a\uFFFD\uFFFDb"},
		{"truncated rune", "\xe6\xbc", plain, "\uFFFD\uFFFD"},
		{"C1 CSI code point kept", "\u009b201~\n", paste, start + "\u009b201~\r" + end},
		{"key modes ignored", "a\nb", ptyinput.Modes{AppCursor: true, AppKeypad: true, Mouse: ptyinput.MouseAny}, "a\rb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ptyinput.EncodeText(tc.text, tc.m); string(got) != tc.want {
				t.Errorf("EncodeText(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}
