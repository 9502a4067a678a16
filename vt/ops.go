package vt

// index moves the cursor down a line, scrolling the region up when it is
// on the bottom margin (IND, LF, and autowrap). Lines scrolled in get
// background bg. The column is kept, even a pending wrap, as in tmux.
func (t *Terminal) index(bg Color) {
	switch {
	case t.y == t.bot:
		t.scrollUp(t.top, t.bot, 1, bg)
	case t.y < t.rows-1:
		t.y++
	}
}

// reverseIndex moves the cursor up a line, scrolling the region down when
// it is on the top margin (RI).
func (t *Terminal) reverseIndex() {
	switch {
	case t.y == t.top:
		t.scrollDown(t.top, t.bot, 1, t.pen.Bg)
	case t.y > 0:
		t.y--
	}
}

// scrollUp scrolls lines top..bot up by n, blanking n lines at the bottom.
// Only a scroll of the whole main screen feeds the scrollback: a region
// with a top margin below the first line, or a bottom margin above the
// last, keeps its lines to itself, as in tmux.
func (t *Terminal) scrollUp(top, bot, n int, bg Color) {
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	s := t.scr
	if top == 0 && bot == t.rows-1 {
		if s == t.main {
			for i := 0; i < n; i++ {
				t.sb.push(s.row(i), true)
			}
		}
		// The ring turns: the lines that left the top are the new bottom.
		s.base = (s.base + n) % len(s.lines)
		for i := bot - n + 1; i <= bot; i++ {
			s.row(i).reset(bg)
		}
		return
	}
	lines := s.linear()
	rotate(lines[top:bot+1], n)
	for i := bot - n + 1; i <= bot; i++ {
		lines[i].reset(bg)
	}
}

// scrollDown scrolls lines top..bot down by n, blanking n lines at the top.
func (t *Terminal) scrollDown(top, bot, n int, bg Color) {
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	lines := t.scr.linear()
	rotate(lines[top:bot+1], bot-top+1-n)
	for i := top; i < top+n; i++ {
		lines[i].reset(bg)
	}
}

// rotate rotates ls left by k.
func rotate(ls []line, k int) {
	reverse(ls[:k])
	reverse(ls[k:])
	reverse(ls)
}

func reverse(ls []line) {
	for i, j := 0, len(ls)-1; i < j; i, j = i+1, j-1 {
		ls[i], ls[j] = ls[j], ls[i]
	}
}

// eraseDisplay is ED: 0 from the cursor to the end, 1 from the start to
// the cursor inclusive, 2 all, 3 the scrollback.
func (t *Terminal) eraseDisplay(mode int) {
	bg := t.pen.Bg
	lines := t.scr.linear()
	x := min(t.x, t.cols) // pending wrap: nothing right of the cursor
	switch mode {
	case 0:
		if t.x == 0 && t.y == 0 {
			t.clearScreen(bg)
			return
		}
		lines[t.y].erase(x, t.cols, bg)
		for i := t.y + 1; i < t.rows; i++ {
			lines[i].reset(bg)
		}
	case 1:
		for i := 0; i < t.y; i++ {
			lines[i].reset(bg)
		}
		lines[t.y].erase(0, x+1, bg)
	case 2:
		t.clearScreen(bg)
	case 3:
		t.sb.clear()
	}
}

// clearScreen blanks the screen. On the main screen tmux first pushes the
// lines up to the last one in use into the scrollback ("scroll-on-clear"),
// so a cleared screen can still be read back; we do the same, so that our
// scrollback holds what tmux's holds.
func (t *Terminal) clearScreen(bg Color) {
	lines := t.scr.linear()
	if t.scr == t.main && t.sb.limit > 0 {
		last := -1
		for i := range lines {
			if lines[i].used() {
				last = i
			}
		}
		for i := 0; i <= last; i++ {
			t.sb.push(&lines[i], false)
		}
	}
	for i := range lines {
		lines[i].reset(bg)
	}
}

// eraseLine is EL: 0 from the cursor to the end, 1 from the start to the
// cursor inclusive, 2 the whole line.
func (t *Terminal) eraseLine(mode int) {
	l := t.scr.row(t.y)
	bg := t.pen.Bg
	switch mode {
	case 0:
		l.erase(t.x, t.cols, bg)
	case 1:
		l.erase(0, t.x+1, bg)
	case 2:
		l.erase(0, t.cols, bg)
	}
}

