package term

import "strings"

// Range is OUTPUT's line range in the seed's numbering: negative lines are
// the scrollback (-1 the line closest to the screen), positive lines the
// screen (1 the top), and 0 the boundary between them, which is no line.
type Range struct {
	// From is the first line; 0 (the default) means screen line 1.
	From int
	// Oldest ("from": "-") starts at the oldest scrollback line instead.
	Oldest bool
	// To is the last line; nil means the last screen line, and 0 the
	// boundary: the last scrollback line.
	To *int
}

// Screen is what OUTPUT returns.
type Screen struct {
	// Text is the lines of the range, each ending in a newline; with ANSI
	// each line carries its own SGR sequences and ends in the default
	// style.
	Text        string
	Row, Col    int // the cursor, 0-based, on the visible screen
	Rows, Cols  int
	From, To    int // the range returned, clamped to the lines that exist
	Scrollback  int // lines in the scrollback now
	ScrollbackN int // the most lines it keeps
}

// Output returns the lines of r, as plain text or with ANSI colours.
func (d *Daemon) Output(r Range, ansi bool) Screen {
	d.mu.Lock()
	defer d.mu.Unlock()
	cols, rows := d.emu.Size()
	cur := d.emu.Cursor()
	s := Screen{
		Row: cur.Row, Col: cur.Col, Rows: rows, Cols: cols,
		Scrollback: d.emu.ScrollbackLen(), ScrollbackN: d.emu.ScrollbackCap(),
	}
	s.From, s.To = clampRange(r, s.Scrollback, rows)
	var back, screen []string
	// Only the scrollback lines asked for are rendered (under the lock the
	// reader needs): back[i] is line first+i.
	first := 0
	if s.From < 0 {
		first = s.Scrollback + s.From
		back = d.emu.ScrollbackRange(first, s.Scrollback+min(s.To, -1)+1, ansi)
	}
	if s.To > 0 {
		if ansi {
			screen = d.emu.ANSI()
		} else {
			screen = d.emu.Lines()
		}
	}
	var b strings.Builder
	for n := s.From; n <= s.To; n++ {
		switch {
		case n < 0:
			b.WriteString(back[s.Scrollback+n-first])
		case n > 0:
			b.WriteString(screen[n-1])
		default:
			continue
		}
		b.WriteByte('\n')
	}
	s.Text = b.String()
	return s
}

// clampRange turns r into the first and last line that exist, with
// scrollback lines of scrollback and rows lines of screen. An empty range
// has from > to.
func clampRange(r Range, scrollback, rows int) (from, to int) {
	from = max(r.From, -scrollback)
	if r.Oldest {
		from = -scrollback
	}
	from = min(from, rows)
	if from == 0 {
		from = 1
	}
	to = rows
	if r.To != nil {
		to = min(max(*r.To, -scrollback), rows)
		if to == 0 {
			to = -1
		}
	}
	return from, to
}
