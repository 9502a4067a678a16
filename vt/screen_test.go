package vt

import (
	"strings"
	"testing"
)

// screenCase is one row of the sequence-family tables: bytes in, the
// screen out. Every case is also replayed into tmux by
// TestTablesAgainstTmux, which must agree unless tmux says why it may not.
type screenCase struct {
	name       string
	cols, rows int    // 0: 10 × 4
	in         string // fed first
	resize     [2]int // then, unless zero, Resize(cols, rows)
	after      string // then fed
	want       []string
	cursor     *[2]int // row, x (x == cols: pending wrap); nil: not checked
	scrollback []string
	// tmux, when not empty, says why tmux 3.3a shows something else; the
	// case is then not compared with it.
	tmux string
	// tmuxScrollback, when not empty, says why tmux's history differs;
	// the screen is still compared.
	tmuxScrollback string
}

func at(row, x int) *[2]int { return &[2]int{row, x} }

func (c screenCase) size() (int, int) {
	if c.cols == 0 {
		return 10, 4
	}
	return c.cols, c.rows
}

func (c screenCase) run() *Terminal {
	cols, rows := c.size()
	t := New(Config{Cols: cols, Rows: rows, Scrollback: 2000})
	t.WriteString(c.in)
	if c.resize != [2]int{} {
		t.Resize(c.resize[0], c.resize[1])
	}
	t.WriteString(c.after)
	return t
}

func (c screenCase) stages() []stage {
	s := []stage{{data: []byte(c.in), cols: c.resize[0], rows: c.resize[1]}}
	if c.after != "" || c.resize != [2]int{} {
		s = append(s, stage{data: []byte(c.after)})
	}
	return s
}

func runScreenCases(t *testing.T, cases []screenCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			term := tc.run()
			got := term.Lines()
			if tc.want != nil {
				want := pad(tc.want, len(got))
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("screen:\n%s\nwant:\n%s", show(got), show(want))
				}
			}
			if tc.cursor != nil && (term.y != tc.cursor[0] || term.x != tc.cursor[1]) {
				t.Errorf("cursor row %d x %d, want row %d x %d", term.y, term.x, tc.cursor[0], tc.cursor[1])
			}
			if tc.scrollback != nil {
				if got := term.Scrollback(); strings.Join(got, "\n") != strings.Join(tc.scrollback, "\n") || len(got) != len(tc.scrollback) {
					t.Errorf("scrollback:\n%s\nwant:\n%s", show(got), show(tc.scrollback))
				}
			}
			checkInvariants(t, term)
		})
	}
}

// pad extends want with empty lines to n.
func pad(want []string, n int) []string {
	out := append([]string(nil), want...)
	for len(out) < n {
		out = append(out, "")
	}
	return out
}