// insertLines is IL: n blank lines at the cursor, pushing the lines below
// down to the bottom margin, past which they are lost. Outside the scroll
// region the bottom of the screen stands for the margin, as in tmux (xterm
// ignores IL there). The cursor does not move.
func (t *Terminal) insertLines(n int) {
	bot := t.bot
	if t.y < t.top || t.y > t.bot {
		bot = t.rows - 1
	}
	t.scrollDown(t.y, bot, n, t.pen.Bg)
}

// deleteLines is DL: n lines at the cursor removed, the lines below up to
// the bottom margin moving up and blank lines entering there. Deleted
// lines are gone, never in the scrollback.
func (t *Terminal) deleteLines(n int) {
	bot := t.bot
	if t.y < t.top || t.y > t.bot {
		bot = t.rows - 1
	}
	lines := t.scr.linear()
	n = min(n, bot-t.y+1)
	rotate(lines[t.y:bot+1], n)
	for i := bot - n + 1; i <= bot; i++ {
		lines[i].reset(t.pen.Bg)
	}
}

// moveTo puts the cursor at x, y (absolute, zero-based), clamped to the
// screen; a pending wrap ends.
func (t *Terminal) moveTo(x, y int) {
	t.x = min(max(x, 0), t.cols-1)
	t.y = min(max(y, 0), t.rows-1)
}

// moveToOrigin is CUP: in origin mode the row counts from the top margin
// and stays inside the region.
func (t *Terminal) moveToOrigin(x, y int) {
	if t.modes.Origin {
		y = min(y+t.top, t.bot)
	}
	t.moveTo(x, y)
}

// cursorUp is CUU: stops at the top margin when the cursor is inside the
// region, else at the top of the screen.
func (t *Terminal) cursorUp(n int) {
	limit := 0
	if t.y >= t.top {
		limit = t.top
	}
	t.y = max(t.y-n, limit)
	t.x = min(t.x, t.cols-1)
}

// cursorDown is CUD: stops at the bottom margin when the cursor is inside
// the region, else at the bottom of the screen.
func (t *Terminal) cursorDown(n int) {
	limit := t.rows - 1
	if t.y <= t.bot {
		limit = t.bot
	}
	t.y = min(t.y+n, limit)
	t.x = min(t.x, t.cols-1)
}

// tab moves to the next tab stop, or the last column. In the last column
// (or past it, pending a wrap) it does nothing, as in tmux.
func (t *Terminal) tab(n int) {
	for ; n > 0 && t.x < t.cols-1; n-- {
		x := t.x + 1
		for x < t.cols-1 && !t.tabs[x] {
			x++
		}
		t.x = x
	}
}

// backTab is CBT: back to the previous tab stop, or the first column.
func (t *Terminal) backTab(n int) {
	t.x = min(t.x, t.cols-1)
	for ; n > 0 && t.x > 0; n-- {
		x := t.x - 1
		for x > 0 && !t.tabs[x] {
			x--
		}
		t.x = x
	}
}

// backspace moves left one column. At the left margin of a line that
// autowrap continued from the line above, it goes back to that line's
// last column, as in tmux.
func (t *Terminal) backspace() {
	switch {
	case t.x > 0:
		t.x = min(t.x, t.cols) - 1
	case t.y > 0 && t.scr.row(t.y-1).wrapped:
		t.y--
		t.x = t.cols - 1
	}
}

// saveCursor is DECSC.
func (t *Terminal) saveCursor() cursorState {
	return cursorState{x: t.x, y: t.y, pen: t.pen, g: t.g, gl: t.gl, origin: t.modes.Origin, autowrap: t.modes.Autowrap, valid: true}
}

// restoreCursor is DECRC. With nothing saved the cursor goes home and
// the pen and character sets reset, as in xterm. A saved pending wrap
// comes back as the last column, as in tmux.
func (t *Terminal) restoreCursor(s cursorState) {
	if !s.valid {
		s = cursorState{autowrap: t.modes.Autowrap}
	}
	t.pen = s.pen
	t.g = s.g
	t.gl = s.gl
	t.modes.Origin = s.origin
	t.moveTo(s.x, s.y)
}

