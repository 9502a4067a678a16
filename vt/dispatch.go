package vt

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// execute performs a C0 control.
func (t *Terminal) execute(b byte) {
	switch b {
	case 0x08: // BS
		t.backspace()
	case 0x09: // HT
		t.tab(1)
	case 0x0a, 0x0b, 0x0c: // LF, VT, FF
		t.index(t.pen.Bg)
		if t.modes.NewLine {
			t.x = 0
		}
	case 0x0d: // CR
		t.x = 0
	case 0x0e: // SO: G1 into GL
		t.gl = 1
	case 0x0f: // SI: G0 into GL
		t.gl = 0
	}
	// BEL, NUL, ENQ and the other C0 controls do nothing on the screen.
}

// escDispatch performs ESC [intermediate] final.
func (t *Terminal) escDispatch(final byte) {
	if t.ninter > 1 {
		t.diagnose(DiagUnknownEscape, t.seq[:t.nseq])
		return
	}
	if t.ninter == 1 {
		switch t.inter {
		case '(', ')':
			cs := charsetASCII
			switch final {
			case '0':
				cs = charsetDECGraphics
			case 'B':
			default:
				// National sets (UK's A among them) are not drawn by
				// tmux either: ASCII, diagnosed.
				t.diagnose(DiagCharset, t.seq[:t.nseq])
			}
			t.g[t.inter-'('] = cs
		case '*', '+', '-', '.', '/':
			// G2 and G3 are reached only by SS2/SS3 and locking shifts,
			// which are not implemented: nothing drawn changes.
			t.diagnose(DiagCharset, t.seq[:t.nseq])
		case '#':
			switch final {
			case '8': // DECALN: fill the screen with E
				t.top, t.bot = 0, t.rows-1
				t.modes.Origin = false
				for i := range t.scr.lines {
					l := &t.scr.lines[i] // every line: the order does not matter
					l.reset(0)
					for x := range l.cells {
						l.cells[x].r = 'E'
					}
				}
				t.moveTo(0, 0)
			case '5': // DECSWL: single width, which every line is
			default: // double width and height lines are not implemented
				t.diagnose(DiagUnknownEscape, t.seq[:t.nseq])
			}
		case '%', ' ':
			// Select UTF-8 (% G, % @) and 7/8-bit controls (SP F, SP G):
			// the terminal is always UTF-8 with 7-bit controls.
		default:
			t.diagnose(DiagUnknownEscape, t.seq[:t.nseq])
		}
		return
	}
	switch final {
	case '7':
		t.saved = t.saveCursor()
	case '8':
		t.restoreCursor(t.saved)
	case 'D': // IND
		t.index(t.pen.Bg)
	case 'E': // NEL
		t.index(t.pen.Bg)
		t.x = 0
	case 'M': // RI
		t.reverseIndex()
	case 'H': // HTS
		if t.x < t.cols {
			t.tabs[t.x] = true
		}
	case 'c': // RIS
		t.fullReset()
	case '=': // DECKPAM
		t.modes.AppKeypad = true
	case '>': // DECKPNM
		t.modes.AppKeypad = false
	case 'Z': // DECID: the same answer as DA1
		t.reply(da1)
	case '\\': // ST ending a string already ended
	default:
		t.diagnose(DiagUnknownEscape, t.seq[:t.nseq])
	}
}

// The identities the terminal answers with. DA1: a VT100 with advanced
// video (the answer tmux gives). DA2: terminal type 0 (VT100), version 0,
// so that programs do not take it for a particular xterm release and
// expect that release's extensions.
const (
	da1 = "\x1b[?1;2c"
	da2 = "\x1b[>0;0;0c"
)

