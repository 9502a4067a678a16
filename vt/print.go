package vt

import "unicode/utf8"

// decGraphics maps 0x5f–0x7e to what the DEC Special Graphics set draws
// there, so that line drawing reads as drawn (┌──┐, not lqqk).
var decGraphics = [32]rune{
	0x00a0, // _ blank
	0x25c6, // ` diamond
	0x2592, // a checkerboard
	0x2409, // b HT
	0x240c, // c FF
	0x240d, // d CR
	0x240a, // e LF
	0x00b0, // f degree
	0x00b1, // g plus/minus
	0x2424, // h NL
	0x240b, // i VT
	0x2518, // j ┘
	0x2510, // k ┐
	0x250c, // l ┌
	0x2514, // m └
	0x253c, // n ┼
	0x23ba, // o scan line 1
	0x23bb, // p scan line 3
	0x2500, // q ─
	0x23bc, // r scan line 7
	0x23bd, // s scan line 9
	0x251c, // t ├
	0x2524, // u ┤
	0x2534, // v ┴
	0x252c, // w ┬
	0x2502, // x │
	0x2264, // y ≤
	0x2265, // z ≥
	0x03c0, // { π
	0x2260, // | ≠
	0x00a3, // } £
	0x00b7, // ~ ·
}

// translate maps an ASCII byte through the character set in GL.
func (t *Terminal) translate(b byte) rune {
	switch t.g[t.gl] {
	case charsetDECGraphics:
		if b >= 0x5f && b <= 0x7e {
			return decGraphics[b-0x5f]
		}
	}
	return rune(b)
}

// printASCII draws a run of printable ASCII bytes. The common case
// (ASCII set, autowrap, no insert mode) stores cells straight into the
// line, a line-width chunk at a time.
func (t *Terminal) printASCII(s []byte) {
	if t.g[t.gl] != charsetASCII || t.modes.Insert || !t.modes.Autowrap {
		for _, b := range s {
			t.printRune(t.translate(b))
		}
		return
	}
	t.lastPrint = rune(s[len(s)-1])
	pen := t.pen
	for len(s) > 0 {
		if t.x >= t.cols {
			t.wrap()
		}
		l := t.scr.row(t.y)
		x := t.x
		n := min(len(s), t.cols-x)
		l.breakWide(x)
		l.breakWide(x + n)
		cells := l.cells[x : x+n]
		for i, b := range s[:n] {
			cells[i] = cell{r: rune(b), st: pen}
		}
		t.x = x + n
		s = s[n:]
	}
}

// wrap moves the cursor to the start of the next line for autowrap,
// marking the line it leaves as continued.
func (t *Terminal) wrap() {
	t.scr.row(t.y).wrapped = true
	t.index(0)
	t.x = 0
}

// printRune draws one character (already translated through the
// character set), following tmux: a mark of width 0 joins the character
// before the cursor; a character that does not fit before the right
// margin wraps when autowrap is on, and is dropped when it is off and it
// is wide.
func (t *Terminal) printRune(r rune) {
	w := runeWidth(r)
	if w < 0 {
		var b [4]byte
		t.diagnose(DiagUndrawable, b[:utf8.EncodeRune(b[:], r)])
		return
	}
	if w == 0 {
		t.combine(r)
		return
	}
	t.lastPrint = r
	cols := t.cols
	if w > cols || (!t.modes.Autowrap && w > 1 && t.x != cols && t.x > cols-w) {
		return
	}
	if t.modes.Insert && t.x < cols {
		t.scr.row(t.y).insert(t.x, w, 0)
	}
	if t.modes.Autowrap && t.x > cols-w {
		t.wrap()
	}
	if t.x > cols-w {
		return // autowrap off and the cursor past the last column
	}
	l := t.scr.row(t.y)
	x := t.x
	l.breakWide(x)
	l.breakWide(x + w)
	c := cell{r: r, st: t.pen}
	if w == 2 {
		c.st.Attrs |= attrWide
		l.cells[x] = c
		l.cells[x+1] = cell{st: Style{Fg: t.pen.Fg, Bg: t.pen.Bg, Attrs: t.pen.Attrs | attrCont}}
	} else {
		l.cells[x] = c
	}
	// With autowrap off the cursor sticks in the last column and the
	// next character replaces this one.
	last := cols
	if !t.modes.Autowrap {
		last = cols - 1
	}
	t.x = min(x+w, last)
}

// combine joins a zero-width mark to the character before the cursor
// (the first column of a wide one). At the left margin there is none, and
// the mark is dropped, as tmux drops it.
func (t *Terminal) combine(r rune) {
	var enc [4]byte
	mark := enc[:utf8.EncodeRune(enc[:], r)]
	if t.x == 0 {
		t.diagnose(DiagUndrawable, mark)
		return
	}
	l := t.scr.row(t.y)
	x := min(t.x, t.cols) - 1
	if x > 0 && l.cells[x].st.Attrs&attrCont != 0 {
		x--
	}
	base := l.text(x)
	// A cluster is bounded, as in tmux, so that endless marks cannot
	// grow a cell.
	if len(base)+len(mark) > 32 {
		t.diagnose(DiagTooLong, mark)
		return
	}
	l.setCluster(x, base+string(mark))
}