// setAltScreen switches to (on) or from the alternate screen. The
// alternate screen starts blank each time, as in tmux, whichever of
// 47, 1047 and 1049 asked; only 1049 saves and restores the cursor.
func (t *Terminal) setAltScreen(on, cursor bool) {
	if on == t.modes.AltScreen {
		return
	}
	if on {
		if cursor {
			t.altSaved = t.saveCursor()
		}
		if t.alt == nil || t.alt.cols != t.cols || t.alt.rows() != t.rows {
			t.alt = newScreen(t.cols, t.rows)
		} else {
			for i := range t.alt.lines {
				t.alt.lines[i].reset(0)
			}
		}
		t.scr = t.alt
		t.modes.AltScreen = true
		return
	}
	t.scr = t.main
	t.modes.AltScreen = false
	if cursor {
		t.restoreCursor(t.altSaved)
		// Where the cursor was on the main screen, before the clamp to a
		// size the main screen does not have yet.
		if t.altSaved.valid {
			t.y = min(t.altSaved.y, t.main.rows()-1)
		}
	}
	// The main screen was not resized while hidden: do it now, as tmux
	// does, with the cursor just restored deciding which lines stay.
	if t.main.cols != t.cols || t.main.rows() != t.rows {
		t.y = min(t.y, t.main.rows()-1)
		t.resizeScreen(t.main, t.cols, t.rows)
	}
	t.x = min(t.x, t.cols-1)
	t.y = min(t.y, t.rows-1)
}

// fullReset is RIS.
func (t *Terminal) fullReset() {
	if t.modes.AltScreen {
		t.setAltScreen(false, false)
	}
	t.resetState()
	t.title = ""
	t.titleStack = nil
	t.clearScreen(0)
}

// softReset is DECSTR: modes and pen back to their defaults, the screen
// kept.
func (t *Terminal) softReset() {
	t.modes.Insert = false
	t.modes.Origin = false
	t.modes.Autowrap = true
	t.modes.CursorVisible = true
	t.modes.AppCursor = false
	t.modes.AppKeypad = false
	t.pen = Style{}
	t.g = [2]charset{}
	t.gl = 0
	t.top, t.bot = 0, t.rows-1
	t.saved = cursorState{}
}

// Resize changes the screen size. Lines are not rewrapped: a narrower
// screen cuts them, a wider one pads them. A shorter screen first drops
// lines below the cursor, then pushes lines from the top into the
// scrollback, so the cursor's line stays on screen; a taller one first
// brings back lines that scrolled into the scrollback, then adds blank
// lines at the bottom. This is what tmux does for the height; see
// docs/VT.md. The scroll region is reset to the whole screen.
func (t *Terminal) Resize(cols, rows int) {
	cols, rows = clampSize(cols, rows)
	if cols == t.cols && rows == t.rows {
		return
	}
	widthChanged := cols != t.cols
	t.cols, t.rows = cols, rows
	if t.modes.AltScreen {
		// The alternate screen has no scrollback: it loses lines from
		// the top instead. The main screen is resized when it is shown
		// again.
		t.resizeScreen(t.alt, cols, rows)
	} else {
		t.resizeScreen(t.main, cols, rows)
	}
	if widthChanged {
		t.resetTabs()
	}
	t.top, t.bot = 0, rows-1
	t.x = min(t.x, cols-1)
}

// resizeScreen resizes s to cols × rows, moving the cursor with its line.
func (t *Terminal) resizeScreen(s *screen, cols, rows int) {
	s.linear()
	if cols != s.cols {
		for i := range s.lines {
			s.lines[i].resize(cols)
		}
		s.cols = cols
	}
	old := s.rows()
	switch {
	case rows < old:
		need := old - rows
		// Lines below the cursor go first, and are lost.
		below := min(old-1-t.y, need)
		s.lines = s.lines[:old-below]
		need -= below
		if need > 0 {
			if s == t.main {
				for i := 0; i < need; i++ {
					t.sb.push(&s.lines[i], true)
				}
			}
			s.lines = append(s.lines[:0], s.lines[need:]...)
			t.y -= need
		}
		s.lines = s.lines[:rows:rows]
	case rows > old:
		need := rows - old
		var pulled []line
		if s == t.main {
			k := min(need, t.sb.pullable, t.sb.n)
			pulled = make([]line, k)
			for i := k - 1; i >= 0; i-- {
				t.sb.popNewest(&pulled[i], cols)
			}
			t.y += k
			need -= k
		}
		grown := make([]line, 0, rows)
		grown = append(grown, pulled...)
		grown = append(grown, s.lines...)
		for ; need > 0; need-- {
			grown = append(grown, newLine(cols))
		}
		s.lines = grown
	}
	t.y = min(max(t.y, 0), rows-1)
}