// csiDispatch performs a CSI sequence.
func (t *Terminal) csiDispatch(final byte) {
	if t.ninter > 1 {
		t.diagnose(DiagUnknownCSI, t.seq[:t.nseq])
		return
	}
	var inter byte
	if t.ninter == 1 {
		inter = t.inter
	}
	key := uint32(t.prefix)<<16 | uint32(inter)<<8 | uint32(final)
	const q, gt = uint32('?') << 16, uint32('>') << 16
	switch key {
	case '@': // ICH
		if t.x < t.cols {
			t.scr.row(t.y).insert(t.x, t.arg(0, 1), t.pen.Bg)
		}
	case 'A': // CUU
		t.cursorUp(t.arg(0, 1))
	case 'B', 'e': // CUD, VPR
		t.cursorDown(t.arg(0, 1))
	case 'C', 'a': // CUF, HPR
		t.x = min(t.x+t.arg(0, 1), t.cols-1)
	case 'D': // CUB
		t.x = max(min(t.x, t.cols)-t.arg(0, 1), 0)
	case 'E': // CNL
		t.cursorDown(t.arg(0, 1))
		t.x = 0
	case 'F': // CPL
		t.cursorUp(t.arg(0, 1))
		t.x = 0
	case 'G', '`': // CHA, HPA
		t.x = min(t.arg(0, 1)-1, t.cols-1)
	case 'H', 'f': // CUP, HVP
		t.moveToOrigin(t.arg(1, 1)-1, t.arg(0, 1)-1)
	case 'I': // CHT
		t.tab(t.arg(0, 1))
	case 'J', q | 'J': // ED, DECSED (no protected cells: the same)
		t.eraseDisplay(t.arg(0, 0))
	case 'K', q | 'K': // EL, DECSEL
		t.eraseLine(t.arg(0, 0))
	case 'L': // IL
		t.insertLines(t.arg(0, 1))
	case 'M': // DL
		t.deleteLines(t.arg(0, 1))
	case 'P': // DCH
		if t.x < t.cols {
			t.scr.row(t.y).delete(t.x, t.arg(0, 1), t.pen.Bg)
		}
	case 'S': // SU
		t.scrollUp(t.top, t.bot, t.arg(0, 1), t.pen.Bg)
	case 'T': // SD; with 5 parameters it is xterm's mouse highlight
		if t.numParams() > 1 {
			t.diagnose(DiagUnknownCSI, t.seq[:t.nseq])
			return
		}
		t.scrollDown(t.top, t.bot, t.arg(0, 1), t.pen.Bg)
	case 'X': // ECH
		if t.x < t.cols {
			t.scr.row(t.y).erase(t.x, t.x+t.arg(0, 1), t.pen.Bg)
		}
	case 'Z': // CBT
		t.backTab(t.arg(0, 1))
	case 'b': // REP
		if t.lastPrint != 0 {
			for n := min(t.arg(0, 1), t.cols*t.rows); n > 0; n-- {
				t.printRune(t.lastPrint)
			}
		}
	case 'c': // DA1
		if t.arg(0, 0) == 0 {
			t.reply(da1)
		}
	case gt | 'c': // DA2
		if t.arg(0, 0) == 0 {
			t.reply(da2)
		}
	case 'd': // VPA
		t.moveToOrigin(min(t.x, t.cols-1), t.arg(0, 1)-1)
	case 'g': // TBC
		switch t.arg(0, 0) {
		case 0:
			if t.x < t.cols {
				t.tabs[t.x] = false
			}
		case 3:
			clear(t.tabs)
		}
	case 'h', 'l', q | 'h', q | 'l':
		t.setModes(t.prefix == '?', final == 'h')
	case 'm': // SGR
		t.sgr()
	case 'n': // DSR
		switch t.arg(0, 0) {
		case 5:
			t.reply("\x1b[0n")
		case 6:
			t.reply(t.cursorReport("\x1b[", "R"))
		default:
			t.diagnose(DiagUnknownCSI, t.seq[:t.nseq])
		}
	case q | 'n': // DECDSR
		if t.arg(0, 0) == 6 {
			t.reply(t.cursorReport("\x1b[?", ";1R"))
		} else {
			t.diagnose(DiagUnknownCSI, t.seq[:t.nseq])
		}
	case '!'<<8 | 'p': // DECSTR
		t.softReset()
	case '$'<<8 | 'p', q | '$'<<8 | 'p': // DECRQM
		t.reportMode(t.prefix == '?', t.arg(0, 0))
	case ' '<<8 | 'q': // DECSCUSR: cursor shape, not part of the screen
	case 'r': // DECSTBM
		top, bot := t.arg(0, 1)-1, min(t.arg(1, t.rows), t.rows)-1
		if top < bot {
			t.top, t.bot = top, bot
			t.moveToOrigin(0, 0)
		}
	case 's': // SCOSC
		t.saved = t.saveCursor()
	case 'u': // SCORC
		t.restoreCursor(t.saved)
	case 't': // XTWINOPS
		t.windowOp()
	case q | '$'<<8 | 'h', q | '$'<<8 | 'l':
		t.diagnose(DiagUnknownCSI, t.seq[:t.nseq])
	default:
		t.diagnose(DiagUnknownCSI, t.seq[:t.nseq])
	}
}

