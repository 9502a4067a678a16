package vt

import (
	"strings"
	"unicode/utf8"
)

// Limits on what a Terminal holds, whatever the bytes fed to it say.
const (
	// MaxCols and MaxRows bound the screen size; New and Resize clamp to
	// them (and to at least 1), so that a screen never exceeds 16 MiB.
	MaxCols = 1024
	MaxRows = 1024
	// MaxScrollback bounds Config.Scrollback.
	MaxScrollback = 1 << 20
	// maxString bounds an OSC string (titles, OSC 52 clipboard data);
	// longer ones are cut there and diagnosed.
	maxString = 1 << 20
	// maxReplies bounds the replies waiting for Replies; a program that
	// floods queries while nobody collects the answers loses the excess,
	// with a diagnostic, instead of growing memory.
	maxReplies = 64 << 10
	// maxTitle bounds the title, and maxTitleStack the titles saved by
	// CSI 22 t.
	maxTitle      = 4096
	maxTitleStack = 16
)

// Config is what New needs.
type Config struct {
	Cols, Rows int // screen size, clamped to 1..MaxCols and 1..MaxRows
	// Scrollback is how many lines scrolled off the top of the main
	// screen are kept (0: none), clamped to MaxScrollback.
	Scrollback int
}

// charset is a character set designated into G0 or G1.
type charset uint8

const (
	charsetASCII charset = iota
	charsetDECGraphics
)

// cursorState is what DECSC saves and DECRC restores.
type cursorState struct {
	x, y     int
	pen      Style
	g        [2]charset
	gl       int // 0: G0 is in GL, 1: G1 (SO)
	origin   bool
	valid    bool
	autowrap bool
}

// Terminal is an in-memory VT terminal: bytes written to it change its
// screen the way xterm and tmux change theirs. The zero Terminal is not
// usable; call New. A Terminal is not safe for concurrent use.
type Terminal struct {
	cols, rows int

	main, alt *screen
	scr       *screen // main or alt
	sb        scrollback

	// The cursor. x runs from 0 to cols: x == cols is tmux's pending wrap
	// state after a character was written in the last column with
	// autowrap on; the next character goes to the start of the next line.
	x, y     int
	pen      Style
	g        [2]charset
	gl       int
	top, bot int // scroll region, inclusive

	saved    cursorState // DECSC / CSI s
	altSaved cursorState // ?1049h

	modes      Modes
	sync       bool // ?2026, tracked only to answer DECRQM
	tabs       []bool
	lastPrint  rune // for REP
	title      string
	titleStack []string
	clipboard  []byte

	replies []byte
	diag    diagnostics

	parser
}

// New returns a terminal of the configured size with a blank screen, the
// cursor at the top left, and xterm's power-on modes (autowrap on, cursor
// visible).
func New(c Config) *Terminal {
	cols, rows := clampSize(c.Cols, c.Rows)
	t := &Terminal{cols: cols, rows: rows}
	t.sb.limit = min(max(c.Scrollback, 0), MaxScrollback)
	t.main = newScreen(cols, rows)
	t.scr = t.main
	t.resetState()
	return t
}

func clampSize(cols, rows int) (int, int) {
	return min(max(cols, 1), MaxCols), min(max(rows, 1), MaxRows)
}

// resetState sets the modes, pen, margins and tabs to their power-on
// values; the screens are left to the caller.
func (t *Terminal) resetState() {
	t.x, t.y = 0, 0
	t.pen = Style{}
	t.g = [2]charset{}
	t.gl = 0
	t.top, t.bot = 0, t.rows-1
	t.saved = cursorState{}
	t.altSaved = cursorState{}
	t.modes = Modes{Autowrap: true, CursorVisible: true}
	t.sync = false
	t.resetTabs()
	t.lastPrint = 0
}

func (t *Terminal) resetTabs() {
	if cap(t.tabs) >= t.cols {
		t.tabs = t.tabs[:t.cols]
	} else {
		t.tabs = make([]bool, t.cols)
	}
	for i := range t.tabs {
		t.tabs[i] = i > 0 && i%8 == 0
	}
}

// Write feeds bytes from the program to the terminal. It always consumes
// all of p and returns len(p), nil: bytes it does not understand are
// counted in Diagnostics, never an error. Sequences may be split across
// calls at any byte. Answers to the program's queries collect in Replies;
// Write itself never blocks.
func (t *Terminal) Write(p []byte) (int, error) {
	t.feed(p)
	return len(p), nil
}

// WriteString is Write for a string.
func (t *Terminal) WriteString(s string) (int, error) {
	return t.Write([]byte(s))
}

// Size returns the screen size.
func (t *Terminal) Size() (cols, rows int) { return t.cols, t.rows }

// Cursor is where the next character will be drawn.
type Cursor struct {
	Row, Col int // zero-based, always on the screen
	Visible  bool
	// PendingWrap says a character was just written in the last column
	// with autowrap on: the next one goes to the start of the next line.
	PendingWrap bool
}

// Cursor returns the cursor.
func (t *Terminal) Cursor() Cursor {
	return Cursor{Row: t.y, Col: min(t.x, t.cols-1), Visible: t.modes.CursorVisible, PendingWrap: t.x >= t.cols}
}

// MouseMode is which mouse events the program asked to be reported.
type MouseMode uint8

// The mouse reporting modes, by the DECSET that enables them.
const (
	MouseOff    MouseMode = iota
	MouseX10              // ?9: button presses
	MouseNormal           // ?1000: presses and releases
	MouseButton           // ?1002: also motion with a button held
	MouseAny              // ?1003: all motion
)

