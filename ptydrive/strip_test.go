package ptydrive

import (
	"strings"
	"testing"
)

// TestStrip: the readiness marker is taken out of the output wherever the
// reads split it, each one counted; a tail that only might begin a marker
// is held back, and shown if nothing completes it.
func TestStrip(t *testing.T) {
	cases := []struct {
		name    string
		reads   []string
		shown   string // what the terminal is given, in all
		held    string // left held back after the reads
		markers int
	}{
		{"none", []string{"hello", " world"}, "hello world", "", 0},
		{"whole", []string{"a<<M>>b"}, "ab", "", 1},
		{"split", []string{"a<<", "M>", ">b"}, "ab", "", 1},
		{"two, split", []string{"a<<M", ">>b<<", "M>>c"}, "abc", "", 2},
		{"adjacent", []string{"<<M>><<M>>"}, "", "", 2},
		{"prefix only", []string{"x<<"}, "x", "<<", 0},
		{"false start", []string{"x<<", "y"}, "x<<y", "", 0},
		{"overlap", []string{"<<<M>>"}, "", "<", 1}, // the "<" left may still begin one
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &Driver{marker: []byte("<<M>>")}
			var shown strings.Builder
			for _, r := range tc.reads {
				shown.Write(d.strip([]byte(r)))
			}
			if shown.String() != tc.shown || string(d.held) != tc.held || d.markers != tc.markers {
				t.Errorf("shown %q held %q markers %d, want %q %q %d", shown.String(), d.held, d.markers, tc.shown, tc.held, tc.markers)
			}
		})
	}
}