// cursorReport formats a cursor position report. In origin mode the row
// counts from the top margin. A pending wrap reports the last column, as
// xterm does (tmux reports one past it).
func (t *Terminal) cursorReport(start, end string) string {
	y := t.y
	if t.modes.Origin {
		y -= t.top
	}
	return start + strconv.Itoa(y+1) + ";" + strconv.Itoa(min(t.x, t.cols-1)+1) + end
}

// windowOp performs the XTWINOPS that concern a terminal without a
// window: the title stack (22/23) and the size report (18).
func (t *Terminal) windowOp() {
	switch t.arg(0, 0) {
	case 18:
		t.reply("\x1b[8;" + strconv.Itoa(t.rows) + ";" + strconv.Itoa(t.cols) + "t")
	case 22:
		if p := t.arg(1, 0); p == 0 || p == 2 {
			if len(t.titleStack) == maxTitleStack {
				t.titleStack = append(t.titleStack[:0], t.titleStack[1:]...)
			}
			t.titleStack = append(t.titleStack, t.title)
		}
	case 23:
		if p := t.arg(1, 0); (p == 0 || p == 2) && len(t.titleStack) > 0 {
			t.title = t.titleStack[len(t.titleStack)-1]
			t.titleStack = t.titleStack[:len(t.titleStack)-1]
		}
	default:
		t.diagnose(DiagUnknownCSI, t.seq[:t.nseq])
	}
}

// setModes is SM/RM (private: DECSET/DECRST) for each parameter.
func (t *Terminal) setModes(private, on bool) {
	for i := 0; i < max(t.numParams(), 1); i++ {
		m := t.arg(i, 0)
		if !private {
			switch m {
			case 4:
				t.modes.Insert = on
			case 20:
				t.modes.NewLine = on
			default:
				t.diagnose(DiagUnknownMode, t.seq[:t.nseq])
			}
			continue
		}
		switch m {
		case 1:
			t.modes.AppCursor = on
		case 6:
			t.modes.Origin = on
			t.moveToOrigin(0, 0)
		case 7:
			t.modes.Autowrap = on
		case 9:
			t.setMouse(MouseX10, on)
		case 25:
			t.modes.CursorVisible = on
		case 47, 1047:
			t.setAltScreen(on, false)
		case 1049:
			t.setAltScreen(on, true)
		case 1048:
			if on {
				t.altSaved = t.saveCursor()
			} else {
				t.restoreCursor(t.altSaved)
			}
		case 66:
			t.modes.AppKeypad = on
		case 1000:
			t.setMouse(MouseNormal, on)
		case 1002:
			t.setMouse(MouseButton, on)
		case 1003:
			t.setMouse(MouseAny, on)
		case 1004:
			t.modes.FocusEvents = on
		case 1006:
			t.modes.MouseSGR = on
		case 2004:
			t.modes.BracketedPaste = on
		case 2026:
			t.sync = on // synchronized output: the screen is the same
		case 12, 8, 1034, 1036, 1039, 1042, 1043, 1007:
			// Cursor blink, autorepeat, meta keys, bell urgency and
			// alternate scroll change nothing the terminal records.
		default:
			t.diagnose(DiagUnknownMode, t.seq[:t.nseq])
		}
	}
}

// setMouse sets or resets one mouse mode: setting one replaces the
// others; resetting the one in force turns reporting off.
func (t *Terminal) setMouse(m MouseMode, on bool) {
	switch {
	case on:
		t.modes.Mouse = m
	case t.modes.Mouse == m:
		t.modes.Mouse = MouseOff
	}
}

