package vt

import (
	"bytes"
	"testing"
)

// TestOtherEmulatorBugs pins the six bugs of charmbracelet/x/vt v0.1.0,
// the emulator this one replaces (docs/VT.md), so that this emulator
// never has them.
func TestOtherEmulatorBugs(t *testing.T) {
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"ED1 erases from the start to the cursor inclusive, not the whole row", func(t *testing.T) {
			term := New(Config{Cols: 8, Rows: 2})
			term.WriteString("abcdefgh\x1b[1;4H\x1b[1J")
			if got := term.Lines()[0]; got != "    efgh" {
				t.Errorf("row %q, want %q", got, "    efgh")
			}
		}},
		{"a wide character reaching the last column is kept", func(t *testing.T) {
			term := New(Config{Cols: 5, Rows: 2})
			term.WriteString("abc" + wide)
			if got := term.Lines()[0]; got != "abc"+wide {
				t.Errorf("row %q", got)
			}
			term = New(Config{Cols: 5, Rows: 2})
			term.WriteString("abcd" + wide)
			if got := term.Lines(); got[0] != "abcd" || got[1] != wide {
				t.Errorf("rows %q: the wide character must wrap to the next line", got)
			}
		}},
		{"a scroll region below row 1 does not leak into the scrollback", func(t *testing.T) {
			term := New(Config{Cols: 5, Rows: 5, Scrollback: 100})
			term.WriteString("1\r\n2\r\n3\r\n4\r\n5\x1b[2;5r\x1b[5;1H")
			for i := 0; i < 10; i++ {
				term.WriteString("\nx")
			}
			if n := term.ScrollbackLen(); n != 0 {
				t.Errorf("scrollback has %d lines: %q", n, term.Scrollback())
			}
			if got := term.Lines()[0]; got != "1" {
				t.Errorf("line above the region %q", got)
			}
		}},
		{"ESC[5n answers ESC[0n", func(t *testing.T) {
			term := New(Config{Cols: 5, Rows: 2})
			term.WriteString("\x1b[5n")
			if got := string(term.Replies()); got != "\x1b[0n" {
				t.Errorf("reply %q", got)
			}
		}},
		{"shrinking keeps the rows above the cursor (in the scrollback)", func(t *testing.T) {
			term := New(Config{Cols: 5, Rows: 5, Scrollback: 100})
			term.WriteString("1\r\n2\r\n3\r\n4\r\n5")
			term.Resize(5, 3)
			if got := term.Lines(); got[0] != "3" || got[2] != "5" {
				t.Errorf("screen %q", got)
			}
			if got := term.Scrollback(); len(got) != 2 || got[0] != "1" || got[1] != "2" {
				t.Errorf("scrollback %q", got)
			}
		}},
		{"replies never block Write", func(t *testing.T) {
			term := New(Config{Cols: 5, Rows: 2})
			// Nobody drains: Write must still return at once.
			q := bytes.Repeat([]byte("\x1b[c\x1b[6n\x1b[5n"), 10000)
			if n, err := term.Write(q); n != len(q) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.check)
	}
}
