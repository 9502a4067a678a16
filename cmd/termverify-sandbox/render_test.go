package main

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	const box = "\x1b(0lqk\r\nx x\r\nmqj\x1b(B"
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
		code  int
	}{
		{"plain", "hello\r\nworld", []string{"--size", "10x3"}, "hello\nworld\n\n", exitOK},
		{"line drawing as drawn", box, []string{"--size", "5x3"}, "┌─┐\n│ │\n└─┘\n", exitOK},
		{"wide once", "\u65e5\u672c", []string{"--size", "5x1"}, "日本\n", exitOK},
		{"ansi", "a\x1b[1;31mb\x1b[0m", []string{"--size", "5x1", "--ansi"}, "a\x1b[0;1;31mb\x1b[0m\n", exitOK},
		{"scrollback", "1\r\n2\r\n3", []string{"--size", "5x2", "--scrollback"}, "1\n2\n3\n", exitOK},
		{"no scrollback by default", "1\r\n2\r\n3", []string{"--size", "5x2"}, "2\n3\n", exitOK},
		{"scrollback ansi", "\x1b[32m1\x1b[0m\r\n2\r\n3", []string{"--size", "5x2", "--scrollback", "--ansi"}, "\x1b[0;32m1\x1b[0m\n2\n3\n", exitOK},
		{"alternate screen", "main\x1b[?1049h\x1b[Halt", []string{"--size", "6x1"}, "alt\n", exitOK},
		{"unknown sequences still render", "a\x1b[5yb", []string{"--size", "4x1"}, "ab\n", exitOK},
		{"size required", "", nil, "", exitUsage},
		{"bad size", "", []string{"--size", "80"}, "", exitUsage},
		{"zero size", "", []string{"--size", "0x24"}, "", exitUsage},
		{"too large", "", []string{"--size", "100000x24"}, "", exitUsage},
		{"argument refused", "", []string{"--size", "8x2", "file"}, "", exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runControl(t, strings.NewReader(tc.stdin), append([]string{"render"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if out != tc.want {
				t.Errorf("stdout %q, want %q", out, tc.want)
			}
		})
	}
}

// trojanSource is the Trojan Source stretched-string case (CVE-2021-42574):
// bidi controls that make a terminal show a comment where the code has a
// string, plus the other invisible reorderers and U+FEFF.
const trojanSource = "if x != \"user\u202e \u2066// admin\u2069 \u2066\" {\r\n" +
	"a\u200eb\u200fc\u061cd\ufeffe\u202af\u202bg\u202ch\u202di\u2067j\u2068k"

// TestRenderBidiEscaped: what a hostile byte stream put on the screen is
// printed with the bidi controls, the marks and U+FEFF escaped, as
// termsafe escapes them everywhere else, in --ansi mode too, where our
// own SGR sequences stay.
func TestRenderBidiEscaped(t *testing.T) {
	const line0 = `if x != "user\u202e \u2066// admin\u2069 \u2066" {`
	const line1 = `a\u200eb\u200fc\u061cd\ufeffe\u202af\u202bg\u202ch\u202di\u2067j\u2068k`
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"plain", trojanSource, []string{"--size", "60x2"}, line0 + "\n" + line1 + "\n"},
		{"ansi", "\x1b[31m" + trojanSource + "\x1b[0m", []string{"--size", "60x2", "--ansi"},
			"\x1b[0;31m" + line0 + "\x1b[0m\n\x1b[0;31m" + line1 + "\x1b[0m\n"},
		{"scrollback", trojanSource + "\r\n", []string{"--size", "60x1", "--scrollback"}, line0 + "\n" + line1 + "\n\n"},
		{"scrollback ansi", "\x1b[1m" + trojanSource + "\r\n", []string{"--size", "60x1", "--scrollback", "--ansi"},
			"\x1b[0;1m" + line0 + "\x1b[0m\n\x1b[0;1m" + line1 + "\x1b[0m\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runControl(t, strings.NewReader(tc.stdin), append([]string{"render"}, tc.args...)...)
			if code != exitOK {
				t.Errorf("exit %d, want %d", code, exitOK)
			}
			if out != tc.want {
				t.Errorf("stdout %q, want %q", out, tc.want)
			}
			for _, r := range out {
				if r == 0x202e || (r >= 0x2066 && r <= 0x2069) || r == 0xfeff || r == 0x200e || r == 0x200f || r == 0x061c || (r >= 0x202a && r <= 0x202d) {
					t.Errorf("stdout holds U+%04X raw", r)
				}
			}
		})
	}
}

// TestSafeLine: in --ansi mode only the SGR sequences the renderer writes
// pass; any other ESC (which the emulator never draws into a cell) and
// the text around them are escaped.
func TestSafeLine(t *testing.T) {
	tests := []struct {
		name, line string
		ansi       bool
		want       string
	}{
		{"text", "a\u202eb", false, `a\u202eb`},
		{"text keeps no ESC", "\x1b[0;31ma", false, `\x1b[0;31ma`},
		{"ours kept", "\x1b[0;1;38;2;1;2;3ma\u2066b\x1b[0m", true, "\x1b[0;1;38;2;1;2;3ma\\u2066b\x1b[0m"},
		{"OSC escaped", "\x1b]0;pwned\x07a", true, `\x1b]0;pwned\x07a`},
		{"CSI other than SGR escaped", "\x1b[2Ja", true, `\x1b[2Ja`},
		{"unfinished SGR escaped", "a\x1b[0;3", true, `a\x1b[0;3`},
		{"ESC last", "a\x1b", true, `a\x1b`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := safeLine(tc.line, tc.ansi); got != tc.want {
				t.Errorf("safeLine(%q, %v) = %q, want %q", tc.line, tc.ansi, got, tc.want)
			}
		})
	}
}