// Modes are the modes a program set that change what the terminal sends
// for keys, paste and mouse, and how it draws.
type Modes struct {
	AppCursor      bool // DECCKM (?1): cursor keys send ESC O A, not ESC [ A
	AppKeypad      bool // DECKPAM (ESC =) or DECNKM (?66)
	BracketedPaste bool // ?2004
	Mouse          MouseMode
	MouseSGR       bool // ?1006: mouse reports as CSI < … M/m
	FocusEvents    bool // ?1004
	Insert         bool // IRM (CSI 4 h)
	NewLine        bool // LNM (CSI 20 h): LF also returns the carriage
	Origin         bool // DECOM (?6)
	Autowrap       bool // DECAWM (?7)
	CursorVisible  bool // DECTCEM (?25)
	AltScreen      bool // ?47, ?1047 or ?1049
}

// Modes returns the current modes.
func (t *Terminal) Modes() Modes { return t.modes }

// AltScreen reports whether the alternate screen is shown.
func (t *Terminal) AltScreen() bool { return t.modes.AltScreen }

// Title returns the title set by OSC 0 or OSC 2 ("" until one is).
func (t *Terminal) Title() string { return t.title }

// Clipboard returns the clipboard: what the program last stored with OSC
// 52, or what SetClipboard set, whichever came last.
func (t *Terminal) Clipboard() []byte { return t.clipboard }

// SetClipboard sets what an OSC 52 query from the program is answered
// with.
func (t *Terminal) SetClipboard(data []byte) {
	t.clipboard = append([]byte(nil), data...)
}

// Replies returns the bytes the terminal owes the program in answer to
// its queries (cursor position, device attributes, status, modes), in
// order, and forgets them. The caller writes them to the program's input.
// At most 64 KiB wait; the excess is dropped and diagnosed.
func (t *Terminal) Replies() []byte {
	r := t.replies
	t.replies = nil
	return r
}

func (t *Terminal) reply(s string) {
	if len(t.replies)+len(s) > maxReplies {
		t.diagnose(DiagReplyOverflow, []byte(s))
		return
	}
	t.replies = append(t.replies, s...)
}

// Cell is one column of the screen.
type Cell struct {
	// Content is what the cell draws: a character with any combining
	// marks, " " for a blank cell, and "" for the second column of a wide
	// character (the first column holds it).
	Content string
	Width   int // 1, 2 for a wide character, 0 for its second column
	Style   Style
}

// Cell returns the cell at row, col (zero-based); the zero Cell when that
// is off the screen.
func (t *Terminal) Cell(row, col int) Cell {
	if row < 0 || row >= t.rows || col < 0 || col >= t.cols {
		return Cell{}
	}
	l := t.scr.row(row)
	c := l.cells[col]
	st := c.st
	st.Attrs &= publicAttrs
	switch {
	case c.st.Attrs&attrCont != 0:
		return Cell{Style: st}
	case c.st.Attrs&attrWide != 0:
		return Cell{Content: l.text(col), Width: 2, Style: st}
	}
	return Cell{Content: l.text(col), Width: 1, Style: st}
}

// Line returns screen row row as text, trailing spaces dropped; "" when
// row is off the screen. A wide character appears once.
func (t *Terminal) Line(row int) string {
	if row < 0 || row >= t.rows {
		return ""
	}
	return string(plainLine(nil, t.scr.row(row)))
}

// Lines returns the screen as exactly rows lines of text, trailing spaces
// dropped (as tmux's capture-pane prints them); the Cell API keeps them.
// A wide character appears once, as drawn; DEC line-drawing characters
// appear as the Unicode box-drawing characters they draw.
func (t *Terminal) Lines() []string {
	out := make([]string, t.rows)
	var buf []byte
	for i := range out {
		buf = plainLine(buf[:0], t.scr.row(i))
		out[i] = string(buf)
	}
	return out
}

// String returns Lines joined with newlines.
func (t *Terminal) String() string { return strings.Join(t.Lines(), "\n") }

func plainLine(b []byte, l *line) []byte {
	for _, c := range l.cells {
		if c.st.Attrs&attrCont != 0 {
			continue
		}
		b = l.appendText(b, c)
	}
	end := len(b)
	for end > 0 && b[end-1] == ' ' {
		end--
	}
	return b[:end]
}

// ScrollbackCap returns how many lines the scrollback keeps at most.
func (t *Terminal) ScrollbackCap() int { return t.sb.limit }

// ScrollbackLen returns how many lines the scrollback holds.
func (t *Terminal) ScrollbackLen() int { return t.sb.n }

// Scrollback returns the scrollback's lines, oldest first, as text with
// trailing spaces dropped. Only lines scrolled off the top of the whole
// main screen (a scroll region with margins never feeds it), lines a
// clear of the whole screen pushed (as tmux does), and lines pushed out by
// a resize are kept.
func (t *Terminal) Scrollback() []string {
	out := make([]string, t.sb.n)
	for i := range out {
		out[i] = trimSpaces(t.sb.at(i).text)
	}
	return out
}

func trimSpaces(s string) string { return strings.TrimRight(s, " ") }

// scrollbackLine decodes scrollback line i, cols wide, into a fresh line.
func (t *Terminal) scrollbackLine(i int) line {
	src := t.sb.at(i)
	cols := max(t.cols, utf8.RuneCountInString(src.text)*2)
	var l line
	t.sb.expand(&l, src, cols)
	return l
}
