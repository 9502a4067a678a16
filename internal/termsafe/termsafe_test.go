package termsafe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"
)

// attack is the recipe: window title (OSC 0), clear screen (CSI 2J),
// clipboard write (OSC 52), then a forged line.
const attack = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\nreceipts: all os"

func TestString(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"plain ASCII", "adapter-start-failed: no terminal", "adapter-start-failed: no terminal"},
		{"printable Unicode stays", "héllo 世界 🙂 \u200d👩\u200d💻 \u00a0", "héllo 世界 🙂 \u200d👩\u200d💻 \u00a0"},
		{"backslash stays", `C:\x1b \n`, `C:\x1b \n`},
		{"the issue's attack", attack, `\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\nreceipts: all os`},
		{"LF CR TAB", "a\nb\rc\td", `a\nb\rc\td`},
		{"NUL BEL BS", "\x00\x07\x08", `\x00\x07\x08`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI and OSC", "\u009b31m\u009d0;t\u009c", `\u009b31m\u009d0;t\u009c`},
		{"C1 bounds", "\u0080\u009f\u00a0", `\u0080\u009f` + "\u00a0"},
		{"bidi overrides", "a\u202ab\u202bc\u202cd\u202de\u202ef", `a\u202ab\u202bc\u202cd\u202de\u202ef`},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"byte order mark", "a\ufeffb", `a\ufeffb`},
		{"line separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"raw 8-bit CSI byte", "\x9b2J", `\x9b2J`},
		{"surrogate bytes", "\xed\xa0\x80", `\xed\xa0\x80`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in)
			if got != tc.want {
				t.Fatalf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := String(got); again != got {
				t.Errorf("not idempotent: %q → %q", got, again)
			}
			if q := fmt.Sprintf("%q", tc.in); String(q) != q {
				t.Errorf("%%q output changed: %q → %q", q, String(q))
			}
			assertSafe(t, got)
		})
	}
}

// assertSafe fails when s holds a byte or rune String must remove.
func assertSafe(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("invalid UTF-8 left in %q", s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || unsafeRune(r) {
			t.Errorf("%U left in %q", r, s)
		}
	}
}

// TestStringEveryControl walks every code point below U+3000 and every
// single byte: each one String keeps is printable text.
func TestStringEveryControl(t *testing.T) {
	for r := rune(0); r < 0x3000; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		assertSafe(t, String("x"+string(r)+"y"))
	}
	for c := 0; c < 256; c++ {
		assertSafe(t, String(string([]byte{'x', byte(c), 'y'})))
	}
}

func TestJSON(t *testing.T) {
	v := map[string]string{"message": attack + "\x7f\u009b\u202e\u2028 ok é", "bad": "a\xffb"}
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(raw)
	if !json.Valid(got) {
		t.Fatalf("not valid JSON:\n%s", got)
	}
	var back, want map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(want) {
		t.Errorf("decoded value changed:\n got %q\nwant %q", back, want)
	}
	for _, line := range strings.Split(string(got), "\n") {
		assertSafe(t, strings.ReplaceAll(line, "  ", ""))
	}
	if !strings.Contains(string(got), `\u009b`) || !strings.Contains(string(got), "é") {
		t.Errorf("want C1 escaped and é kept:\n%s", got)
	}
	if clean := []byte(`{"a": "é"}`); &JSON(clean)[0] != &clean[0] {
		t.Error("clean JSON was copied")
	}
}

func TestError(t *testing.T) {
	cause := fmt.Errorf("read %s: %w", attack, fs.ErrNotExist)
	err := Error(cause)
	assertSafe(t, err.Error())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is lost the cause")
	}
	if Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

type named int

func (n named) String() string { return "n\x1b" }

func TestArgs(t *testing.T) {
	cases := []struct {
		name   string
		format string
		args   []any
		want   string
	}{
		{"string %s", "msg %s.", []any{attack}, `msg \x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\nreceipts: all os.`},
		{"error %v", "downgraded (%v)", []any{errors.New("a\nb")}, `downgraded (a\nb)`},
		{"%q not quoted twice", "%q", []any{"a\x1bb\n"}, `"a\x1bb\n"`},
		{"%q on an error", "%q", []any{errors.New("\u202e")}, `"\u202e"`},
		{"width and flags", "[%-5s|%5.2s]", []any{"a\tb", "xyz"}, `[a\tb  |   xy]`},
		{"%*d width stays an int", "[%*d]", []any{4, 7}, "[   7]"},
		{"numbers", "%d %x %.1f %t", []any{12, uint8(255), 1.25, true}, "12 ff 1.2 true"},
		{"Stringer number", "%v", []any{named(1)}, `n\x1b`},
		{"format is ours", "line\n%s", []any{"x"}, "line\nx"},
		{"struct %+v", "%+v", []any{struct{ M string }{"\x1b"}}, `{M:\x1b}`},
		{"nil", "%v", []any{nil}, "<nil>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprintf(tc.format, Args(tc.args)...); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
