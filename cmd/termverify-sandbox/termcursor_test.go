package main

import (
	"testing"

	"github.com/termverify/termverify-sandbox/interminai"
)

// TestMarkCursor: output --cursor inverse wraps exactly the cell under
// the cursor, counting cells as the emulator draws them (wide characters,
// combining marks, SGR that takes no cell), on the right line when
// scrollback lines come first, and marks a space past a line's end.
func TestMarkCursor(t *testing.T) {
	const on, off = "\x1b[7m", "\x1b[27m"
	cases := []struct {
		name     string
		screen   string
		from     int
		row, col int
		ansi     bool
		want     string
	}{
		{"ascii", "abc\ndef\n", 1, 1, 1, false, "abc\nd" + on + "e" + off + "f\n"},
		{"past the end", "ab\n", 1, 0, 4, false, "ab  " + on + " " + off + "\n"},
		{"a wide character's second cell", "日本\n", 1, 0, 3, false, "日" + on + "本" + off + "\n"},
		{"a combining mark goes with its base", "e\u0301x\n", 1, 0, 0, false, on + "e\u0301" + off + "x\n"},
		{"SGR takes no cell", "\x1b[31mred\x1b[0m!\n", 1, 0, 3, true, "\x1b[31mred\x1b[0m" + on + "!" + off + "\n"},
		{"after two scrollback lines", "s1\ns2\nab\n", -2, 0, 1, false, "s1\ns2\na" + on + "b" + off + "\n"},
		{"the cursor's line is not shown", "x\n", 3, 0, 0, false, "x\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := interminai.OutputData{Screen: tc.screen, From: tc.from, Cursor: interminai.Cursor{Row: tc.row, Col: tc.col}}
			if got := markCursor(out, tc.ansi); got != tc.want {
				t.Errorf("markCursor = %q, want %q", got, tc.want)
			}
		})
	}
}
