package input

import (
	"errors"
	"strings"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// members is the closed member set of an input kind's payload (x- members
// aside), space-separated; ok is false for a kind that is not an input.
// (A constant string: a slice would be allocated on every call.)
func members(kind string) (names string, ok bool) {
	switch kind {
	case KindText, KindClipboard:
		return "at_ms text", true
	case KindKey:
		return "at_ms keys", true
	case KindResize:
		return "at_ms columns rows", true
	case KindMouse:
		return "at_ms action column row button delta", true
	case KindClock:
		return "at_ms delta_ms", true
	case KindStop:
		return "at_ms", true
	}
	return "", false
}

// CheckPayload checks the members an input kind's payload carries besides
// at_ms (whose value only a transcript's manual clock can judge) and
// returns the rule it breaks, or "" and nil. p's member set is the
// caller's to check; a kind that is not an input passes.
func CheckPayload(kind string, p *canon.Value) (rule string, err error) {
	switch kind {
	case KindText:
		if _, ok := str(get(p, "text")); !ok {
			return RuleText, errors.New("input.text requires a string text member")
		}
	case KindClipboard:
		if _, ok := str(get(p, "text")); !ok {
			return RuleClipboard, errors.New("input.clipboard_set requires a string text member")
		}
	case KindKey:
		if k := get(p, "keys"); k == nil || !validChordValue(k) {
			return RuleKeyChord, errors.New("input.key requires one canonical termverify.key/v1 chord")
		}
	case KindResize:
		_, ok1 := posInt(get(p, "columns"))
		_, ok2 := posInt(get(p, "rows"))
		if !ok1 || !ok2 {
			return RuleResize, errors.New("input.resize requires positive integer columns and rows")
		}
	case KindMouse:
		return checkMouse(p)
	case KindClock:
		if _, ok := posInt(get(p, "delta_ms")); !ok {
			return RuleClockAdvanced, errors.New("input.clock_advanced delta_ms must be a positive integer")
		}
	}
	return "", nil
}

func checkMouse(p *canon.Value) (string, error) {
	action, _ := str(get(p, "action"))
	_, okc := nonNegInt(get(p, "column"))
	_, okr := nonNegInt(get(p, "row"))
	switch action {
	case MousePress, MouseRelease, MouseMove, MouseScroll:
	default:
		okc = false
	}
	if !okc || !okr {
		return RuleMousePosition, errors.New("input.mouse action must be press|release|move|scroll with column, row >= 0")
	}
	button, hasButton := p.Get("button")
	delta, hasDelta := p.Get("delta")
	switch action {
	case MousePress, MouseRelease:
		b, _ := str(button)
		if !hasButton || hasDelta || (b != "left" && b != "middle" && b != "right") {
			return RuleMouseButton, errors.New("input.mouse press/release needs button left|middle|right and no delta")
		}
	case MouseScroll:
		n, ok := int64(0), false
		if hasDelta {
			n, ok = delta.Int()
		}
		if !hasDelta || hasButton || !ok || n == 0 {
			return RuleMouseDelta, errors.New("input.mouse scroll needs a non-zero integer delta and no button")
		}
	case MouseMove:
		if hasButton || hasDelta {
			return RuleMouseDelta, errors.New("input.mouse move forbids button and delta")
		}
	}
	return "", nil
}

func isExtension(name string) bool { return strings.HasPrefix(name, "x-") }

// hasWord reports whether w is one of the space-separated words of list.
func hasWord(list, w string) bool {
	for list != "" {
		var word string
		word, list, _ = strings.Cut(list, " ")
		if word == w {
			return true
		}
	}
	return false
}

// closed reports whether obj is an object whose members are all in
// allowed (or x-), with every name in required present. It returns a
// detail for the first problem.
func closed(obj *canon.Value, required, optional []string) error {
	if obj.Kind != canon.Object {
		return errors.New("must be an object")
	}
	if missing, unknown := obj.CheckClosed(required, optional); missing != "" {
		return errors.New("missing member " + canon.Quote(missing))
	} else if unknown != "" {
		return errors.New("unknown member " + canon.Quote(unknown))
	}
	return nil
}

func str(v *canon.Value) (string, bool) {
	if v == nil || v.Kind != canon.String {
		return "", false
	}
	return v.Str, true
}

// nonNegInt and posInt read integer members; booleans and non-integer
// literals never count.
func nonNegInt(v *canon.Value) (int64, bool) {
	if v == nil {
		return 0, false
	}
	n, ok := v.Int()
	return n, ok && n >= 0
}

func posInt(v *canon.Value) (int64, bool) {
	n, ok := nonNegInt(v)
	return n, ok && n > 0
}

func get(obj *canon.Value, name string) *canon.Value {
	v, _ := obj.Get(name)
	return v
}
