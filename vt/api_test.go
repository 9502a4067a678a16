package vt

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestSGR(t *testing.T) {
	red, blue := IndexedColor(1), IndexedColor(4)
	tests := []struct {
		name string
		in   string
		want Style // of the cell written after in
	}{
		{"default", "", Style{}},
		{"bold", "\x1b[1m", Style{Attrs: Bold}},
		{"all attributes", "\x1b[1;2;3;4;5;7;8;9m", Style{Attrs: Bold | Dim | Italic | Underline | Blink | Reverse | Invisible | Strike}},
		{"rapid blink is blink", "\x1b[6m", Style{Attrs: Blink}},
		{"double underline", "\x1b[21m", Style{Attrs: Underline}},
		{"underline style 4:3", "\x1b[4:3m", Style{Attrs: Underline}},
		{"underline 4:0 off", "\x1b[4m\x1b[4:0m", Style{}},
		{"22 ends bold and dim", "\x1b[1;2;3m\x1b[22m", Style{Attrs: Italic}},
		{"resets 23-29", "\x1b[3;4;5;7;8;9m\x1b[23;24;25;27;28;29m", Style{}},
		{"fg bg", "\x1b[31;44m", Style{Fg: red, Bg: blue}},
		{"bright", "\x1b[91;104m", Style{Fg: IndexedColor(9), Bg: IndexedColor(12)}},
		{"256", "\x1b[38;5;208;48;5;17m", Style{Fg: IndexedColor(208), Bg: IndexedColor(17)}},
		{"256 colon", "\x1b[38:5:208m", Style{Fg: IndexedColor(208)}},
		{"truecolor", "\x1b[38;2;10;20;30m", Style{Fg: RGBColor(10, 20, 30)}},
		{"truecolor colon", "\x1b[48:2::10:20:30m", Style{Bg: RGBColor(10, 20, 30)}},
		{"truecolor colon no space", "\x1b[48:2:10:20:30m", Style{Bg: RGBColor(10, 20, 30)}},
		{"truecolor then attribute", "\x1b[38;2;1;2;3;1m", Style{Fg: RGBColor(1, 2, 3), Attrs: Bold}},
		{"38 missing arguments", "\x1b[38;5m", Style{}},
		{"values capped", "\x1b[38;2;300;2;3m", Style{Fg: RGBColor(255, 2, 3)}},
		{"39 49 defaults", "\x1b[31;44m\x1b[39;49m", Style{}},
		{"0 resets", "\x1b[1;31m\x1b[0m", Style{}},
		{"empty resets", "\x1b[1;31m\x1b[m", Style{}},
		{"underline colour skipped", "\x1b[58;2;1;2;3;1m", Style{Attrs: Bold}},
		{"unknown ignored", "\x1b[1;73m", Style{Attrs: Bold}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := New(Config{Cols: 10, Rows: 2})
			term.WriteString(tc.in + "x")
			if got := term.Cell(0, 0).Style; got != tc.want {
				t.Errorf("style %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBackgroundErase(t *testing.T) {
	// Erased cells take the current background, and nothing else of the
	// pen, as in xterm and tmux.
	term := New(Config{Cols: 5, Rows: 2})
	term.WriteString("abcde\x1b[1;4;41m\x1b[1;3H\x1b[K")
	for x, want := range []Style{{}, {}, {Bg: IndexedColor(1)}, {Bg: IndexedColor(1)}, {Bg: IndexedColor(1)}} {
		if got := term.Cell(0, x).Style; got != want {
			t.Errorf("col %d style %+v, want %+v", x, got, want)
		}
	}
}

func TestCells(t *testing.T) {
	term := New(Config{Cols: 6, Rows: 1})
	term.WriteString("a" + wide + "e\u0301")
	want := []Cell{
		{Content: "a", Width: 1},
		{Content: wide, Width: 2},
		{Width: 0},
		{Content: "e\u0301", Width: 1},
		{Content: " ", Width: 1},
		{Content: " ", Width: 1},
	}
	for x, w := range want {
		if got := term.Cell(0, x); got != w {
			t.Errorf("col %d: %+v, want %+v", x, got, w)
		}
	}
	if got := term.Cell(1, 0); got != (Cell{}) {
		t.Errorf("off-screen cell %+v", got)
	}
	// Lines drops trailing spaces, Cell keeps them.
	if got := term.Lines()[0]; got != "a"+wide+"e\u0301" {
		t.Errorf("line %q", got)
	}
}

func TestReplies(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"DSR 5n is OK, not ?0n", "\x1b[5n", "\x1b[0n"},
		{"CPR", "\x1b[3;7H\x1b[6n", "\x1b[3;7R"},
		{"CPR origin mode", "\x1b[2;4r\x1b[?6h\x1b[2;3H\x1b[6n", "\x1b[2;3R"},
		{"CPR at pending wrap reports last column", "\x1b[1;10Hx\x1b[6n", "\x1b[1;10R"},
		{"DECXCPR", "\x1b[2;2H\x1b[?6n", "\x1b[?2;2;1R"},
		{"DA1", "\x1b[c", da1},
		{"DA1 with 0", "\x1b[0c", da1},
		{"DECID", "\x1bZ", da1},
		{"DA2", "\x1b[>c", da2},
		{"DECRQM set", "\x1b[?2004h\x1b[?2004$p", "\x1b[?2004;1$y"},
		{"DECRQM reset", "\x1b[?1$p", "\x1b[?1;2$y"},
		{"DECRQM unknown", "\x1b[?5555$p", "\x1b[?5555;0$y"},
		{"DECRQM ANSI IRM", "\x1b[4h\x1b[4$p", "\x1b[4;1$y"},
		{"DECRQM sync", "\x1b[?2026h\x1b[?2026$p", "\x1b[?2026;1$y"},
		{"size", "\x1b[18t", "\x1b[8;4;10t"},
		{"clipboard query", "\x1b]52;c;aGk=\x07\x1b]52;c;?\x07", "\x1b]52;c;aGk=\x1b\\"},
		{"several in order", "\x1b[5n\x1b[6n", "\x1b[0n\x1b[1;1R"},
		{"no reply for text", "hello", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := New(Config{Cols: 10, Rows: 4})
			term.WriteString(tc.in)
			if got := string(term.Replies()); got != tc.want {
				t.Errorf("replies %q, want %q", got, tc.want)
			}
			if got := term.Replies(); len(got) != 0 {
				t.Errorf("replies not forgotten: %q", got)
			}
		})
	}
}

// TestRepliesNeverBlock: a program flooding queries while nobody drains
// the answers neither blocks Write nor grows memory past the bound.
func TestRepliesNeverBlock(t *testing.T) {
	term := New(Config{Cols: 80, Rows: 24})
	q := bytes.Repeat([]byte("\x1b[6n"), 100000)
	if n, err := term.Write(q); n != len(q) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := len(term.Replies()); got > maxReplies {
		t.Errorf("%d bytes of replies kept, bound %d", got, maxReplies)
	}
	if term.Diagnostics().ByKind[DiagReplyOverflow] == 0 {
		t.Error("dropped replies not diagnosed")
	}
}

func TestSetClipboard(t *testing.T) {
	term := New(Config{Cols: 10, Rows: 2})
	term.SetClipboard([]byte("from caller"))
	term.WriteString("\x1b]52;c;?\x1b\\")
	if got := string(term.Replies()); got != "\x1b]52;c;ZnJvbSBjYWxsZXI=\x1b\\" {
		t.Errorf("reply %q", got)
	}
	term.WriteString("\x1b]52;c;c2V0\x07")
	if got := string(term.Clipboard()); got != "set" {
		t.Errorf("clipboard %q", got)
	}
}

func TestModes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Modes
	}{
		{"power on", "", Modes{Autowrap: true, CursorVisible: true}},
		{"DECCKM", "\x1b[?1h", Modes{AppCursor: true, Autowrap: true, CursorVisible: true}},
		{"keypad", "\x1b=", Modes{AppKeypad: true, Autowrap: true, CursorVisible: true}},
		{"keypad off", "\x1b=\x1b>", Modes{Autowrap: true, CursorVisible: true}},
		{"DECNKM", "\x1b[?66h", Modes{AppKeypad: true, Autowrap: true, CursorVisible: true}},
		{"bracketed paste", "\x1b[?2004h", Modes{BracketedPaste: true, Autowrap: true, CursorVisible: true}},
		{"mouse 1000 SGR", "\x1b[?1000;1006h", Modes{Mouse: MouseNormal, MouseSGR: true, Autowrap: true, CursorVisible: true}},
		{"mouse 1002", "\x1b[?1002h", Modes{Mouse: MouseButton, Autowrap: true, CursorVisible: true}},
		{"mouse 1003 replaces", "\x1b[?1000h\x1b[?1003h", Modes{Mouse: MouseAny, Autowrap: true, CursorVisible: true}},
		{"mouse reset other keeps", "\x1b[?1003h\x1b[?1000l", Modes{Mouse: MouseAny, Autowrap: true, CursorVisible: true}},
		{"mouse off", "\x1b[?1002h\x1b[?1002l", Modes{Autowrap: true, CursorVisible: true}},
		{"X10 mouse", "\x1b[?9h", Modes{Mouse: MouseX10, Autowrap: true, CursorVisible: true}},
		{"focus", "\x1b[?1004h", Modes{FocusEvents: true, Autowrap: true, CursorVisible: true}},
		{"cursor hidden", "\x1b[?25l", Modes{Autowrap: true}},
		{"insert", "\x1b[4h", Modes{Insert: true, Autowrap: true, CursorVisible: true}},
		{"origin", "\x1b[?6h", Modes{Origin: true, Autowrap: true, CursorVisible: true}},
		{"alt screen", "\x1b[?1049h", Modes{AltScreen: true, Autowrap: true, CursorVisible: true}},
		{"RIS resets", "\x1b[?1h\x1b=\x1b[?2004;1000;25l\x1b[?25l\x1bc", Modes{Autowrap: true, CursorVisible: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := New(Config{Cols: 10, Rows: 4})
			term.WriteString(tc.in)
			if got := term.Modes(); got != tc.want {
				t.Errorf("modes %+v, want %+v", got, tc.want)
			}
			if term.Cursor().Visible != tc.want.CursorVisible || term.AltScreen() != tc.want.AltScreen {
				t.Error("Cursor().Visible or AltScreen() disagree with Modes")
			}
		})
	}
}

