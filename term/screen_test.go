package term

import "testing"

func TestClampRange(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name             string
		r                Range
		scrollback, rows int
		from, to         int
	}{
		{"default: the screen", Range{}, 50, 24, 1, 24},
		{"scrollback only", Range{From: -5, To: n(0)}, 50, 24, -5, -1},
		{"oldest to the end", Range{Oldest: true}, 50, 24, -50, 24},
		{"oldest with none", Range{Oldest: true}, 0, 24, 1, 24},
		{"clamped both ways", Range{From: -100, To: n(100)}, 10, 24, -10, 24},
		{"scrollback asked, none kept", Range{From: -5, To: n(0)}, 0, 24, 1, -1},
		{"screen lines", Range{From: 3, To: n(4)}, 10, 24, 3, 4},
		{"past the screen", Range{From: 30}, 10, 24, 24, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := clampRange(tc.r, tc.scrollback, tc.rows)
			if from != tc.from || to != tc.to {
				t.Errorf("clampRange = %d, %d; want %d, %d", from, to, tc.from, tc.to)
			}
		})
	}
}
