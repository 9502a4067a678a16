package ptyinput

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/termverify/termverify-sandbox/input"
)

// ErrUnencodable is returned by EncodeKey, wrapped, for a valid chord that
// termverify.key-encoding/v1 marks unencodable: xterm's legacy encoding
// has no bytes that represent the whole chord. The run fails before any
// byte is written, as upstream's does.
var ErrUnencodable = errors.New("chord has no termverify.key-encoding/v1 bytes")

// ErrInvalidChord is returned by EncodeKey, wrapped, for a chord that is
// not a canonical termverify.key/v1 chord (input.ValidChord rejects
// it). A parsed transcript never holds one.
var ErrInvalidChord = errors.New("not a termverify.key/v1 chord")

// Chord modifiers as bits, in the registry's order.
const (
	modControl = 1 << iota
	modAlt
	modShift
	modMeta
)

var modifierNames = [...]string{"Control", "Alt", "Shift", "Meta"}

const (
	esc = 0x1b
	del = 0x7f
)

// EncodeKey returns the bytes xterm sends for chord (one termverify.key/v1
// chord: modifiers in the order Control, Alt, Shift, Meta, then one base)
// when the program has set m. With the zero Modes the bytes are exactly
// the termverify.key-encoding/v1 table's. The error wraps ErrInvalidChord
// or ErrUnencodable; on error no bytes are returned.
func EncodeKey(chord []string, m Modes) ([]byte, error) {
	if !input.ValidChord(chord) {
		return nil, fmt.Errorf("encode key %q: %w", chord, ErrInvalidChord)
	}
	mods := 0
	for _, k := range chord[:len(chord)-1] {
		for i, name := range modifierNames {
			if k == name {
				mods |= 1 << i
			}
		}
	}
	b := encodeChord(nil, mods, chord[len(chord)-1], m)
	if b == nil {
		return nil, fmt.Errorf("encode key %s: %w", strings.Join(chord, "+"), ErrUnencodable)
	}
	return b, nil
}

// encodeChord appends the bytes of a valid chord to dst, or returns nil
// when the legacy encoding cannot represent every part of it.
func encodeChord(dst []byte, mods int, base string, m Modes) []byte {
	if final, ok := cursorFinal(base); ok {
		return cursorKey(dst, mods, final, m.AppCursor)
	}
	if final, ok := pfFinal(base); ok {
		// F1–F4 are the VT100 PF keys: SS3 alone, CSI 1 ; m with modifiers.
		// Application cursor mode does not touch them.
		return cursorKey(dst, mods, final, true /* ss3 when unmodified */)
	}
	if n, ok := tildeCode(base); ok {
		dst = append(dst, esc, '[')
		dst = strconv.AppendInt(dst, int64(n), 10)
		if mods != 0 {
			dst = append(dst, ';')
			dst = strconv.AppendInt(dst, int64(modParam(mods)), 10)
		}
		return append(dst, '~')
	}
	if c, ok := editingByte(base); ok {
		return editingKey(dst, mods, base, c)
	}
	return printableKey(dst, mods, base)
}

// modParam is xterm's modifier parameter: 1 plus Shift 1, Alt 2,
// Control 4, Meta 8.
func modParam(mods int) int {
	p := 1
	if mods&modShift != 0 {
		p += 1
	}
	if mods&modAlt != 0 {
		p += 2
	}
	if mods&modControl != 0 {
		p += 4
	}
	if mods&modMeta != 0 {
		p += 8
	}
	return p
}

// cursorKey encodes a key whose unmodified form is ESC [ final, or
// ESC O final when ss3 is set, and whose modified form is
// ESC [ 1 ; m final: every modifier set has bytes.
func cursorKey(dst []byte, mods int, final byte, ss3 bool) []byte {
	switch {
	case mods != 0:
		dst = append(dst, esc, '[', '1', ';')
		dst = strconv.AppendInt(dst, int64(modParam(mods)), 10)
	case ss3:
		dst = append(dst, esc, 'O')
	default:
		dst = append(dst, esc, '[')
	}
	return append(dst, final)
}

// cursorFinal is the final byte of the cursor keys and of Home and End,
// the keys DECCKM switches to SS3.
func cursorFinal(base string) (byte, bool) {
	switch base {
	case "ArrowUp":
		return 'A', true
	case "ArrowDown":
		return 'B', true
	case "ArrowRight":
		return 'C', true
	case "ArrowLeft":
		return 'D', true
	case "Home":
		return 'H', true
	case "End":
		return 'F', true
	}
	return 0, false
}

// pfFinal is the final byte of F1–F4, P to S.
func pfFinal(base string) (byte, bool) {
	switch base {
	case "F1", "F2", "F3", "F4":
		return 'P' + base[1] - '1', true
	}
	return 0, false
}

// tildeCode is the VT220 number of a key sent as ESC [ n ~. The function
// keys skip 16 and 22, the gaps between the VT220's key groups (F6–F10,
// F11–F14).
func tildeCode(base string) (int, bool) {
	switch base {
	case "Insert":
		return 2, true
	case "Delete":
		return 3, true
	case "PageUp":
		return 5, true
	case "PageDown":
		return 6, true
	}
	if len(base) < 2 || base[0] != 'F' {
		return 0, false
	}
	n, err := strconv.Atoi(base[1:])
	if err != nil || n < 5 || n > 12 {
		return 0, false
	}
	code := 10 + n // F5 = 15
	if n >= 6 {
		code++ // F6 = 17
	}
	if n >= 11 {
		code++ // F11 = 23
	}
	return code, true
}

// editingByte is the single byte of Enter, Tab, Escape and Backspace
// (xterm's default Backspace is DEL).
func editingByte(base string) (byte, bool) {
	switch base {
	case "Enter":
		return '\r', true
	case "Tab":
		return '\t', true
	case "Escape":
		return esc, true
	case "Backspace":
		return del, true
	}
	return 0, false
}

// editingKey: the byte alone, ESC before it for Alt, and CSI Z (back tab)
// for Shift+Tab. Any other modifier would have to be dropped, so the chord
// is unencodable.
func editingKey(dst []byte, mods int, base string, c byte) []byte {
	switch {
	case mods == 0:
		return append(dst, c)
	case mods == modAlt:
		return append(dst, esc, c)
	case mods == modShift && base == "Tab":
		return append(dst, esc, '[', 'Z')
	}
	return nil
}

// printableKey encodes a modified-only base (a letter, digit, Space or
// ASCII punctuation). Control turns a letter into its C0 byte; Alt puts
// ESC before the character. Shift and Meta have no legacy bytes for these
// bases, nor does Control for anything but a letter: the candidates differ
// between terminals, and Control+Space would be NUL.
func printableKey(dst []byte, mods int, base string) []byte {
	var c byte
	if base == "Space" {
		c = ' '
	} else {
		c = base[0]
	}
	if mods&(modShift|modMeta) != 0 {
		return nil
	}
	if mods&modControl != 0 {
		if c < 'a' || c > 'z' {
			return nil
		}
		c &= 0x1f
	}
	if mods&modAlt != 0 {
		dst = append(dst, esc)
	}
	return append(dst, c)
}
