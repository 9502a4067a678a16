package vt

import (
	"fmt"
	"slices"
	"testing"
)

// TestScrollbackRange: a range of the scrollback renders as the same
// lines of Scrollback and ScrollbackANSI, clamped at both ends.
func TestScrollbackRange(t *testing.T) {
	term := New(Config{Cols: 20, Rows: 3, Scrollback: 50})
	for i := range 40 {
		fmt.Fprintf(term, "\x1b[3%dmline %d\x1b[0m\r\n", i%8, i)
	}
	plain, ansi := term.Scrollback(), term.ScrollbackANSI()
	if len(plain) < 30 || plain[0] != "line 0" {
		t.Fatalf("scrollback %q, want the lines scrolled off", plain)
	}
	for _, r := range [][2]int{{0, len(plain)}, {0, 1}, {5, 9}, {len(plain) - 2, len(plain)}, {-3, 2}, {len(plain) - 1, len(plain) + 5}, {7, 7}, {9, 4}} {
		lo, hi := max(r[0], 0), min(r[1], len(plain))
		var wantP, wantA []string
		if lo < hi {
			wantP, wantA = plain[lo:hi], ansi[lo:hi]
		}
		if got := term.ScrollbackRange(r[0], r[1], false); !slices.Equal(got, wantP) {
			t.Errorf("ScrollbackRange(%d, %d, plain) = %q, want %q", r[0], r[1], got, wantP)
		}
		if got := term.ScrollbackRange(r[0], r[1], true); !slices.Equal(got, wantA) {
			t.Errorf("ScrollbackRange(%d, %d, ansi) = %q, want %q", r[0], r[1], got, wantA)
		}
	}
}
