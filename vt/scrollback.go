package vt

import "unicode/utf8"

// sbLine is a line kept in the scrollback, stored compactly: the screen's
// 16-byte cells would cost 1,280 bytes for an 80-column line, while a
// typical log line needs its text and one style run.
type sbLine struct {
	// text is what the cells draw, in order: a wide character once (its
	// second cell is implied by its width), combining marks after their
	// base, blank cells as spaces. Trailing default blank cells are
	// dropped.
	text string
	// runs are the styles of the cells, as runs over cell columns; nil
	// when every cell has the default style.
	runs    []styleRun
	wrapped bool
}

// styleRun says that the cells from column start up to the next run's
// start have style st.
type styleRun struct {
	start uint16
	st    Style
}

// scrollback is a bounded ring of lines, oldest first.
type scrollback struct {
	ring  []sbLine
	start int // index of the oldest line in ring
	n     int // lines held
	limit int // capacity
	// pullable counts the newest lines that scrolled off the top and may
	// come back when the screen grows taller; lines pushed by a clear do
	// not come back, as in tmux.
	pullable int
	buf      []byte // scratch for compacting
}

func (sb *scrollback) at(i int) *sbLine {
	j := sb.start + i
	if j >= len(sb.ring) {
		j -= len(sb.ring)
	}
	return &sb.ring[j]
}

// push appends l, dropping the oldest line when full.
func (sb *scrollback) push(l *line, pullable bool) {
	if sb.limit == 0 {
		return
	}
	var slot *sbLine
	switch {
	case sb.n < len(sb.ring):
		slot = sb.at(sb.n)
		sb.n++
	case len(sb.ring) < sb.limit:
		// Grown on demand: a terminal that never scrolls costs nothing.
		sb.ring = append(sb.ring, sbLine{})
		sb.n++
		slot = sb.at(sb.n - 1)
	default:
		slot = sb.at(0)
		sb.start++
		if sb.start == len(sb.ring) {
			sb.start = 0
		}
	}
	sb.compact(slot, l)
	if pullable {
		sb.pullable++
	} else {
		sb.pullable = 0
	}
	if sb.pullable > sb.n {
		sb.pullable = sb.n
	}
}

// compact stores l into dst. The text gets one allocation; the style runs a
// second only when some cell is not in the default style.
func (sb *scrollback) compact(dst *sbLine, l *line) {
	cells := l.cells
	end := len(cells)
	for end > 0 && cells[end-1] == (cell{}) {
		end--
	}
	b := sb.buf[:0]
	runs := dst.runs[:0]
	var cur Style
	for x := 0; x < end; x++ {
		c := &cells[x]
		if c.st != cur {
			st := c.st
			st.Attrs &^= attrWide | attrCont
			if st != cur {
				runs = append(runs, styleRun{uint16(x), st})
				cur = st
			}
		}
		switch r := c.r; {
		case r > 0 && r < 0x80:
			b = append(b, byte(r))
		case r == 0:
			if c.st.Attrs&attrCont == 0 { // the second column of a wide character is implied
				b = append(b, ' ')
			}
		case r < 0:
			b = append(b, l.clusters[-r-1]...)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	sb.buf = b
	dst.text = string(b)
	if len(runs) == 0 {
		runs = nil
	}
	dst.runs = runs
	dst.wrapped = l.wrapped
}

// popNewest moves the newest line into dst, cols wide. The caller checks
// that there is one.
func (sb *scrollback) popNewest(dst *line, cols int) {
	src := sb.at(sb.n - 1)
	sb.expand(dst, src, cols)
	sb.n--
	if sb.pullable > 0 {
		sb.pullable--
	}
	*src = sbLine{}
}

// expand decodes src into dst, cols wide.
func (sb *scrollback) expand(dst *line, src *sbLine, cols int) {
	if len(dst.cells) != cols {
		dst.cells = make([]cell, cols)
	}
	dst.reset(0)
	dst.wrapped = src.wrapped
	x := 0
	s := src.text
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		w := runeWidth(r)
		// Combining marks follow their base character: gather them.
		j := size
		for j < len(s) {
			r2, s2 := utf8.DecodeRuneInString(s[j:])
			if runeWidth(r2) != 0 {
				break
			}
			j += s2
		}
		if x+w > cols {
			break
		}
		switch {
		case j > size:
			dst.setCluster(x, s[:j])
		case r == ' ':
			dst.cells[x].r = 0
		default:
			dst.cells[x].r = r
		}
		if w == 2 {
			dst.cells[x].st.Attrs |= attrWide
			dst.cells[x+1].st.Attrs |= attrCont
		}
		x += w
		s = s[j:]
	}
	for i, run := range src.runs {
		end := x
		if i+1 < len(src.runs) {
			end = min(int(src.runs[i+1].start), x)
		}
		for c := int(run.start); c < end; c++ {
			dst.cells[c].st.Fg = run.st.Fg
			dst.cells[c].st.Bg = run.st.Bg
			dst.cells[c].st.Attrs = dst.cells[c].st.Attrs&(attrWide|attrCont) | run.st.Attrs
		}
	}
}

// clear drops every line.
func (sb *scrollback) clear() {
	clear(sb.ring)
	sb.ring = sb.ring[:0]
	sb.start, sb.n, sb.pullable = 0, 0, 0
}
