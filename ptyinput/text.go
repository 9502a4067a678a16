package ptyinput

import (
	"strings"
	"unicode/utf8"
)

// The bracketed-paste markers (xterm, CSI ? 2004).
const (
	PasteStart = "\x1b[200~"
	PasteEnd   = "\x1b[201~"
)

// EncodeText returns the bytes a terminal sends when text is pasted into it
// while the program has set m: text as UTF-8 with every LF sent as CR,
// wrapped in PasteStart … PasteEnd when the program enabled bracketed paste
// and text holds a line break (LF or CR). Every ESC that begins a paste
// marker inside text is dropped, whatever the modes, so the output holds a
// paste marker only where EncodeText put one. Bytes of text that are not
// UTF-8 are each sent as U+FFFD. The package doc gives the reasons.
func EncodeText(text string, m Modes) []byte {
	wrap := m.BracketedPaste && strings.ContainsAny(text, "\n\r")
	out := make([]byte, 0, len(text)+len(PasteStart)+len(PasteEnd))
	if wrap {
		out = append(out, PasteStart...)
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		case r == '\n':
			out = append(out, '\r')
		case r == esc:
			// Drop the whole run of ESCs before a marker, not only the
			// last: dropping one ESC of "ESC ESC [201~" would join the
			// other to the marker's tail and forge the marker anew.
			j := i
			for j < len(text) && text[j] == esc {
				j++
			}
			if !startsMarkerTail(text[j:]) {
				out = append(out, text[i:j]...)
			}
			size = j - i
		default:
			out = append(out, text[i:i+size]...)
		}
		i += size
	}
	if wrap {
		out = append(out, PasteEnd...)
	}
	return out
}

// startsMarkerTail reports whether s begins with a paste marker minus its
// ESC.
func startsMarkerTail(s string) bool {
	return strings.HasPrefix(s, PasteStart[1:]) || strings.HasPrefix(s, PasteEnd[1:])
}
