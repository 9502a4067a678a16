package canon

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/gowebpki/jcs"
)

// The lexer: what JSON whitespace, a string and a number are, and which
// of their spellings RFC 8785 writes, in one place. Decode is built on
// it, and so are the transcript package's quick path (canonical lines
// only) and tree-free scanner (does a line decode?). Each keeps its own
// shortcut for a string without escapes, which is its raw text when it
// has no control character; every escape and every number they read
// with Unescape and ScanNumber. The helpers called for every token
// (IsSpace, SkipSpace, IsPlain, HasControl) are small enough to be
// inlined; ScanNumber is called once a number, Unescape once a string
// that has an escape. FuzzLexer holds the lexer to references written
// apart from it.

// Fault is what the lexer found wrong with a token; NoFault when nothing
// is. Decode turns a fault into its *Error (rule, offset and detail); the
// shortcuts only need to know that there is one.
type Fault uint8

// The faults, each with the detail Decode reports for it.
const (
	NoFault            Fault = iota
	FaultControl             // a raw control character in a string
	FaultUnterminated        // a string without its closing quote
	FaultEscapeEnd           // the input ends right after a backslash
	FaultEscape              // a backslash before none of " \ / b f n r t u
	FaultHex                 // \u without four hex digits
	FaultLoneSurrogate       // \uD800–\uDFFF not in a high-low pair (I-JSON)
	FaultNumber              // no digit where a number's digits start
	FaultFraction            // no digit after a number's '.'
	FaultExponent            // no digit in a number's exponent
	FaultIntegerRange        // an integer beyond ±(2^53 − 1) (I-JSON)
	FaultNonFinite           // a number that overflows a double
)

// IsSpace reports whether c is JSON whitespace (RFC 8259: space, tab,
// line feed, carriage return).
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte of b from i on that is
// not whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// IsPlain reports whether c stands for itself in a JSON string: anything
// but the quote, the backslash and the control characters, which a
// string must escape.
func IsPlain(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

// HasControl reports whether b holds a control character (a byte below
// 0x20, which IsPlain refuses), eight bytes at a time. A string's text up
// to its first backslash or quote is plain exactly when it has none.
func HasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 borrows in x - 0x20…; one with its high bit set
		// cannot, which ^x masks out.
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// firstControl is the index of b's first control character, which b has.
func firstControl(b []byte) int {
	for k, c := range b {
		if c < 0x20 {
			return k
		}
	}
	return len(b)
}

// Unescape decodes the rest of a string from its first escape, the
// backslash at b[i], to its closing quote, appending the decoded text to
// dst. It returns dst, the index just after the closing quote, and
// whether every escape is spelled as RFC 8785 writes it (\" \\ \b \f \n
// \r \t, and \u00xx in lowercase for the other control characters).
// When the string is not valid JSON, f says why and end is where: the
// control character, the backslash of the escape at fault, or len(b) for
// a string without its closing quote; canonical is then false. Escapes
// decode as RFC 8259 has them, a surrogate pair to its one character,
// and a surrogate escape outside a high-low pair is a fault (I-JSON).
// Plain bytes are copied as they are: checking UTF-8 is the caller's,
// once for the whole line.
func Unescape(dst, b []byte, i int) (out []byte, end int, canonical bool, f Fault) {
	canonical = true
	quote := -1 // the first quote at or after i, once found: the end, unless escaped
	for {
		// b[i] is a backslash.
		if i+1 >= len(b) {
			return dst, i, false, FaultEscapeEnd
		}
		switch e := b[i+1]; e {
		case '"', '\\':
			dst = append(dst, e)
		case '/':
			dst = append(dst, '/')
			canonical = false
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b, i+2)
			switch {
			case !ok:
				return dst, i, false, FaultHex
			case utf16.IsSurrogate(r):
				var r2 rune
				if r < 0xDC00 && i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
					r2, _ = hex4(b, i+8) // 0 unless four hex digits: no low surrogate
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return dst, i, false, FaultLoneSurrogate
				}
				dst = utf8.AppendRune(dst, utf16.DecodeRune(r, r2))
				canonical = false // RFC 8785 writes the character itself
				i += 6
			case r < 0x20:
				// Of \u00xx only the last digit can be a letter.
				if c := b[i+5]; c >= 'A' && c <= 'F' || r == '\b' || r == '\t' || r == '\n' || r == '\f' || r == '\r' {
					canonical = false // uppercase, or one with a short escape
				}
				dst = append(dst, byte(r))
			default:
				dst = utf8.AppendRune(dst, r)
				canonical = false // RFC 8785 writes the character itself
			}
			i += 4
		default:
			return dst, i, false, FaultEscape
		}
		i += 2
		// The run of plain bytes up to the next backslash or the quote,
		// found with the vectorized IndexByte.
		if quote < i {
			quote = len(b)
			if k := bytes.IndexByte(b[i:], '"'); k >= 0 {
				quote = i + k
			}
		}
		run := b[i:quote]
		if k := bytes.IndexByte(run, '\\'); k >= 0 {
			run = run[:k]
		}
		if HasControl(run) {
			return dst, i + firstControl(run), false, FaultControl
		}
		dst = append(dst, run...)
		switch i += len(run); {
		case i == len(b):
			return dst, i, false, FaultUnterminated
		case b[i] == '"':
			return dst, i + 1, canonical, NoFault
		}
	}
}

// hex4 reads the four hex digits of a \u escape at b[i:]. It is small
// enough to be inlined: a \u00xx escape costs no call.
func hex4(b []byte, i int) (r rune, ok bool) {
	if i+4 > len(b) {
		return 0, false
	}
	for _, c := range b[i : i+4] {
		d := rune(c) - '0'
		if d > 9 {
			// A letter, in either case (c|0x20 lowers it).
			d = rune(c|0x20) - 'a' + 10
			if d < 10 || d > 15 {
				return 0, false
			}
		} else if d < 0 {
			return 0, false
		}
		r = r<<4 | d
	}
	return r, true
}

// ScanNumber scans the number at b[i:] and checks it as Decode takes a
// number: the RFC 8259 grammar, an integer (no fraction, no exponent)
// within ±(2^53 − 1), any other number finite as a double (an underflow
// to zero is finite, as in Python). It returns the index just after the
// literal, or when the grammar breaks the index where it does. With
// spelling set, canonical reports whether the literal is the one RFC 8785
// writes for its value (the test is jcs.NumberToJSON's, the reference
// writer's); without, it is false and costs nothing. It is never true
// with a fault.
func ScanNumber(b []byte, i int, spelling bool) (end int, canonical bool, f Fault) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, false, FaultNumber
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, false, FaultFraction
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, false, FaultExponent
		}
		i = j
	}
	// Only for the parse, which keeps nothing of it.
	lit := unsafe.String(&b[start], i-start)
	if integer {
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || n > MaxSafeInteger || n < -MaxSafeInteger {
			return i, false, FaultIntegerRange
		}
		// The grammar allows no leading zero, so "-0" is the one integer
		// literal that is not its value's shortest spelling.
		return i, spelling && (n != 0 || b[start] != '-'), NoFault
	}
	x, _ := strconv.ParseFloat(lit, 64) // an underflow's error: zero is finite
	if math.IsInf(x, 0) {
		return i, false, FaultNonFinite
	}
	if !spelling {
		return i, false, NoFault
	}
	s, err := jcs.NumberToJSON(x)
	return i, err == nil && s == lit, NoFault
}

// skipDigits returns the index of the first byte from i on that is not
// an ASCII digit.
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
