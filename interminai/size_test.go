package interminai

import (
	"errors"
	"testing"

	"github.com/termverify/termverify-sandbox/vt"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size // zero: refused with RuleSize
	}{
		{"80x24", Size{Cols: 80, Rows: 24}},
		{"120x40", Size{Cols: 120, Rows: 40}},
		{"1x1", Size{Cols: 1, Rows: 1}},
		{"1024x1024", Size{Cols: 1024, Rows: 1024}},
		{"080x024", Size{Cols: 80, Rows: 24}},
		{"1025x24", Size{}},
		{"80x1025", Size{}},
		{"0x24", Size{}},
		{"80x0", Size{}},
		{"80X24", Size{}},
		{"80x", Size{}},
		{"x24", Size{}},
		{"", Size{}},
		{"x", Size{}},
		{"80x24x1", Size{}},
		{"+80x24", Size{}},
		{"-1x24", Size{}},
		{" 80x24", Size{}},
		{"80 x 24", Size{}},
		{"notasize", Size{}},
		{"99999999999999999999x24", Size{}},
		{"80,24", Size{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if tc.want == (Size{}) {
				e, ok := errors.AsType[*Error](err)
				if !ok || e.Rule != RuleSize {
					t.Fatalf("ParseSize(%q) = %v, %v; want rule %s", tc.in, got, err, RuleSize)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSize(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if again, err := ParseSize(got.String()); err != nil || again != got {
				t.Fatalf("ParseSize(%q) = %v, %v; want %v", got.String(), again, err, got)
			}
		})
	}
}

// TestSizeBoundsMatchVT keeps the bounds the emulator's: a size vt would
// clamp is refused, not silently shrunk.
func TestSizeBoundsMatchVT(t *testing.T) {
	if MaxCols != vt.MaxCols || MaxRows != vt.MaxRows {
		t.Fatalf("interminai bounds %dx%d, vt's %dx%d", MaxCols, MaxRows, vt.MaxCols, vt.MaxRows)
	}
}
