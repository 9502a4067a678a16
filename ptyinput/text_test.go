package ptyinput_test

import (
	"testing"

	"github.com/termverify/termverify-sandbox/ptyinput"
)

// TestEncodeText: input.text is its UTF-8 bytes (EncodeText takes no
// modes: the program's, bracketed paste included, cannot change them): no
// LF→CR, no paste brackets, no marker taken out.
func TestEncodeText(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want string
	}{
		{"empty", "", ""},
		{"ascii", "hello", "hello"},
		{"utf-8 as is", "é漢😀e\u0301", "é漢😀e\u0301"},
		{"LF stays LF (Control+j)", "ls\n", "ls\n"},
		{"CR stays CR (Enter)", "echo one; seq 3 5\r", "echo one; seq 3 5\r"},
		{"CRLF stays CRLF", "a\r\nb", "a\r\nb"},
		{"multi-line text is typed, not bracketed", "a\nb\nc", "a\nb\nc"},
		{"paste end inside goes verbatim", "a\x1b[201~b\n", "a\x1b[201~b\n"},
		{"paste start inside goes verbatim", "a\x1b[200~b\r", "a\x1b[200~b\r"},
		{"ESC run before a marker kept", "\x1b\x1b\x1b[201~x", "\x1b\x1b\x1b[201~x"},
		{"ESC before other CSI kept", "\x1b[A\x1b[20~", "\x1b[A\x1b[20~"},
		{"Escape then a command", "\x1b:wq\r", "\x1b:wq\r"},
		{"C0 and DEL kept", "\x00\x03\x04\x7f\t", "\x00\x03\x04\x7f\t"},
		{"C1 CSI code point kept", "\u009b201~", "\u009b201~"},
		{"invalid UTF-8 per byte", "a\xff\xfeb", "a\uFFFD\uFFFDb"},
		{"truncated rune", "\xe6\xbc", "\uFFFD\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ptyinput.EncodeText(tc.text); string(got) != tc.want {
				t.Errorf("EncodeText(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}
