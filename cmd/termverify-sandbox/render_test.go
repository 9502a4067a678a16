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
