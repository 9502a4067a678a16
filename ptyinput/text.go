package ptyinput

import "unicode/utf8"

// EncodeText returns the bytes input.text writes to the terminal: the
// text's UTF-8 bytes, byte for byte, whatever modes the program has set.
// An LF stays LF (Control+j), a CR is Enter, an ESC is Escape, and a paste
// marker inside text goes as it is; nothing is bracketed. Bytes of text
// that are not UTF-8 (only a Go caller can pass them) are each sent as
// U+FFFD. The package doc gives the reasons.
func EncodeText(text string) []byte {
	if utf8.ValidString(text) {
		return []byte(text)
	}
	out := make([]byte, 0, len(text)+2*utf8.UTFMax)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, text[i:i+size]...)
		}
		i += size
	}
	return out
}