// reportMode answers DECRQM: 1 set, 2 reset, 0 not recognised.
func (t *Terminal) reportMode(private bool, m int) {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 2
	}
	v := 0
	if private {
		switch m {
		case 1:
			v = b(t.modes.AppCursor)
		case 6:
			v = b(t.modes.Origin)
		case 7:
			v = b(t.modes.Autowrap)
		case 9:
			v = b(t.modes.Mouse == MouseX10)
		case 25:
			v = b(t.modes.CursorVisible)
		case 47, 1047, 1049:
			v = b(t.modes.AltScreen)
		case 66:
			v = b(t.modes.AppKeypad)
		case 1000:
			v = b(t.modes.Mouse == MouseNormal)
		case 1002:
			v = b(t.modes.Mouse == MouseButton)
		case 1003:
			v = b(t.modes.Mouse == MouseAny)
		case 1004:
			v = b(t.modes.FocusEvents)
		case 1006:
			v = b(t.modes.MouseSGR)
		case 2004:
			v = b(t.modes.BracketedPaste)
		case 2026:
			v = b(t.sync)
		}
		t.reply("\x1b[?" + strconv.Itoa(m) + ";" + strconv.Itoa(v) + "$y")
		return
	}
	switch m {
	case 4:
		v = b(t.modes.Insert)
	case 20:
		v = b(t.modes.NewLine)
	}
	t.reply("\x1b[" + strconv.Itoa(m) + ";" + strconv.Itoa(v) + "$y")
}

// sgr applies SGR parameters to the pen.
func (t *Terminal) sgr() {
	n := t.numParams()
	if n == 0 {
		t.pen = Style{}
		return
	}
	for i := 0; i < n; i++ {
		p := int(t.params[i])
		switch {
		case p == 0:
			t.pen = Style{}
		case p == 1:
			t.pen.Attrs |= Bold
		case p == 2:
			t.pen.Attrs |= Dim
		case p == 3:
			t.pen.Attrs |= Italic
		case p == 4:
			// 4:0 is no underline; 4:1–4:5 are underline styles.
			if t.colon&(1<<i) != 0 && i+1 < n {
				if t.params[i+1] == 0 {
					t.pen.Attrs &^= Underline
				} else {
					t.pen.Attrs |= Underline
				}
				i = t.skipSub(i)
				continue
			}
			t.pen.Attrs |= Underline
		case p == 5 || p == 6:
			t.pen.Attrs |= Blink
		case p == 7:
			t.pen.Attrs |= Reverse
		case p == 8:
			t.pen.Attrs |= Invisible
		case p == 9:
			t.pen.Attrs |= Strike
		case p == 21:
			t.pen.Attrs |= Underline
		case p == 22:
			t.pen.Attrs &^= Bold | Dim
		case p == 23:
			t.pen.Attrs &^= Italic
		case p == 24:
			t.pen.Attrs &^= Underline
		case p == 25:
			t.pen.Attrs &^= Blink
		case p == 27:
			t.pen.Attrs &^= Reverse
		case p == 28:
			t.pen.Attrs &^= Invisible
		case p == 29:
			t.pen.Attrs &^= Strike
		case p >= 30 && p <= 37:
			t.pen.Fg = IndexedColor(uint8(p - 30))
		case p == 38:
			c, next, ok := t.extendedColor(i)
			if ok {
				t.pen.Fg = c
			}
			i = next
		case p == 39:
			t.pen.Fg = 0
		case p >= 40 && p <= 47:
			t.pen.Bg = IndexedColor(uint8(p - 40))
		case p == 48:
			c, next, ok := t.extendedColor(i)
			if ok {
				t.pen.Bg = c
			}
			i = next
		case p == 49:
			t.pen.Bg = 0
		case p == 58:
			// Underline colour: not kept, but its arguments must not be
			// read as attributes.
			_, i, _ = t.extendedColor(i)
		case p >= 90 && p <= 97:
			t.pen.Fg = IndexedColor(uint8(p - 90 + 8))
		case p >= 100 && p <= 107:
			t.pen.Bg = IndexedColor(uint8(p - 100 + 8))
		default:
			// 53 overline, 59, 73-75 and the fonts change nothing kept.
		}
	}
}

// skipSub returns the index of the last sub-parameter of parameter i.
func (t *Terminal) skipSub(i int) int {
	for i < t.numParams()-1 && t.colon&(1<<i) != 0 {
		i++
	}
	return i
}

