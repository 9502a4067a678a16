package interminai

// DecodeText turns `input --text`'s escapes into the bytes they name: \n
// \r \t \a \b \f \v \\, \e and \E (ESC), and \xHH (one byte, exactly two
// hex digits). Any other backslash sequence, including a lone trailing
// backslash and \x with fewer than two hex digits, passes through
// unchanged, so text that merely contains a backslash is sent as typed.
// The result may be any bytes; EncodeRequest refuses an INPUT that is not
// valid UTF-8, because the protocol carries INPUT as a JSON string.
func DecodeText(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			out = append(out, s[i])
			continue
		}
		if b, ok := simpleEscape(s[i+1]); ok {
			out = append(out, b)
			i++
			continue
		}
		if s[i+1] == 'x' && i+3 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) {
			out = append(out, unhex(s[i+2])<<4|unhex(s[i+3]))
			i += 3
			continue
		}
		out = append(out, s[i]) // unknown: the backslash stays, the next byte follows as usual
	}
	return string(out)
}

// simpleEscape is the byte a one-letter escape names.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'a':
		return '\a', true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'v':
		return '\v', true
	case '\\':
		return '\\', true
	case 'e', 'E':
		return 0x1b, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
