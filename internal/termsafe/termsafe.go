// Package termsafe makes a string that someone else controls — a subject's
// message, a transcript's reason, a file name — safe to print on a
// terminal.
//
// A terminal executes what it is sent: ESC and the C1 controls start
// escape sequences (set the window title, clear the screen, write the
// clipboard with OSC 52), CR and LF move the cursor so a forged line can
// follow ours, and the Unicode bidirectional controls reorder what the
// reader sees (Trojan Source). String replaces every such character with a
// visible escape and leaves printable text, in any script, as it is:
//
//   - C0 controls U+0000–U+001F (TAB, LF and CR included: what we print from
//     a subject is one line or one table cell, and a raw LF or TAB would let
//     it forge a line or a column) and DEL: \t \n \r, otherwise \xHH;
//   - bytes that are not valid UTF-8: \xHH, one per byte;
//   - C1 controls U+0080–U+009F (some terminals execute U+009B as CSI and
//     U+009D as OSC), the bidi controls U+202A–U+202E and U+2066–U+2069,
//     the marks U+200E, U+200F and U+061C, the separators U+2028 and
//     U+2029, and U+FEFF (a byte order mark inside text, invisible): \uHHHH.
//
// The backslash itself is not escaped, so the escaping is for a reader and
// is not reversible (a subject can print the four characters \x1b); in
// exchange it is idempotent: String(String(s)) == String(s), and text that
// fmt's %q already quoted passes through unchanged, never quoted twice.
package termsafe

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// String returns s with every character that a terminal could execute, or
// that could reorder or break the line, replaced by a visible escape (see
// the package comment). It returns s itself when nothing needs escaping.
func String(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = appendByteEscape(b, s[i])
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r < 0x20 || r == 0x7f:
			b = appendByteEscape(b, byte(r))
		case unsafeRune(r):
			b = appendRuneEscape(b, r)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// JSON rewrites JSON text (as encoding/json writes it) so that it is safe
// to print: DEL, the C1 controls, the bidi controls and marks, the line
// separators, U+FEFF and invalid UTF-8 become \u escapes (U+FFFD for an invalid
// byte). encoding/json already escapes C0 controls inside strings; outside
// strings valid JSON has only ASCII, so every rewritten character is inside
// a string and the decoded value is unchanged (invalid UTF-8 aside, which
// encoding/json itself decodes as U+FFFD). The C0 bytes of the text — its
// own indentation and newlines — are kept.
func JSON(b []byte) []byte {
	out := b[:0:0]
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf && c != 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			r = utf8.RuneError
		} else if r != 0x7f && !unsafeRune(r) {
			i += size
			continue
		}
		out = append(out, b[start:i]...)
		out = appendRuneEscape(out, r)
		i += size
		start = i
	}
	if start == 0 {
		return b
	}
	return append(out, b[start:]...)
}

// Error returns an error whose message is String(err.Error()) and which
// unwraps to err, so errors.Is and errors.As still see the cause. A nil
// err stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return &safeError{err: err}
}

type safeError struct{ err error }

func (e *safeError) Error() string { return String(e.err.Error()) }
func (e *safeError) Unwrap() error { return e.err }

// Args wraps the arguments of a Printf-style call so that each one is
// formatted with its own verb, flags, width and precision and the result
// passed through String: Printf(format, Args(args)...) escapes what the
// arguments contribute but never the format, which is ours. An argument
// formatted with %q comes out of fmt already escaped and String leaves it
// unchanged. Plain numbers and booleans are passed as they are (they print
// no controls, and %*d needs a real int); %T and %p would name the
// wrapper's type, so callers should not use them with Args.
func Args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if plain(a) {
			out[i] = a
		} else {
			out[i] = arg{a}
		}
	}
	return out
}

// arg formats its value as fmt would, then escapes the text.
type arg struct{ v any }

// Format implements fmt.Formatter.
func (a arg) Format(f fmt.State, verb rune) {
	_, _ = io.WriteString(f, String(fmt.Sprintf(fmt.FormatString(f, verb), a.v)))
}

// plain reports whether a is a number or boolean without methods of its
// own that could print text.
func plain(a any) bool {
	switch a.(type) {
	case fmt.Formatter, fmt.Stringer, fmt.GoStringer, error:
		return false
	}
	switch reflect.ValueOf(a).Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

// firstUnsafe is the index of the first byte of s that String changes, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

// unsafeRune reports whether a valid non-ASCII rune is one String escapes.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls
		return true
	case r >= 0x202a && r <= 0x202e: // LRE RLE PDF LRO RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI RLI FSI PDI
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c: // LRM RLM ALM
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r == 0xfeff: // zero width no-break space, the byte order mark
		return true
	}
	return false
}

func appendByteEscape(b []byte, c byte) []byte {
	return append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
}

func appendRuneEscape(b []byte, r rune) []byte {
	b = append(b, '\\', 'u')
	h := strconv.FormatInt(int64(r), 16)
	for n := len(h); n < 4; n++ {
		b = append(b, '0')
	}
	return append(b, h...)
}
