package termmcp

import (
	"strings"
	"testing"
)

func TestLineAfter(t *testing.T) {
	for _, tc := range []struct{ first, k, want int }{
		{1, 0, 1}, {1, 4, 5}, {-3, 0, -3}, {-3, 2, -1}, {-3, 3, 1}, {-3, 5, 3},
	} {
		if got := lineAfter(tc.first, tc.k); got != tc.want {
			t.Errorf("lineAfter(%d, %d) = %d, want %d", tc.first, tc.k, got, tc.want)
		}
	}
}

func TestCutText(t *testing.T) {
	text := "aaaa\nbbbb\ncccc\ndddd\n" // 5 bytes a line
	for _, tc := range []struct {
		name         string
		first, limit int
		want         string
		next         int // 0: not cut
	}{
		{"fits", 1, 20, text, 0},
		{"two lines", 1, 12, "aaaa\nbbbb\n", 3},
		{"across the boundary", -2, 15, "aaaa\nbbbb\ncccc\n", 2},
		{"at least one line", -4, 2, "aaaa\n", -3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := cutText(text, tc.first, tc.limit)
			if got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
			switch {
			case tc.next == 0 && cut != nil:
				t.Errorf("cut %+v, want none", cut)
			case tc.next != 0 && cut == nil:
				t.Errorf("not cut, want next from %d", tc.next)
			case cut != nil:
				if cut.NextFrom != tc.next || cut.LinesTotal != 4 || cut.BytesTotal != len(text) || !strings.Contains(cut.Note, "from") {
					t.Errorf("cut %+v, want next from %d", cut, tc.next)
				}
			}
		})
	}
}

func TestSessionOfURI(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		want string
		ok   bool
	}{
		{"terminal://s1/screen", "s1", true},
		{"terminal:///screen", "", false},
		{"terminal://s1/other", "", false},
		{"terminal://a/b/screen", "", false},
		{"file://s1/screen", "", false},
	} {
		if got, ok := sessionOfURI(tc.uri); got != tc.want || ok != tc.ok {
			t.Errorf("sessionOfURI(%q) = %q, %t; want %q, %t", tc.uri, got, ok, tc.want, tc.ok)
		}
	}
}
