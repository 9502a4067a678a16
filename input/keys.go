package input

import "github.com/termverify/termverify-sandbox/internal/canon"

// The termverify.key/v1 registry: 4 modifiers, 26 named bases and 69
// modified-only bases, 99 entries in all. Names are exact and
// case-sensitive; there are no aliases. Together they admit 1,382 chords
// (26 × 16 + 69 × 14), the rows of upstream's key-encoding-v1.tsv.

// Modifiers, in the one order a chord may list them.
var keyModifiers = [...]string{"Control", "Alt", "Shift", "Meta"}

// namedKeys may be sent alone or with any modifiers.
var namedKeys = [...]string{
	"Enter", "Tab", "Escape", "Backspace", "Delete", "Insert",
	"ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
	"Home", "End", "PageUp", "PageDown",
	"F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12",
}

// modifiedOnlyPunct are the printable ASCII punctuation bases; with a–z,
// 0–9 and Space they are text, so as keys they need Control, Alt or Meta
// (Shift alone would just be text again).
const modifiedOnlyPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

const (
	modControl = 1 << iota
	modAlt
	modShift
	modMeta
)

// keyClass: 0 not a base, 1 named, 2 modified-only.
func keyClass(s string) int {
	for _, k := range namedKeys {
		if s == k {
			return 1
		}
	}
	if s == "Space" {
		return 2
	}
	if len(s) == 1 {
		c := s[0]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			return 2
		}
		for i := 0; i < len(modifiedOnlyPunct); i++ {
			if modifiedOnlyPunct[i] == c {
				return 2
			}
		}
	}
	return 0
}

// RegistryKeys returns the 99 names of the termverify.key/v1 registry:
// modifiers first, then named bases, then modified-only bases.
func RegistryKeys() []string {
	out := append([]string(nil), keyModifiers[:]...)
	out = append(out, namedKeys[:]...)
	for c := 'a'; c <= 'z'; c++ {
		out = append(out, string(c))
	}
	for c := '0'; c <= '9'; c++ {
		out = append(out, string(c))
	}
	out = append(out, "Space")
	for i := 0; i < len(modifiedOnlyPunct); i++ {
		out = append(out, modifiedOnlyPunct[i:i+1])
	}
	return out
}

// ValidChord reports whether keys is one canonical termverify.key/v1
// chord: distinct modifiers in the order Control, Alt, Shift, Meta, then
// exactly one base; a modified-only base needs Control, Alt or Meta.
func ValidChord(keys []string) bool {
	if len(keys) == 0 {
		return false
	}
	mods, next := 0, 0
	for _, k := range keys[:len(keys)-1] {
		i := next
		for i < len(keyModifiers) && keyModifiers[i] != k {
			i++
		}
		if i == len(keyModifiers) {
			return false // not a modifier, repeated, or out of order
		}
		mods |= 1 << i
		next = i + 1
	}
	switch keyClass(keys[len(keys)-1]) {
	case 1:
		return true
	case 2:
		return mods&(modControl|modAlt|modMeta) != 0
	}
	return false
}

// validChordValue checks an input.key keys member without allocating.
func validChordValue(v *canon.Value) bool {
	if v.Kind != canon.Array || len(v.Items) == 0 || len(v.Items) > 5 {
		return false
	}
	var buf [5]string
	for i := range v.Items {
		if v.Items[i].Kind != canon.String {
			return false
		}
		buf[i] = v.Items[i].Str
	}
	return ValidChord(buf[:len(v.Items)])
}
