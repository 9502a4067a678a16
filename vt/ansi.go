package vt

// ANSI returns the screen as exactly rows lines with SGR sequences, for
// showing on another terminal: each line starts from the default style
// and returns to it at its end, so lines can be printed on their own.
// Trailing blank cells in the default style are dropped; blank cells with
// a background colour are kept, since they show.
func (t *Terminal) ANSI() []string {
	out := make([]string, t.rows)
	var buf []byte
	for i := range out {
		buf = ansiLine(buf[:0], t.scr.row(i))
		out[i] = string(buf)
	}
	return out
}

// ScrollbackANSI returns the scrollback's lines, oldest first, rendered
// as ANSI does.
func (t *Terminal) ScrollbackANSI() []string {
	out := make([]string, t.sb.n)
	var buf []byte
	for i := range out {
		l := t.scrollbackLine(i)
		buf = ansiLine(buf[:0], &l)
		out[i] = string(buf)
	}
	return out
}

// ScrollbackRange returns scrollback lines start to end-1 (0 is the
// oldest), as Scrollback renders them or, with ansi, as ScrollbackANSI
// does; the bounds are clamped to the lines there are. It renders only
// those lines: a client asking for the last few of a full scrollback pays
// for those.
func (t *Terminal) ScrollbackRange(start, end int, ansi bool) []string {
	start, end = max(start, 0), min(end, t.sb.n)
	if start >= end {
		return nil
	}
	out := make([]string, end-start)
	var buf []byte
	for i := range out {
		if !ansi {
			out[i] = trimSpaces(t.sb.at(start + i).text)
			continue
		}
		l := t.scrollbackLine(start + i)
		buf = ansiLine(buf[:0], &l)
		out[i] = string(buf)
	}
	return out
}

func ansiLine(b []byte, l *line) []byte {
	end := len(l.cells)
	for end > 0 && l.cells[end-1] == (cell{}) {
		end--
	}
	var cur Style
	for _, c := range l.cells[:end] {
		if c.st.Attrs&attrCont != 0 {
			continue
		}
		st := c.st
		st.Attrs &= publicAttrs
		if st != cur {
			b = appendSGR(b, st)
			cur = st
		}
		b = l.appendText(b, c)
	}
	if cur != (Style{}) {
		b = append(b, "\x1b[0m"...)
	}
	return b
}