func show(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		b.WriteString("  |" + l + "|")
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// checkInvariants fails when the grid is not exactly rows × cols, a wide
// character lost a half, or the cursor is off the screen.
func checkInvariants(t testing.TB, term *Terminal) {
	t.Helper()
	if len(term.scr.lines) != term.rows {
		t.Fatalf("screen has %d lines, want %d", len(term.scr.lines), term.rows)
	}
	for i := range term.scr.lines {
		cells := term.scr.lines[i].cells
		if len(cells) != term.cols {
			t.Fatalf("line %d has %d cells, want %d", i, len(cells), term.cols)
		}
		for x, c := range cells {
			wide := c.st.Attrs&attrWide != 0
			cont := c.st.Attrs&attrCont != 0
			if wide && (x+1 >= len(cells) || cells[x+1].st.Attrs&attrCont == 0) {
				t.Fatalf("line %d col %d: wide character without its second half", i, x)
			}
			if cont && (x == 0 || cells[x-1].st.Attrs&attrWide == 0) {
				t.Fatalf("line %d col %d: second half without a wide character", i, x)
			}
			if c.r < 0 && int(-c.r) > len(term.scr.lines[i].clusters) {
				t.Fatalf("line %d col %d: dangling cluster", i, x)
			}
		}
	}
	if term.x < 0 || term.x > term.cols || term.y < 0 || term.y >= term.rows {
		t.Fatalf("cursor x %d y %d off a %dx%d screen", term.x, term.y, term.cols, term.rows)
	}
	if term.top < 0 || term.bot >= term.rows || term.top >= term.bot && term.rows > 1 {
		t.Fatalf("scroll region %d..%d on %d rows", term.top, term.bot, term.rows)
	}
}

// All the tables, for the tmux comparison and the fuzz seeds.
func allScreenCases() []screenCase {
	var all []screenCase
	for _, f := range [][]screenCase{printCases, cursorCases, eraseCases, insertDeleteCases, scrollCases,
		tabCases, saveRestoreCases, altScreenCases, charsetCases, resetCases, stringCases, resizeCases} {
		all = append(all, f...)
	}
	return all
}

const wide = "\u4e00" // 一, two columns

const tmuxRegionHistory = "tmux 3.3a pushes the top line of every scrolled region into its history; we keep only scrolls of the whole screen, as the issue requires"

const tmuxOrphan = "tmux 3.3a leaves an orphaned half of the cut wide character; xterm and we blank both halves"

var printCases = []screenCase{
	{name: "plain", in: "hello", want: []string{"hello"}, cursor: at(0, 5)},
	{name: "CR LF", in: "ab\r\ncd", want: []string{"ab", "cd"}, cursor: at(1, 2)},
	{name: "delayed wrap at last column", cols: 5, rows: 3, in: "abcde", want: []string{"abcde"}, cursor: at(0, 5)},
	{name: "delayed wrap then char", cols: 5, rows: 3, in: "abcdefg", want: []string{"abcde", "fg"}, cursor: at(1, 2)},
	{name: "delayed wrap then CR stays", cols: 5, rows: 3, in: "abcde\rX", want: []string{"Xbcde"}, cursor: at(0, 1)},
	{name: "delayed wrap then LF keeps column", cols: 5, rows: 3, in: "abcde\nX", want: []string{"abcde", "", "X"}, cursor: at(2, 1)},
	{name: "wrap at bottom scrolls", cols: 5, rows: 2, in: "abcdefghijk", want: []string{"fghij", "k"}, scrollback: []string{"abcde"}},
	{name: "DECAWM off overwrites last column", cols: 5, rows: 3, in: "\x1b[?7labcdefg", want: []string{"abcdg"}, cursor: at(0, 4)},
	{name: "DECAWM off after pending drops", cols: 5, rows: 3, in: "abcde\x1b[?7lX", want: []string{"abcde"}, cursor: at(0, 5)},
	{name: "DECAWM back on", cols: 5, rows: 3, in: "\x1b[?7labcdef\x1b[?7hXY", want: []string{"abcdX", "Y"}},
	{name: "wide char", in: "a" + wide + "b", want: []string{"a" + wide + "b"}, cursor: at(0, 4)},
	{name: "wide char at right margin wraps", cols: 5, rows: 3, in: "abcd" + wide + "Z", want: []string{"abcd", wide + "Z"}, cursor: at(1, 3)},
	{name: "wide char fills last two columns", cols: 5, rows: 3, in: "abc" + wide, want: []string{"abc" + wide}, cursor: at(0, 5)},
	{name: "wide char at margin without autowrap dropped", cols: 5, rows: 3, in: "\x1b[?7labcd" + wide + "Z", want: []string{"abcdZ"}, cursor: at(0, 4)},
	{name: "wide chars wrapping rows", cols: 5, rows: 3, in: wide + wide + wide + wide, want: []string{wide + wide, wide + wide}},
	{name: "combining mark", in: "e\u0301x", want: []string{"e\u0301x"}, cursor: at(0, 2)},
	{name: "combining after wide", in: wide + "\u0301x", want: []string{wide + "\u0301x"}},
	{name: "combining at pending wrap joins last column", cols: 5, rows: 3, in: "abcde\u0301X", want: []string{"abcde\u0301", "X"}},
	{name: "combining at column 0 dropped", in: "\u0301ab", want: []string{"ab"}},
	{name: "zero width space joins", in: "a\u200bb", want: []string{"a\u200bb"}, cursor: at(0, 2)},
	{name: "unassigned rune dropped", in: "a\u0378b", want: []string{"ab"}},
	{name: "invalid UTF-8 dropped", in: "a\xffb\xc3|", want: []string{"ab|"}},
	{name: "C1 as UTF-8 dropped", in: "a\u009bb", want: []string{"ab"}},
	{name: "overwrite first half of wide", in: wide + wide + "\x1b[1;3HY", want: []string{wide + "Y"}},
	{name: "overwrite second half of wide", in: wide + wide + "\x1b[1;2HY", want: []string{" Y" + wide},
		tmux: "tmux 3.3a keeps the first half, drawing a wide character and Y in columns 0–1; xterm and we blank it"},
	{name: "REP repeats last char", in: "ab\x1b[3b", want: []string{"abbbb"}},
	{name: "IRM inserts", in: "abc\r\x1b[4hXY", want: []string{"XYabc"}, cursor: at(0, 2)},
	{name: "IRM pushes off the end", cols: 5, rows: 2, in: "abcde\r\x1b[4hX", want: []string{"Xabcd"}},
	{name: "IRM wide", cols: 5, rows: 3, in: "abc\x1b[4h" + wide + "X", want: []string{"abc" + wide, "X"}},
	{name: "IRM off", in: "abc\r\x1b[4h\x1b[4lX", want: []string{"Xbc"}},
	{name: "BS", in: "abc\b\bX", want: []string{"aXc"}},
	{name: "BS at column 0", in: "\bX", want: []string{"X"}},
	{name: "BS after pending wrap", cols: 5, rows: 3, in: "abcde\bX", want: []string{"abcdX"}, cursor: at(0, 5)},
	{name: "BS back over autowrap", cols: 5, rows: 3, in: "abcdefg\x1b[2;1H\bX", want: []string{"abcdX", "fg"}},
	{name: "BS not over hard newline", cols: 5, rows: 3, in: "ab\r\ncd\bX\b\bY", want: []string{"ab", "YX"}},
	{name: "BEL ignored", in: "a\x07b", want: []string{"ab"}},
	{name: "NUL and DEL ignored", in: "a\x00\x7fb", want: []string{"ab"}},
	{name: "LNM makes LF a newline", in: "\x1b[20hab\ncd", want: []string{"ab", "cd"}, tmux: "tmux 3.3a does not implement LNM for output (xterm does)"},
	{name: "VT and FF are LF", in: "a\vb\fc", want: []string{"a", " b", "  c"}},
	{name: "SGR does not change text", in: "\x1b[1;31mred\x1b[0m ok", want: []string{"red ok"}},
}

var cursorCases = []screenCase{
	{name: "CUP", in: "\x1b[2;3HX", want: []string{"", "  X"}},
	{name: "CUP default home", in: "abc\x1b[HX", want: []string{"Xbc"}},
	{name: "CUP clamps", in: "\x1b[99;99HX", want: []string{"", "", "", "         X"}, cursor: at(3, 10)},
	{name: "HVP", in: "\x1b[3;2fX", want: []string{"", "", " X"}},
	{name: "CUU CUD CUF CUB", in: "\x1b[3;5H\x1b[2AA\x1b[1BB\x1b[3CC\x1b[6DD", want: []string{"    A", "    DB   C"}, cursor: at(1, 5)},
	{name: "CUU stops at top", in: "\x1b[2;1H\x1b[9AX", want: []string{"X"}},
	{name: "CUD stops at bottom", in: "\x1b[9BX", want: []string{"", "", "", "X"}},
	{name: "CUF stops at last column", in: "\x1b[99CX", want: []string{"         X"}},
	{name: "CUB from pending wrap", cols: 5, rows: 3, in: "abcde\x1b[DX", want: []string{"abcdX"}},
	{name: "CUF from pending wrap", cols: 5, rows: 3, in: "abcde\x1b[CX", want: []string{"abcdX"}},
	{name: "CUU from pending wrap", cols: 5, rows: 3, in: "\nabcde\x1b[AX", want: []string{"    X", "abcde"}},
	{name: "CNL CPL", in: "ab\x1b[2Ecd\x1b[1Fef", want: []string{"ab", "ef", "cd"}},
	{name: "CHA", in: "abcdef\x1b[3GX", want: []string{"abXdef"}},
	{name: "HPA", in: "abcdef\x1b[2`X", want: []string{"aXcdef"}},
	{name: "HPR", in: "ab\x1b[2aX", want: []string{"ab  X"}, tmux: "tmux 3.3a does not implement HPR (xterm does)"},
	{name: "VPA keeps column", in: "abc\x1b[3dX", want: []string{"abc", "", "   X"}},
	{name: "VPR", in: "ab\x1b[2eX", want: []string{"ab", "", "  X"}, tmux: "tmux 3.3a does not implement VPR (xterm does)"},
	{name: "CUP zero is one", in: "\x1b[0;0HX", want: []string{"X"}},
	{name: "huge parameter", in: "\x1b[99999999999CX", want: []string{"         X"},
		tmux: "tmux 3.3a drops a sequence whose parameter overflows; we cap it at 65535"},
	{name: "large parameter", in: "\x1b[65535CX", want: []string{"         X"}},
	{name: "DECOM CUP relative to margin", rows: 6, cols: 10, in: "\x1b[3;5r\x1b[?6h\x1b[1;1HA\x1b[9;1HB", want: []string{"", "", "A", "", "B"}},
	{name: "DECOM off", rows: 6, cols: 10, in: "\x1b[3;5r\x1b[?6h\x1b[?6l\x1b[1;1HA", want: []string{"A"}},
	{name: "CUU stops at top margin", rows: 6, cols: 10, in: "\x1b[2;5r\x1b[4;1H\x1b[9AX", want: []string{"", "X"}},
	{name: "CUD stops at bottom margin", rows: 6, cols: 10, in: "\x1b[2;4r\x1b[2;1H\x1b[9BX", want: []string{"", "", "", "X"}},
	{name: "CUD on the bottom margin stays there", rows: 8, cols: 10, in: "\x1b[2;5r\x1b[5H\x1b[3BX", want: []string{"", "", "", "", "X"}, cursor: at(4, 1)},
	{name: "CUD below margin goes to bottom", rows: 6, cols: 10, in: "\x1b[2;3r\x1b[5;1H\x1b[9BX", want: []string{"", "", "", "", "", "X"}},
}

var eraseCases = []screenCase{
	{name: "ED0", in: "aaaa\r\nbbbb\r\ncccc\x1b[2;3H\x1b[J", want: []string{"aaaa", "bb"}},
	{name: "ED1 erases start to cursor inclusive only", in: "aaaa\r\nbbbbbbbb\r\ncccc\x1b[2;3H\x1b[1J", want: []string{"", "   bbbbb", "cccc"}},
	{name: "ED2", in: "aaaa\r\nbbbb\x1b[2J", want: []string{}, cursor: at(1, 4), scrollback: []string{"aaaa", "bbbb"}},
	{name: "ED0 at home is a clear", in: "aaaa\r\nbbbb\x1b[H\x1b[J", want: []string{}, scrollback: []string{"aaaa", "bbbb"}},
	{name: "ED2 on empty screen", in: "\x1b[2J", want: []string{}, scrollback: []string{}},
	{name: "ED3 clears scrollback", rows: 2, cols: 10, in: "1\r\n2\r\n3\r\n4\x1b[3J", want: []string{"3", "4"}, scrollback: []string{}},
	{name: "EL0", in: "abcdef\x1b[3G\x1b[K", want: []string{"ab"}},
	{name: "EL1 erases start to cursor inclusive", in: "abcdef\x1b[3G\x1b[1K", want: []string{"   def"}},
	{name: "EL2", in: "abcdef\x1b[3G\x1b[2KX", want: []string{"  X"}},
	{name: "EL0 at pending wrap erases nothing", cols: 5, rows: 3, in: "abcde\x1b[KX", want: []string{"abcde", "X"}},
	{name: "EL1 at pending wrap erases the line", cols: 5, rows: 3, in: "abcde\x1b[1KX", want: []string{"", "X"}},
	{name: "ECH", in: "abcdef\x1b[2G\x1b[3X", want: []string{"a   ef"}},
	{name: "ECH past the end", in: "abcdef\x1b[5G\x1b[99X", want: []string{"abcd"}},
	{name: "ECH at pending wrap", cols: 5, rows: 3, in: "abcde\x1b[XX", want: []string{"abcde", "X"}},
	{name: "EL on second half of wide", in: wide + wide + "\x1b[1;2H\x1b[KX", want: []string{" X"},
		tmux: "tmux 3.3a keeps the cut wide character's first half; xterm and we blank both halves"},
	{name: "ECH splits wide", in: wide + wide + "\x1b[1;3H\x1b[X", want: []string{wide}},
	{name: "DECSED DECSEL act as ED EL", in: "abcd\r\nefgh\x1b[1;3H\x1b[?K\x1b[2;2H\x1b[?1J", want: []string{"", "  gh"},
		tmux: "tmux 3.3a ignores DECSED and DECSEL; xterm erases as ED and EL when no cell is protected, as we do"},
}

var insertDeleteCases = []screenCase{
	{name: "ICH", in: "abcdef\x1b[3G\x1b[2@", want: []string{"ab  cdef"}, cursor: at(0, 2)},
	{name: "ICH pushes off the end", cols: 5, rows: 2, in: "abcde\x1b[2G\x1b[2@", want: []string{"a  bc"}},
	{name: "ICH at pending wrap does nothing", cols: 5, rows: 3, in: "abcde\x1b[@X", want: []string{"abcde", "X"}},
	{name: "ICH at last column", cols: 5, rows: 3, in: "abcde\x1b[1;5H\x1b[2@X", want: []string{"abcdX"}},
	{name: "DCH", in: "abcdef\x1b[2G\x1b[2P", want: []string{"adef"}},
	{name: "DCH more than left", in: "abcdef\x1b[2G\x1b[99P", want: []string{"a"}},
	{name: "DCH at pending wrap does nothing", cols: 5, rows: 3, in: "abcde\x1b[PX", want: []string{"abcde", "X"}},
	{name: "ICH splits wide", in: "a" + wide + "b\x1b[1;3H\x1b[@", want: []string{"a   b"}, tmux: tmuxOrphan},
	{name: "DCH splits wide", in: "a" + wide + "b\x1b[1;2H\x1b[P", want: []string{"a b"}, tmux: tmuxOrphan},
	{name: "IL", in: "1\r\n2\r\n3\r\n4\x1b[2;3H\x1b[L", want: []string{"1", "", "2", "3"}, cursor: at(1, 2)},
	{name: "IL many", in: "1\r\n2\r\n3\r\n4\x1b[2;1H\x1b[9L", want: []string{"1"}},
	{name: "DL", in: "1\r\n2\r\n3\r\n4\x1b[2;3H\x1b[M", want: []string{"1", "3", "4"}, cursor: at(1, 2)},
	{name: "DL does not feed scrollback", in: "1\r\n2\r\n3\r\n4\x1b[H\x1b[2M", want: []string{"3", "4"}, scrollback: []string{}},
	{name: "IL inside region", rows: 6, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\x1b[2;4r\x1b[3;1H\x1b[L", want: []string{"1", "2", "", "3", "5", "6"}},
	{name: "DL inside region", rows: 6, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\x1b[2;4r\x1b[2;1H\x1b[M", want: []string{"1", "3", "4", "", "5", "6"}},
	{name: "IL below region uses screen bottom", rows: 6, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\x1b[2;4r\x1b[5;1H\x1b[L", want: []string{"1", "2", "3", "4", "", "5"}},
	{name: "DL below region uses screen bottom", rows: 6, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\x1b[2;4r\x1b[5;1H\x1b[M", want: []string{"1", "2", "3", "4", "6"}},
	{name: "IL with background", in: "1\r\n2\x1b[1;1H\x1b[44m\x1b[L\x1b[0m", want: []string{"", "1", "2"}},
}

var scrollCases = []screenCase{
	{name: "LF at bottom scrolls into scrollback", rows: 3, cols: 10, in: "1\r\n2\r\n3\r\n4", want: []string{"2", "3", "4"}, scrollback: []string{"1"}},
	{name: "SU", rows: 3, cols: 10, in: "1\r\n2\r\n3\x1b[2S", want: []string{"3"}, scrollback: []string{"1", "2"}, cursor: at(2, 1)},
	{name: "SD", rows: 3, cols: 10, in: "1\r\n2\r\n3\x1b[T", want: []string{"", "1", "2"}, scrollback: []string{}},
	{name: "SU more than screen", rows: 3, cols: 10, in: "1\r\n2\r\n3\x1b[9S", want: []string{}, scrollback: []string{"1", "2", "3"}},
	{name: "IND", rows: 3, cols: 10, in: "ab\x1bDcd", want: []string{"ab", "  cd"}},
	{name: "IND at bottom scrolls", rows: 2, cols: 10, in: "a\r\nb\x1bDc", want: []string{"b", " c"}, scrollback: []string{"a"}},
	{name: "NEL", rows: 3, cols: 10, in: "ab\x1bEcd", want: []string{"ab", "cd"}},
	{name: "RI", rows: 3, cols: 10, in: "\r\nab\x1bMcd", want: []string{"  cd", "ab"}},
	{name: "RI at top scrolls down", rows: 3, cols: 10, in: "1\r\n2\r\n3\x1b[H\x1bMx", want: []string{"x", "1", "2"}, scrollback: []string{}},
	{name: "region LF at bottom margin", rows: 5, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[2;4r\x1b[4;1H\nX", want: []string{"1", "3", "4", "X", "5"}, scrollback: []string{},
		tmuxScrollback: tmuxRegionHistory},
	{name: "region with top margin below row 1 keeps scrollback", rows: 5, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[2;5r\x1b[5;1H\n\n\nX", want: []string{"1", "5", "", "", "X"}, scrollback: []string{},
		tmuxScrollback: tmuxRegionHistory},
	{name: "region from top with bottom margin keeps scrollback", rows: 5, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[1;4r\x1b[4;1H\n\nX", want: []string{"3", "4", "", "X", "5"}, scrollback: []string{},
		tmuxScrollback: tmuxRegionHistory},
	{name: "region RI at top margin", rows: 5, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[2;4r\x1b[2;1H\x1bMX", want: []string{"1", "X", "2", "3", "5"}},
	{name: "region SU", rows: 5, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[2;4r\x1b[S", want: []string{"1", "3", "4", "", "5"}, scrollback: []string{},
		tmuxScrollback: tmuxRegionHistory},
	{name: "region SD", rows: 5, cols: 10, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[2;4r\x1b[2T", want: []string{"1", "", "", "2", "5"}},
	{name: "LF below region does not scroll", rows: 5, cols: 10, in: "\x1b[1;3r\x1b[5;1HX\nY", want: []string{"", "", "", "", "XY"}},
	{name: "DECSTBM homes cursor", rows: 5, cols: 10, in: "abc\x1b[2;4rX", want: []string{"Xbc"}},
	{name: "DECSTBM invalid ignored", rows: 5, cols: 10, in: "\x1b[3;3r\x1b[5;1H\nX", want: []string{"", "", "", "", "X"}, scrollback: []string{""}},
	{name: "DECSTBM reset", rows: 3, cols: 10, in: "1\r\n2\r\n3\x1b[2;3r\x1b[r\x1b[3;1H\nX", want: []string{"2", "3", "X"}, scrollback: []string{"1"}},
	{name: "scroll with background", rows: 2, cols: 10, in: "1\r\n2\x1b[41m\n\x1b[0mX", want: []string{"2", " X"}},
}

var tabCases = []screenCase{
	{name: "HT default stops", cols: 20, rows: 2, in: "a\tb\tc", want: []string{"a       b       c"}},
	{name: "HT at last column stays", cols: 10, rows: 2, in: "\x1b[1;10H\tX", want: []string{"         X"}},
	{name: "HT to last column", cols: 12, rows: 2, in: "\x1b[1;10H\tX", want: []string{"           X"}},
	{name: "HT at pending wrap", cols: 5, rows: 3, in: "abcde\tX", want: []string{"abcde", "X"}},
	{name: "HTS", cols: 20, rows: 2, in: "\x1b[4G\x1bH\rx\ty", want: []string{"x  y"}},
	{name: "TBC 0", cols: 20, rows: 2, in: "\x1b[9G\x1b[g\rx\ty", want: []string{"x               y"}},
	{name: "TBC 3", cols: 20, rows: 2, in: "\x1b[3g\rx\ty", want: []string{"x                  y"}},
	{name: "CHT", cols: 30, rows: 2, in: "x\x1b[2Iy", want: []string{"x               y"}, tmux: "tmux 3.3a does not implement CHT (xterm does)"},
	{name: "CBT", cols: 30, rows: 2, in: "\x1b[20G\x1b[2Zy", want: []string{"        y"}},
	{name: "HT keeps cells", cols: 20, rows: 2, in: "abcdefghij\r\tX", want: []string{"abcdefghXj"}},
}

var saveRestoreCases = []screenCase{
	{name: "DECSC DECRC position", in: "ab\x1b7\x1b[3;5Hx\x1b8y", want: []string{"aby", "", "    x"}},
	{name: "CSI s u", in: "ab\x1b[s\x1b[3;5Hx\x1b[uy", want: []string{"aby", "", "    x"}},
	{name: "DECRC restores charset", in: "\x1b(0\x1b7\x1b(Bq\x1b8q", want: []string{"─"}},
	{name: "DECRC without save homes", in: "abc\x1b8X", want: []string{"Xbc"}},
	{name: "DECRC of pending wrap", cols: 5, rows: 3, in: "abcde\x1b7\x1b[2;1H\x1b8X", want: []string{"abcdX"}},
}

var altScreenCases = []screenCase{
	{name: "1049 saves and restores", in: "main\x1b[?1049halt\x1b[2;2Hx\x1b[?1049lX", want: []string{"mainX"}, cursor: at(0, 5)},
	{name: "1049 starts blank", in: "main\x1b[?1049h", want: []string{}, cursor: at(0, 4)},
	{name: "1049 twice starts blank", in: "\x1b[?1049hone\x1b[?1049l\x1b[?1049h", want: []string{}},
	{name: "alt screen feeds no scrollback", rows: 2, cols: 10, in: "\x1b[?1049h1\r\n2\r\n3\r\n4", want: []string{"3", "4"}, scrollback: []string{}},
	{name: "47 keeps cursor", in: "ab\x1b[?47hcd\x1b[?47lX", want: []string{"ab  X"}},
	{name: "1047", in: "ab\x1b[?1047hcd\x1b[2;1H\x1b[?1047lX", want: []string{"ab", "X"}},
	{name: "1048 saves cursor", in: "ab\x1b[?1048h\x1b[3;3H\x1b[?1048lX", want: []string{"abX"}, tmux: "tmux 3.3a does not implement 1048 (xterm does)"},
	{name: "alt restores pen", in: "\x1b[31m\x1b[?1049h\x1b[0m\x1b[?1049lX", want: []string{"X"}},
	{name: "1049l without h", in: "ab\x1b[?1049lX", want: []string{"abX"}},
}

var charsetCases = []screenCase{
	{name: "ESC ( 0 line drawing", in: "\x1b(0lqqk\x1b(B x", want: []string{"┌──┐ x"}},
	{name: "SO SI with G1", in: "\x1b)0\x0elqk\x0f y", want: []string{"┌─┐ y"}},
	{name: "SO without G1 designated is ASCII", in: "\x0elqk\x0f", want: []string{"lqk"}},
	{name: "all DEC graphics", cols: 40, rows: 2, in: "\x1b(0`abcdefghijklmnopqrstuvwxyz{|}~\x1b(B", want: []string{"◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·"}},
	{name: "UK set is ASCII", in: "\x1b(A#\x1b(B#", want: []string{"##"}},
	{name: "box", cols: 6, rows: 4, in: "\x1b(0lqqqqk\r\nx    x\r\nmqqqqj\x1b(B", want: []string{"┌────┐", "│    │", "└────┘"}},
	{name: "RIS resets charset", in: "\x1b(0\x1bcq", want: []string{"q"}},
}

var resetCases = []screenCase{
	{name: "RIS", in: "abc\x1b[?7l\x1b[5;9r\x1b[31m\x1bcX", want: []string{"X"}, scrollback: []string{"abc"}},
	{name: "DECSTR keeps screen", in: "abc\x1b[4h\x1b[!p\rX", want: []string{"Xbc"}, tmux: "tmux 3.3a does not implement DECSTR (xterm does)"},
	{name: "DECALN", cols: 4, rows: 2, in: "\x1b#8", want: []string{"EEEE", "EEEE"}, cursor: at(0, 0)},
}

var stringCases = []screenCase{
	{name: "OSC title BEL", in: "a\x1b]2;title\x07b", want: []string{"ab"}},
	{name: "OSC title ST", in: "a\x1b]0;title\x1b\\b", want: []string{"ab"}},
	{name: "DCS swallowed", in: "a\x1bP1$qm\x1b\\b", want: []string{"ab"}},
	{name: "DCS with text swallowed", in: "a\x1bPq#0;2;0;0;0#0!10~-\x1b\\b", want: []string{"ab"}},
	{name: "APC swallowed", in: "a\x1b_Gf=24;AAAA\x1b\\b", want: []string{"ab"}},
	{name: "PM swallowed", in: "a\x1b^private\x1b\\b", want: []string{"ab"}},
	{name: "SOS swallowed", in: "a\x1bXstring\x1b\\b", want: []string{"ab"}},
	{name: "CAN aborts CSI", in: "a\x1b[3\x18Cb", want: []string{"aCb"}},
	{name: "SUB aborts CSI", in: "a\x1b[3\x1aCb", want: []string{"aCb"}},
	{name: "ESC restarts", in: "a\x1b[3\x1b[2Cb", want: []string{"a  b"}},
	{name: "control inside CSI executes", in: "ab\x1b[1\rD", want: []string{"ab"}, cursor: at(0, 0)},
	{name: "unknown CSI ignored", in: "a\x1b[5;6yb", want: []string{"ab"}},
	{name: "private marker after params ignored", in: "a\x1b[1?Cb", want: []string{"ab"}},
	{name: "unknown ESC ignored", in: "a\x1bqb", want: []string{"ab"}},
	{name: "OSC unterminated then text", in: "a\x1b]2;t\x1b[1mb", want: []string{"ab"}},
}

var resizeCases = []screenCase{
	{name: "shrink drops lines below cursor first", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[2;1H", resize: [2]int{5, 3}, want: []string{"1", "2", "3"}, cursor: at(1, 0), scrollback: []string{}},
	{name: "shrink keeps rows above cursor in scrollback", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[4;1H", resize: [2]int{5, 3}, want: []string{"2", "3", "4"}, cursor: at(2, 0), scrollback: []string{"1"}},
	{name: "shrink with cursor at bottom", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5", resize: [2]int{5, 2}, want: []string{"4", "5"}, cursor: at(1, 1), scrollback: []string{"1", "2", "3"}},
	{name: "grow pulls back scrollback", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7\x1b[2;1H", resize: [2]int{5, 7}, want: []string{"1", "2", "3", "4", "5", "6", "7"}, cursor: at(3, 0), scrollback: []string{}},
	{name: "grow beyond scrollback adds blank rows", cols: 5, rows: 3, in: "1\r\n2\r\n3\r\n4", resize: [2]int{5, 6}, after: "X", want: []string{"1", "2", "3", "4X"}, scrollback: []string{}},
	{name: "grow after clear pulls nothing", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7\x1b[2J\x1b[H", resize: [2]int{5, 7}, want: []string{}, cursor: at(0, 0)},
	{name: "shrink then grow round trip", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5", resize: [2]int{5, 2}, after: "\x1b[8;5;5t", want: []string{"4", "5"}},
	{name: "alt shrink drops below then top", cols: 5, rows: 5, in: "\x1b[?1049h1\r\n2\r\n3\r\n4\r\n5\x1b[4;1H", resize: [2]int{5, 2}, want: []string{"3", "4"}, cursor: at(1, 0), scrollback: []string{}},
	{name: "alt grow adds blank rows", cols: 5, rows: 3, in: "1\r\n2\r\n3\r\n4\x1b[?1049h\x1b[Halt\x1b[3;1H", resize: [2]int{5, 5}, want: []string{"alt"}, cursor: at(2, 0)},
	{name: "alt grow then exit resizes main", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7\x1b[?1049h\x1b[Halt\x1b[3;1H", resize: [2]int{5, 7}, after: "\x1b[?1049l", want: []string{"1", "2", "3", "4", "5", "6", "7"}, cursor: at(6, 1)},
	{name: "alt shrink then exit", cols: 5, rows: 5, in: "1\r\n2\r\n3\r\n4\r\n5\x1b[?1049h", resize: [2]int{5, 3}, after: "\x1b[?1049lX", want: []string{"3", "4", "5X"}, scrollback: []string{"1", "2"}},
	{name: "alt narrower cuts lines", cols: 8, rows: 3, in: "\x1b[?1049habcdefgh\r\nxy\x1b[1;3H", resize: [2]int{4, 3}, want: []string{"abcd", "xy"}, cursor: at(0, 2)},
	{name: "alt wider pads lines", cols: 4, rows: 3, in: "\x1b[?1049habcd\r\nxy", resize: [2]int{8, 3}, after: "\x1b[1;6HZ", want: []string{"abcd Z", "xy"}},
	{name: "narrower cuts a wide char", cols: 6, rows: 2, in: "\x1b[?1049habcd" + wide, resize: [2]int{5, 2}, want: []string{"abcd"}, cursor: at(0, 4),
		tmux: "tmux 3.3a shows the cut wide character alone (一) with the cursor past the edge"},
	{name: "main narrower does not rewrap", cols: 8, rows: 3, in: "abcdefgh\r\nxy\x1b[1;3H", resize: [2]int{4, 3}, want: []string{"abcd", "xy"},
		tmux: "tmux rewraps the main screen on a width change (abcd/efgh); we cut, see docs/VT.md"},
	{name: "main wider does not rejoin", cols: 5, rows: 3, in: "abcdefg", resize: [2]int{8, 3}, want: []string{"abcde", "fg"},
		tmux: "tmux rejoins wrapped lines on the main screen; we keep them as they were drawn"},
	{name: "resize resets region", cols: 5, rows: 5, in: "\x1b[2;3r", resize: [2]int{5, 4}, after: "\x1b[4;1H\nX", want: []string{"", "", "", "X"}},
}

func TestPrint(t *testing.T)        { runScreenCases(t, printCases) }
func TestCursor(t *testing.T)       { runScreenCases(t, cursorCases) }
func TestErase(t *testing.T)        { runScreenCases(t, eraseCases) }
func TestInsertDelete(t *testing.T) { runScreenCases(t, insertDeleteCases) }
func TestScroll(t *testing.T)       { runScreenCases(t, scrollCases) }
func TestTabs(t *testing.T)         { runScreenCases(t, tabCases) }
func TestSaveRestore(t *testing.T)  { runScreenCases(t, saveRestoreCases) }
func TestAltScreen(t *testing.T)    { runScreenCases(t, altScreenCases) }
func TestCharsets(t *testing.T)     { runScreenCases(t, charsetCases) }
func TestReset(t *testing.T)        { runScreenCases(t, resetCases) }
func TestStrings(t *testing.T)      { runScreenCases(t, stringCases) }
func TestResize(t *testing.T)       { runScreenCases(t, resizeCases) }

// TestTablesAgainstTmux replays every table case into tmux and requires
// the same screen, cursor, scrollback and modes, except where a case says
// why tmux differs.
func TestTablesAgainstTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux comparison skipped in -short mode")
	}
	srv := startTmux(t)
	cases := allScreenCases()
	var jobs []replayJob
	for _, tc := range cases {
		if tc.tmux == "" {
			cols, rows := tc.size()
			jobs = append(jobs, replayJob{cols, rows, tc.stages()})
		}
	}
	results := srv.replayAll(t, jobs)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tmux != "" {
				t.Skipf("tmux differs on purpose: %s", tc.tmux)
			}
			r := results[0]
			results = results[1:]
			for _, d := range compareTmux(tc.run(), r, tc.tmuxScrollback == "") {
				t.Error(d)
			}
		})
	}
}