// extendedColor parses the colour after SGR 38, 48 or 58 at parameter i:
// 5;n or 2;r;g;b with semicolons, or 5:n, 2:r:g:b and 2:cs:r:g:b with
// colons. It returns the index of the last parameter it used.
func (t *Terminal) extendedColor(i int) (Color, int, bool) {
	n := t.numParams()
	arg := func(j int) int { return int(t.params[j]) }
	if t.colon&(1<<i) != 0 {
		// Colon form: everything up to the end of the sub-parameters.
		end := t.skipSub(i)
		sub := end - i // sub-parameters after 38
		switch {
		case sub >= 2 && arg(i+1) == 5:
			return IndexedColor(uint8(min(arg(i+2), 255))), end, true
		case sub >= 4 && arg(i+1) == 2:
			// 2:r:g:b or 2:colourspace:r:g:b.
			j := i + 2
			if sub >= 5 {
				j = i + 3
			}
			return RGBColor(uint8(min(arg(j), 255)), uint8(min(arg(j+1), 255)), uint8(min(arg(j+2), 255))), end, true
		}
		return 0, end, false
	}
	switch {
	case i+2 < n && arg(i+1) == 5:
		return IndexedColor(uint8(min(arg(i+2), 255))), i + 2, true
	case i+4 < n && arg(i+1) == 2:
		return RGBColor(uint8(min(arg(i+2), 255)), uint8(min(arg(i+3), 255)), uint8(min(arg(i+4), 255))), i + 4, true
	}
	return 0, n, false
}

// oscDispatch performs the OSC string collected.
func (t *Terminal) oscDispatch() {
	if t.oscLong {
		t.diagnose(DiagTooLong, t.seq[:t.nseq])
	}
	s := t.osc
	num, rest, _ := strings.Cut(string(s), ";")
	switch num {
	case "0", "2":
		t.title = cleanTitle(rest)
	case "1":
		// Icon name: nothing shows it.
	case "52":
		t.osc52(rest)
	case "7", "8", "133", "633", "1337":
		// Working directory, hyperlinks and shell-integration marks:
		// they annotate the screen without changing it.
	default:
		t.diagnose(DiagUnknownOSC, t.seq[:t.nseq])
	}
}

// cleanTitle makes a title printable on one line and bounded.
func cleanTitle(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
	if len(s) > maxTitle {
		s = s[:maxTitle]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// validSelection: OSC 52's selection parameter as xterm accepts it, the
// letters c p q s and the digits 0-7, a few at most (empty means "s 0").
func validSelection(sel string) bool {
	if len(sel) > 8 {
		return false
	}
	for i := 0; i < len(sel); i++ {
		if !strings.ContainsRune("cpqs01234567", rune(sel[i])) {
			return false
		}
	}
	return true
}

// osc52 handles OSC 52 ; selection ; data: data "?" asks for the
// clipboard, which is answered with what SetClipboard or the program last
// stored; otherwise data is base64 and is stored.
func (t *Terminal) osc52(arg string) {
	sel, data, ok := strings.Cut(arg, ";")
	if !ok {
		t.diagnose(DiagUnknownOSC, t.seq[:t.nseq])
		return
	}
	if data == "?" {
		// The selection is echoed, so only xterm's selection letters
		// pass: anything else would let the program put bytes of its
		// choosing into its own input (DEL, a lone 0x9B).
		if !validSelection(sel) {
			t.diagnose(DiagUnknownOSC, t.seq[:t.nseq])
			return
		}
		// Size first: a reply that will not fit is dropped without paying
		// for its encoding (a large clipboard queried in a loop was
		// milliseconds of CPU per 9-byte query).
		n := len("\x1b]52;;\x1b\\") + len(sel) + base64.StdEncoding.EncodedLen(len(t.clipboard))
		if len(t.replies)+n > maxReplies {
			t.diagnose(DiagReplyOverflow, t.seq[:t.nseq])
			return
		}
		t.reply("\x1b]52;" + sel + ";" + base64.StdEncoding.EncodeToString(t.clipboard) + "\x1b\\")
		return
	}
	dec, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.diagnose(DiagUnknownOSC, t.seq[:t.nseq])
		return
	}
	t.clipboard = dec
}
