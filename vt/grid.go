package vt

import "unicode/utf8"

// cell is one column of a line: 16 bytes, so that a line of cells is one
// flat slice that clears with a single loop and copies with memmove.
type cell struct {
	// r is 0 for a blank cell (drawn as a space), the rune drawn, or,
	// when negative, the grapheme cluster clusters[-r-1] of its line (a
	// base character with combining marks, which does not fit a rune).
	r  rune
	st Style
}

// blank is an erased cell: erasing keeps only the current background
// colour, as xterm and tmux do (BCE).
func blank(bg Color) cell { return cell{st: Style{Bg: bg}} }

// line is one row of the screen.
type line struct {
	cells []cell
	// clusters holds the grapheme clusters its cells refer to. Cells
	// that are overwritten leave their entry behind; compactClusters
	// bounds the garbage.
	clusters []string
	// wrapped says the text continues on the next line because autowrap
	// moved the cursor there: the two are one logical line.
	wrapped bool
}

func newLine(cols int) line { return line{cells: make([]cell, cols)} }

// reset blanks the whole line with background bg.
func (l *line) reset(bg Color) {
	if bg == 0 {
		clear(l.cells)
	} else {
		b := blank(bg)
		for i := range l.cells {
			l.cells[i] = b
		}
	}
	l.clusters = l.clusters[:0]
	l.wrapped = false
}

// erase blanks cells [from, to) with background bg, and the other half
// of any wide character the range cuts.
func (l *line) erase(from, to int, bg Color) {
	if from < 0 {
		from = 0
	}
	if to > len(l.cells) {
		to = len(l.cells)
	}
	if from >= to {
		return
	}
	l.breakWide(from)
	l.breakWide(to)
	b := blank(bg)
	for i := from; i < to; i++ {
		l.cells[i] = b
	}
}

// breakWide is called before the cells from x on change independently of
// the cells before x: a wide character whose halves straddle x would be
// left half-drawn, so both halves become blank, keeping their background
// (xterm does the same).
func (l *line) breakWide(x int) {
	if x <= 0 || x >= len(l.cells) || l.cells[x].st.Attrs&attrCont == 0 {
		return
	}
	l.cells[x-1] = blank(l.cells[x-1].st.Bg)
	l.cells[x] = blank(l.cells[x].st.Bg)
}

// fixRightEdge blanks a wide character's first half left alone in the last
// column when its second half was pushed off the line.
func (l *line) fixRightEdge() {
	n := len(l.cells)
	if n > 0 && l.cells[n-1].st.Attrs&attrWide != 0 {
		l.cells[n-1] = blank(l.cells[n-1].st.Bg)
	}
}

// insert shifts cells from x right by n (cells pushed past the end are
// lost) and blanks the n cells opened at x.
func (l *line) insert(x, n int, bg Color) {
	cols := len(l.cells)
	if x < 0 || x >= cols || n <= 0 {
		return
	}
	if n > cols-x {
		n = cols - x
	}
	l.breakWide(x)
	copy(l.cells[x+n:], l.cells[x:cols-n])
	b := blank(bg)
	for i := x; i < x+n; i++ {
		l.cells[i] = b
	}
	l.fixRightEdge()
}

// delete removes n cells at x, shifting the rest left and blanking the n
// cells opened at the end.
func (l *line) delete(x, n int, bg Color) {
	cols := len(l.cells)
	if x < 0 || x >= cols || n <= 0 {
		return
	}
	if n > cols-x {
		n = cols - x
	}
	l.breakWide(x)
	l.breakWide(x + n)
	copy(l.cells[x:], l.cells[x+n:])
	b := blank(bg)
	for i := cols - n; i < cols; i++ {
		l.cells[i] = b
	}
}

// used reports whether any cell differs from a default blank: tmux's test
// for which lines a clear pushes into the scrollback.
func (l *line) used() bool {
	for i := range l.cells {
		if l.cells[i] != (cell{}) {
			return true
		}
	}
	return false
}

// setCluster makes cell x refer to cluster s.
func (l *line) setCluster(x int, s string) {
	if len(l.clusters) >= len(l.cells)+8 {
		l.compactClusters()
	}
	l.clusters = append(l.clusters, s)
	l.cells[x].r = -rune(len(l.clusters))
}

// compactClusters drops the entries no cell refers to any more, so a
// program that keeps rewriting combining characters in place cannot grow
// a line without bound.
func (l *line) compactClusters() {
	var kept []string
	for i := range l.cells {
		if r := l.cells[i].r; r < 0 {
			kept = append(kept, l.clusters[-r-1])
			l.cells[i].r = -rune(len(kept))
		}
	}
	l.clusters = kept
}

// text returns what cell x draws: its cluster, its rune, or a space.
func (l *line) text(x int) string {
	switch r := l.cells[x].r; {
	case r < 0:
		return l.clusters[-r-1]
	case r == 0:
		return " "
	default:
		return string(r)
	}
}

// appendText appends what cell c draws.
func (l *line) appendText(b []byte, c cell) []byte {
	switch {
	case c.r < 0:
		return append(b, l.clusters[-c.r-1]...)
	case c.r == 0:
		return append(b, ' ')
	case c.r < 0x80:
		return append(b, byte(c.r))
	default:
		return utf8.AppendRune(b, c.r)
	}
}

// resize makes the line cols wide: cells past the new width are lost (no
// rewrap), new cells are blank.
func (l *line) resize(cols int) {
	old := len(l.cells)
	switch {
	case cols < old:
		l.cells = l.cells[:cols:cols]
		l.fixRightEdge()
		l.wrapped = false
	case cols > old:
		if cols <= cap(l.cells) {
			l.cells = l.cells[:cols]
			clear(l.cells[old:])
		} else {
			c := make([]cell, cols)
			copy(c, l.cells)
			l.cells = c
		}
	}
}

// screen is a grid of lines, the main or the alternate screen. The lines
// are a ring: row y is lines[(base+y) % len(lines)], so that scrolling
// the whole screen, what log output does for every line, moves no line
// (base advances and the line that left the top is reused at the bottom).
type screen struct {
	lines []line
	base  int
	cols  int
}

// row returns row y.
func (s *screen) row(y int) *line {
	i := s.base + y
	if i >= len(s.lines) {
		i -= len(s.lines)
	}
	return &s.lines[i]
}

// linear returns the lines in row order, first turning the ring so that
// it starts at index 0: for the operations on ranges of rows, which are
// rarer than whole-screen scrolls.
func (s *screen) linear() []line {
	if s.base != 0 {
		rotate(s.lines, s.base)
		s.base = 0
	}
	return s.lines
}

func newScreen(cols, rows int) *screen {
	s := &screen{cols: cols, lines: make([]line, rows)}
	// One allocation for all rows: cells of a fresh screen are contiguous.
	backing := make([]cell, cols*rows)
	for i := range s.lines {
		s.lines[i].cells = backing[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return s
}

func (s *screen) rows() int { return len(s.lines) }
