package report

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// The screen's default colours (a dark terminal) and xterm's first 16.
const (
	defaultFg = 0xd0d0d0
	defaultBg = 0x1c1c1c
)

// basic16 is xterm's palette for indexed colours 0–15.
func basic16(n uint8) uint32 {
	return [16]uint32{
		0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5,
		0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff,
	}[n]
}

// rgbOf is a vt colour as 0xRRGGBB: the 256-colour palette as xterm
// defines it, an RGB colour as given, the default as def.
func rgbOf(c vt.Color, def uint32) uint32 {
	if r, g, b, ok := c.RGB(); ok {
		return uint32(r)<<16 | uint32(g)<<8 | uint32(b)
	}
	n, ok := c.Index()
	switch {
	case !ok:
		return def
	case n < 16:
		return basic16(n)
	case n < 232:
		n -= 16
		level := func(v uint8) uint32 {
			if v == 0 {
				return 0
			}
			return uint32(55 + 40*int(v))
		}
		return level(n/36)<<16 | level(n/6%6)<<8 | level(n%6)
	default:
		g := uint32(8 + 10*int(n-232))
		return g<<16 | g<<8 | g
	}
}

// screenView is one PTY screen: its lines as runs of styled text.
type screenView struct {
	Cols, Rows int
	Lines      []lineView
	// Styled says the screen was rendered from the recorded output and
	// found equal to the recorded frame; otherwise Lines are the frame's
	// text without colours and Note says why.
	Styled bool
	Note   string
	Cursor string // "row R, column C, visible" (1-based)
	Mode   string // normal or alternate
	// Changed counts the lines that differ from the epoch before.
	Changed int
}

// lineView is one screen line.
type lineView struct {
	N       int // 1-based
	Changed bool
	Spans   []spanView
	sig     string // the text and styles, the cursor left out: what "changed" compares
}

// spanView is a run of cells of one style.
type spanView struct {
	Text   string
	Class  string
	Style  template.CSS
	Cursor bool
}

// styleKey is what makes two cells one span.
type styleKey struct {
	fg, bg uint32
	class  string
	cursor bool
}

// cellStyle resolves a cell's style to colours and classes: reverse
// swaps the colours, invisible paints the text in the background's.
func cellStyle(st vt.Style, cursor bool) styleKey {
	fg, bg := rgbOf(st.Fg, defaultFg), rgbOf(st.Bg, defaultBg)
	if st.Attrs&vt.Reverse != 0 {
		fg, bg = bg, fg
	}
	if cursor {
		fg, bg = bg, fg
	}
	if st.Attrs&vt.Invisible != 0 {
		fg = bg
	}
	var cls []string
	for _, a := range []struct {
		a vt.Attr
		c string
	}{{vt.Bold, "b"}, {vt.Dim, "d"}, {vt.Italic, "i"}, {vt.Underline, "u"}, {vt.Blink, "k"}, {vt.Strike, "s"}} {
		if st.Attrs&a.a != 0 {
			cls = append(cls, a.c)
		}
	}
	return styleKey{fg: fg, bg: bg, class: strings.Join(cls, " "), cursor: cursor}
}

func (k styleKey) span(text string) spanView {
	sv := spanView{Text: text, Class: k.class, Cursor: k.cursor}
	if k.fg != defaultFg || k.bg != defaultBg {
		// Built from two numbers only: no text of the subject's is in it.
		sv.Style = template.CSS(fmt.Sprintf("color:#%06x;background-color:#%06x", k.fg, k.bg))
	}
	if k.cursor {
		sv.Class = strings.TrimSpace(sv.Class + " cur")
	}
	return sv
}

// cellText is what a cell shows in the page: its character, with what
// could reorder or break the line made visible (termsafe), as the render
// command prints it.
func cellText(s string) string {
	if s == "" {
		return " "
	}
	return termsafe.String(s)
}

// styledScreen renders emu's screen, the cursor cell marked when the
// recorded cursor is visible.
func styledScreen(emu *vt.Terminal, cur transcript.Cursor) []lineView {
	cols, rows := emu.Size()
	lines := make([]lineView, rows)
	for r := 0; r < rows; r++ {
		lv := lineView{N: r + 1}
		var text, sig strings.Builder
		var key styleKey
		open := false
		flush := func() {
			if open {
				lv.Spans = append(lv.Spans, key.span(text.String()))
				text.Reset()
				open = false
			}
		}
		// The last column that is not a default blank: the rest of the
		// line is left out (the screen's width is the block's).
		// lastText is the same without the cursor: what a change is.
		last, lastText := -1, -1
		for c := 0; c < cols; c++ {
			cell := emu.Cell(r, c)
			if (cell.Content != " " && cell.Content != "" && cell.Width != 0) || cell.Style != (vt.Style{}) {
				lastText = c
			}
		}
		last = lastText
		if cur.Visible && int64(r) == cur.Row {
			last = max(last, int(cur.Column))
		}
		for c := 0; c <= last; c++ {
			cell := emu.Cell(r, c)
			if cell.Width == 0 {
				continue // the second column of a wide character
			}
			k := cellStyle(cell.Style, cur.Visible && int64(r) == cur.Row && int64(c) == cur.Column)
			if c <= lastText {
				// The cell's content and its style as vt holds it: two
				// cells look the same exactly when these are equal.
				sig.WriteString(cell.Content)
				sig.WriteByte(0)
				sig.Write(strconv.AppendUint(nil, uint64(cell.Style.Fg)<<32|uint64(cell.Style.Bg), 16))
				sig.WriteByte(':')
				sig.Write(strconv.AppendUint(nil, uint64(cell.Style.Attrs), 16))
				sig.WriteByte(1)
			}
			if open && k != key {
				flush()
			}
			key, open = k, true
			text.WriteString(cellText(cell.Content))
		}
		flush()
		lv.sig = sig.String()
		lines[r] = lv
	}
	return lines
}

// plainScreen is a frame's text as lines of one default span.
func plainScreen(f *transcript.Frame) []lineView {
	lines := make([]lineView, len(f.Lines))
	for i, l := range f.Lines {
		lines[i] = lineView{N: i + 1, sig: l}
		if l != "" {
			lines[i].Spans = []spanView{{Text: termsafe.String(l)}}
		}
	}
	return lines
}

// markChanged marks the lines whose text or style differ from prev's;
// the first screen is compared with a blank one.
func markChanged(cur, prev []lineView) int {
	n := 0
	for i := range cur {
		before := ""
		if i < len(prev) {
			before = prev[i].sig
		}
		if cur[i].sig != before {
			cur[i].Changed = true
			n++
		}
	}
	return n
}