func TestTitle(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"OSC 2 BEL", "\x1b]2;hello\x07", "hello"},
		{"OSC 0 ST", "\x1b]0;hi there\x1b\\", "hi there"},
		{"OSC 1 is the icon", "\x1b]2;t\x07\x1b]1;icon\x07", "t"},
		{"UTF-8", "\x1b]2;日本\x07", "日本"},
		{"split across writes", "\x1b]2;ab", "ab"},
		{"controls dropped", "\x1b]2;a\x01b\x07", "ab"},
		{"title stack", "\x1b]2;one\x07\x1b[22;2t\x1b]2;two\x07\x1b[23;2t", "one"},
		{"pop empty stack", "\x1b]2;one\x07\x1b[23t", "one"},
		{"RIS clears", "\x1b]2;one\x07\x1bc", ""},
		{"long title cut", "\x1b]2;" + strings.Repeat("é", maxTitle) + "\x07", strings.Repeat("é", maxTitle/2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := New(Config{Cols: 10, Rows: 4})
			term.WriteString(tc.in)
			if tc.name == "split across writes" {
				term.WriteString("\x07")
			}
			if got := term.Title(); got != tc.want {
				t.Errorf("title %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		in   string
		kind DiagKind
		seq  string
	}{
		{"unknown CSI", "\x1b[5y", DiagUnknownCSI, "\x1b[5y"},
		{"unknown mode", "\x1b[?5005h", DiagUnknownMode, "\x1b[?5005h"},
		{"unknown ANSI mode", "\x1b[12h", DiagUnknownMode, "\x1b[12h"},
		{"unknown escape", "\x1bq", DiagUnknownEscape, "\x1bq"},
		{"unknown OSC", "\x1b]777;x\x07", DiagUnknownOSC, "\x1b]777;x"},
		{"DCS", "\x1bP+q544e\x1b\\", DiagDCS, "\x1bP+q544e"},
		{"APC", "\x1b_hello\x1b\\", DiagString, "\x1b_hello"},
		{"malformed", "\x1b[1?h", DiagMalformed, "\x1b[1?h"},
		{"invalid UTF-8", "\xff", DiagInvalidUTF8, "\xff"},
		{"unprintable rune", "\u0378", DiagUndrawable, "\u0378"},
		{"national charset", "\x1b(K", DiagCharset, "\x1b(K"},
		{"double width line", "\x1b#6", DiagUnknownEscape, "\x1b#6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := New(Config{Cols: 10, Rows: 4})
			term.WriteString("a" + tc.in + "b")
			d := term.Diagnostics()
			if d.Total != 1 || d.ByKind[tc.kind] != 1 || len(d.Recent) != 1 {
				t.Fatalf("diagnostics %+v, want one %v", d, tc.kind)
			}
			if got := string(d.Recent[0].Seq); got != tc.seq {
				t.Errorf("seq %q, want %q", got, tc.seq)
			}
			if got := term.Lines()[0]; got != "ab" {
				t.Errorf("screen %q, want ab: a diagnosed sequence must not print", got)
			}
		})
	}
}

func TestDiagnosticsBounded(t *testing.T) {
	term := New(Config{Cols: 10, Rows: 4})
	for i := 0; i < 1000; i++ {
		term.WriteString("\x1b[5y")
	}
	term.WriteString("\x1b[?5005h")
	d := term.Diagnostics()
	if d.Total != 1001 || len(d.Recent) != diagRing {
		t.Fatalf("total %d, recent %d", d.Total, len(d.Recent))
	}
	if got := d.Recent[len(d.Recent)-1].String(); got != `unknown-mode \e[?5005h` {
		t.Errorf("last %q", got)
	}
}

func TestScrollbackBounded(t *testing.T) {
	term := New(Config{Cols: 10, Rows: 3, Scrollback: 5})
	for i := 0; i < 20; i++ {
		term.WriteString(strings.Repeat(string(rune('a'+i)), 3) + "\r\n")
	}
	if term.ScrollbackLen() != 5 || term.ScrollbackCap() != 5 {
		t.Fatalf("scrollback %d of %d", term.ScrollbackLen(), term.ScrollbackCap())
	}
	want := []string{"nnn", "ooo", "ppp", "qqq", "rrr"}
	if got := term.Scrollback(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("scrollback %q, want %q", got, want)
	}
	none := New(Config{Cols: 10, Rows: 2})
	none.WriteString("1\r\n2\r\n3\r\n")
	if none.ScrollbackLen() != 0 {
		t.Error("a terminal without scrollback kept lines")
	}
}

// TestScrollbackKeepsStyles: a line comes back from the compact
// scrollback with its cells, wide characters, clusters and styles.
func TestScrollbackKeepsStyles(t *testing.T) {
	term := New(Config{Cols: 12, Rows: 2, Scrollback: 10})
	line := "\x1b[1;31mre\x1b[0md " + wide + "e\u0301\x1b[44m  \x1b[0m"
	term.WriteString(line + "\r\n\n")
	want := New(Config{Cols: 12, Rows: 2})
	want.WriteString(line)
	if got, w := term.ScrollbackANSI()[0], want.ANSI()[0]; got != w {
		t.Errorf("scrollback line %q, want %q", got, w)
	}
	term.Resize(12, 3) // pulls the line back onto the screen
	for x := 0; x < 12; x++ {
		if g, w := term.Cell(0, x), want.Cell(0, x); g != w {
			t.Errorf("col %d: %+v, want %+v", x, g, w)
		}
	}
}

func TestANSI(t *testing.T) {
	term := New(Config{Cols: 12, Rows: 2})
	term.WriteString("a\x1b[1;31mb\x1b[0m \x1b[38;5;200;48;2;1;2;3mc\x1b[0m\x1b[44m  \x1b[0m")
	want := "a\x1b[0;1;31mb\x1b[0m \x1b[0;38;5;200;48;2;1;2;3mc\x1b[0;44m  \x1b[0m"
	if got := term.ANSI()[0]; got != want {
		t.Errorf("ANSI %q\nwant %q", got, want)
	}
	// Rendering the ANSI lines on a fresh terminal gives the same cells.
	again := New(Config{Cols: 12, Rows: 2})
	again.WriteString(term.ANSI()[0])
	for x := 0; x < 12; x++ {
		if g, w := again.Cell(0, x), term.Cell(0, x); g != w {
			t.Errorf("col %d: %+v, want %+v", x, g, w)
		}
	}
}

func TestSizeClamped(t *testing.T) {
	for _, sz := range [][2]int{{0, 0}, {-5, 3}, {100000, 100000}} {
		term := New(Config{Cols: sz[0], Rows: sz[1]})
		cols, rows := term.Size()
		if cols < 1 || rows < 1 || cols > MaxCols || rows > MaxRows || len(term.Lines()) != rows {
			t.Errorf("New(%v) gave %dx%d", sz, cols, rows)
		}
		term.Resize(-1, 1<<30)
		checkInvariants(t, term)
	}
}

func TestWidth(t *testing.T) {
	tests := []struct {
		r rune
		w int
	}{
		{'a', 1}, {0x7f, -1}, {0x9b, -1}, {0xe9, 1}, {0x301, 0}, {0x200b, 0}, {0x1160, 0},
		{0x4e00, 2}, {0x3000, 2}, {0xff21, 2}, {0x1f600, 2}, {0x2764, 1}, {0xfe0f, 0},
		{0x2500, 1}, {0x378, -1}, {0xe000, 1}, {0x20000, 2},
	}
	for _, tc := range tests {
		if got := runeWidth(tc.r); got != tc.w {
			t.Errorf("width(%U) = %d, want %d", tc.r, got, tc.w)
		}
	}
}

// TestWidthTableCurrent regenerates the width table from this host's C
// library and requires it to equal width_table.go: tmux on this host
// takes its widths from the same wcwidth(3), so a difference means the
// two would draw some character in different columns.
func TestWidthTableCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating the width table skipped in -short mode")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("python3 runs the generator and is not installed: %v", err)
	}
	out, err := exec.Command(py, "testdata/genwidth.py").Output()
	if err != nil {
		t.Skipf("the generator needs glibc's C.UTF-8 locale: %v", err)
	}
	formatted, err := format.Source(out)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("width_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(formatted, have) {
		t.Error("width_table.go differs from this host's wcwidth(3): run go generate ./vt and check tmux agrees")
	}
}

// TestOSC52QueryBounds: a query whose answer would not fit is refused
// before the clipboard is encoded, and a selection other than xterm's
// letters is not echoed into the program's input.
func TestOSC52QueryBounds(t *testing.T) {
	term := New(Config{Cols: 10, Rows: 2})
	term.SetClipboard(make([]byte, 700<<10))
	for range 200 {
		term.WriteString("\x1b]52;c;?\a")
	}
	if r := term.Replies(); len(r) != 0 {
		t.Errorf("%d bytes of replies for a clipboard whose answer cannot fit", len(r))
	}
	if n := term.Diagnostics().ByKind[DiagReplyOverflow]; n != 200 {
		t.Errorf("%d overflow diagnostics, want 200", n)
	}
	term.SetClipboard([]byte("hi"))
	term.WriteString("\x1b]52;\x7f\x7f echo x \xc2\x9b201~;?\a")
	if r := term.Replies(); len(r) != 0 {
		t.Errorf("a selection of arbitrary bytes was echoed: %q", r)
	}
	term.WriteString("\x1b]52;c;?\a")
	if r := string(term.Replies()); r != "\x1b]52;c;aGk=\x1b\\" {
		t.Errorf("reply %q", r)
	}
}
