package canon

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

func TestUnescape(t *testing.T) {
	cases := []struct {
		in, want  string // in from its first backslash
		end       int    // -1: len(in)
		canonical bool
		f         Fault
	}{
		{`\"\\\b\f\n\r\t"`, "\"\\\b\f\n\r\t", -1, true, NoFault},
		{`\u0000\u001f\u000b"`, "\x00\x1f\x0b", -1, true, NoFault},
		{`\/"`, "/", -1, false, NoFault},
		{`\u001F"`, "\x1f", -1, false, NoFault},
		{`\u000a"`, "\n", -1, false, NoFault},
		{`\u0041"`, "A", -1, false, NoFault},
		{`\u00e9"`, "é", -1, false, NoFault},
		{`\uD83D\uDE00"`, "\U0001F600", -1, false, NoFault},
		{`\n` + "é\x7f" + `\t"tail`, "\né\x7f\t", 8, true, NoFault},
		{`\"x\"y"`, `"x"y`, -1, true, NoFault},
		{`\\"`, `\`, -1, true, NoFault},
		{`\n` + strings.Repeat("s", 20) + `\n"`, "\n" + strings.Repeat("s", 20) + "\n", -1, true, NoFault},
		{`\`, "", 0, false, FaultEscapeEnd},
		{`\n\`, "", 2, false, FaultEscapeEnd},
		{`\x"`, "", 0, false, FaultEscape},
		{`\U0041"`, "", 0, false, FaultEscape},
		{`\u12"`, "", 0, false, FaultHex},
		{`\u12g4"`, "", 0, false, FaultHex},
		{`\n\u004`, "", 2, false, FaultHex},
		{`\ud800"`, "", 0, false, FaultLoneSurrogate},
		{`\udc00\ud800"`, "", 0, false, FaultLoneSurrogate},
		{`\udc00\udc00"`, "", 0, false, FaultLoneSurrogate},
		{`\ud800\u0041"`, "", 0, false, FaultLoneSurrogate},
		{`\ud800\udbff"`, "", 0, false, FaultLoneSurrogate},
		{`\ud800\"`, "", 0, false, FaultLoneSurrogate},
		{`\ud800\ude0`, "", 0, false, FaultLoneSurrogate},
		{`\n` + "ab\x01", "", 4, false, FaultControl},
		{`\n` + strings.Repeat("s", 9) + "\x1f" + `"`, "", 11, false, FaultControl},
		{`\nab`, "", 4, false, FaultUnterminated},
		{`\n\"`, "", 4, false, FaultUnterminated},
	}
	for _, tc := range cases {
		out, end, canonical, f := Unescape([]byte("pre"), []byte(tc.in), 0)
		want := tc.end
		if want < 0 {
			want = len(tc.in)
		}
		if f != tc.f || end != want || f == NoFault && (string(out) != "pre"+tc.want || canonical != tc.canonical) {
			t.Errorf("Unescape(%q) = %q, %d, %v, fault %d; want %q, %d, %v, fault %d",
				tc.in, out, end, canonical, f, "pre"+tc.want, want, tc.canonical, tc.f)
		}
		if f != NoFault && canonical {
			t.Errorf("Unescape(%q): canonical with fault %d", tc.in, f)
		}
	}
}

func TestScanNumber(t *testing.T) {
	cases := []struct {
		in        string
		end       int
		canonical bool
		f         Fault
	}{
		{"0", 1, true, NoFault}, {"-1", 2, true, NoFault}, {"01", 1, true, NoFault},
		{"9007199254740991", 16, true, NoFault}, {"-9007199254740991,", 17, true, NoFault},
		{"-0", 2, false, NoFault}, {"1.5", 3, true, NoFault}, {"1.0", 3, false, NoFault},
		{"1e+21", 5, true, NoFault}, {"1e21", 4, false, NoFault}, {"1E+21", 5, false, NoFault},
		{"1e-7", 4, true, NoFault}, {"1e-07", 5, false, NoFault}, {"5e-324", 6, true, NoFault},
		{"1e-400", 6, false, NoFault}, {"-0.0", 4, false, NoFault}, {"0.1}", 3, true, NoFault},
		{"-", 1, false, FaultNumber}, {"-x", 1, false, FaultNumber}, {"+1", 0, false, FaultNumber},
		{"1.", 2, false, FaultFraction}, {"1.e5", 2, false, FaultFraction},
		{"1e", 2, false, FaultExponent}, {"1e+", 3, false, FaultExponent}, {"1.5E-x", 5, false, FaultExponent},
		{"9007199254740992", 16, false, FaultIntegerRange}, {"-9007199254740992", 17, false, FaultIntegerRange},
		{strings.Repeat("9", 400), 400, false, FaultIntegerRange},
		{"1e400", 5, false, FaultNonFinite}, {"-1.8e308", 8, false, FaultNonFinite},
	}
	for _, tc := range cases {
		for _, spelling := range []bool{true, false} {
			end, canonical, f := ScanNumber([]byte("x"+tc.in), 1, spelling)
			if end != tc.end+1 || f != tc.f || canonical != (spelling && tc.canonical) {
				t.Errorf("ScanNumber(%q, spelling %v) = %d, %v, fault %d; want %d, %v, fault %d",
					tc.in, spelling, end-1, canonical, f, tc.end, spelling && tc.canonical, tc.f)
			}
		}
	}
}

func TestSpace(t *testing.T) {
	for c := range 256 {
		want := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		if IsSpace(byte(c)) != want {
			t.Errorf("IsSpace(%#x) = %v", c, !want)
		}
		if got := HasControl([]byte(strings.Repeat("a", c%11) + string(rune(c)))); got != (c < 0x20) {
			t.Errorf("HasControl with %#x = %v", c, got)
		}
		if IsPlain(byte(c)) != (c >= 0x20 && c != '"' && c != '\\') {
			t.Errorf("IsPlain(%#x) = %v", c, !IsPlain(byte(c)))
		}
	}
	if got := SkipSpace([]byte("x \t\r\n y"), 1); got != 6 {
		t.Errorf("SkipSpace = %d, want 6", got)
	}
}

// FuzzLexer holds the one lexer, which Decode, the transcript package's
// quick path and its scanner all read tokens with, to references written
// apart from it: encoding/json for a string's and a number's grammar, a
// string's text and where it ends; the surrogate pairs of RFC 7493
// (I-JSON) found by a regular expression; math/big for the integer range;
// strconv for what is finite as a double; jcs for RFC 8785's spelling. (Before the lexer was one, the three
// decoders were checked against each other; a mistake in the lexer would
// now be the same in all three, so this is what catches it.)
func FuzzLexer(f *testing.F) {
	for _, s := range []string{`"a"`, `"\"\\\/\b\f\n\r\t"`, `"\u0000\u001F\u001f\u00e9\uD83D\ude00"`, `"\ud800"`,
		`"\udc00\ud800x"`, `"\udc00\udfff"`, `"\ud800\u0041"`, "\"\x01\"", `"\x"`, `"\u12"`, `"abc`, `"\`, `"x"tail`,
		`0`, `-0`, `01`, `1.5`, `1.0`, `1e+21`, `1e21`, `1E400`, `-1e-400`, `1.`, `1e`, `-`, `9007199254740992`,
		`5e-324`, `0.1`, `1.7976931348623157e308`, `123456789012345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, tok []byte) {
		if !utf8.Valid(tok) {
			return // Decode refuses the line before it lexes a token
		}
		if len(tok) > 0 && tok[0] == '"' {
			checkString(t, tok)
		} else {
			checkNumber(t, tok)
		}
	})
}

// escapeToken is one escape, as a scan from the left finds them.
var escapeToken = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|.)`)

// lonely reports whether the escapes of a string's raw text have a
// surrogate outside a high-low pair.
func lonely(raw []byte) bool {
	var prev []byte // the escape just before, if adjacent and a high surrogate
	prevEnd := -1
	for _, m := range escapeToken.FindAllIndex(raw, -1) {
		e := bytes.ToLower(raw[m[0]:m[1]])
		high := len(e) == 6 && e[2] == 'd' && e[3] >= '8' && e[3] <= 'b'
		low := len(e) == 6 && e[2] == 'd' && e[3] >= 'c'
		switch {
		case prev != nil && (m[0] != prevEnd || !low):
			return true
		case prev == nil && low:
			return true
		case prev != nil:
			prev = nil
		case high:
			prev = e
		}
		prevEnd = m[1]
	}
	return prev != nil
}

// checkString lexes the string at tok[0] as Decode does and checks it
// against encoding/json.
func checkString(t *testing.T, tok []byte) {
	d := decoder{dec: &Decoder{exact: true}, data: tok, src: string(tok), canonical: true}
	got, err := d.str()
	jd := json.NewDecoder(bytes.NewReader(tok))
	var want string
	jerr := jd.Decode(&want)
	if jerr != nil {
		if err == nil {
			t.Fatalf("lexer takes %q as %q; encoding/json: %v", tok, got, jerr)
		}
		return
	}
	end := int(jd.InputOffset())
	if lonely(tok[:end]) {
		if e, ok := err.(*Error); !ok || e.Rule != RuleLoneSurrogate {
			t.Fatalf("lexer on %q, which has a lone surrogate: %q, %v", tok, got, err)
		}
		return
	}
	if err != nil {
		if e, ok := err.(*Error); ok && (e.Rule == RuleStringBytes || e.Rule == RuleRecordStringBytes) {
			return
		}
		t.Fatalf("lexer refuses %q (%v); encoding/json: %q", tok, err, want)
	}
	if got != want || d.pos != end {
		t.Fatalf("lexer on %q: %q ending at %d; encoding/json: %q ending at %d", tok, got, d.pos, want, end)
	}
	line := append(append([]byte(`{"a":`), tok[:end]...), '}')
	if ref, err := jcs.Transform(line); err != nil || d.canonical != bytes.Equal(ref, line) {
		t.Fatalf("lexer on %q: canonical %v; jcs form %q (%v)", tok[:end], d.canonical, ref, err)
	}
}

// maxSafe is 2^53 − 1.
var maxSafe = big.NewInt(MaxSafeInteger)

// checkNumber lexes the number at tok[0] and checks it against
// encoding/json's grammar, math/big's range, strconv's doubles and jcs's
// spelling.
func checkNumber(t *testing.T, tok []byte) {
	end, canonical, f := ScanNumber(tok, 0, true)
	if f == FaultNumber || f == FaultFraction || f == FaultExponent {
		// A prefix broken off where the lexer stopped is no number.
		if json.Valid(tok[:end]) && (len(tok[:end]) > 0 && (tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9')) {
			t.Fatalf("lexer refuses %q at %d (fault %d); encoding/json takes %q", tok, end, f, tok[:end])
		}
		return
	}
	lit := tok[:end]
	if !json.Valid(lit) {
		t.Fatalf("lexer takes %q of %q; encoding/json refuses it", lit, tok)
	}
	if end < len(tok) {
		// Nothing that would continue the number follows it: a digit only
		// after a lone 0, a '.' only after a fraction or an exponent, an
		// exponent only after one.
		c, frac, exp := tok[end], bytes.IndexByte(lit, '.') >= 0, bytes.ContainsAny(lit, "eE")
		zero := string(lit) == "0" || string(lit) == "-0"
		if c >= '0' && c <= '9' && !zero || c == '.' && !frac && !exp || (c == 'e' || c == 'E') && !exp {
			t.Fatalf("lexer stops %q at %d, before %q", tok, end, c)
		}
	}
	if !bytes.ContainsAny(lit, ".eE") {
		n, _ := new(big.Int).SetString(string(lit), 10)
		if out := n.CmpAbs(maxSafe) > 0; out != (f == FaultIntegerRange) {
			t.Fatalf("lexer on integer %q: fault %d", lit, f)
		}
	} else if f == FaultIntegerRange {
		t.Fatalf("lexer on %q, not an integer: integer range", lit)
	}
	// Finite as a double is strconv's rounding (encoding/json's too).
	if x, _ := strconv.ParseFloat(string(lit), 64); math.IsInf(x, 0) != (f == FaultNonFinite) && f != FaultIntegerRange {
		t.Fatalf("lexer on %q: fault %d; strconv: %v", lit, f, x)
	}
	if f != NoFault {
		return
	}
	line := append(append([]byte(`{"a":`), lit...), '}')
	if ref, err := jcs.Transform(line); err != nil || canonical != bytes.Equal(ref, line) {
		t.Fatalf("lexer on %q: canonical %v; jcs form %q (%v)", lit, canonical, ref, err)
	}
}
