package input

import (
	"errors"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// Members is the closed member set of an input kind's payload (x- members
// aside), space-separated; ok is false for a kind that is not an input.
// (A constant string: a slice would be allocated on every call.) The
// transcript codec uses it for its input records too: one vocabulary.
func Members(kind string) (names string, ok bool) {
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
		if _, ok := canon.Str(canon.Lookup(p, "text")); !ok {
			return RuleText, errors.New("input.text requires a string text member")
		}
	case KindClipboard:
		if _, ok := canon.Str(canon.Lookup(p, "text")); !ok {
			return RuleClipboard, errors.New("input.clipboard_set requires a string text member")
		}
	case KindKey:
		if k := canon.Lookup(p, "keys"); k == nil || !validChordValue(k) {
			return RuleKeyChord, errors.New("input.key requires one canonical termverify.key/v1 chord")
		}
	case KindResize:
		_, ok1 := canon.PosInt(canon.Lookup(p, "columns"))
		_, ok2 := canon.PosInt(canon.Lookup(p, "rows"))
		if !ok1 || !ok2 {
			return RuleResize, errors.New("input.resize requires positive integer columns and rows")
		}
	case KindMouse:
		return checkMouse(p)
	case KindClock:
		if _, ok := canon.PosInt(canon.Lookup(p, "delta_ms")); !ok {
			return RuleClockAdvanced, errors.New("input.clock_advanced delta_ms must be a positive integer")
		}
	}
	return "", nil
}

func checkMouse(p *canon.Value) (string, error) {
	action, _ := canon.Str(canon.Lookup(p, "action"))
	_, okc := canon.NonNegInt(canon.Lookup(p, "column"))
	_, okr := canon.NonNegInt(canon.Lookup(p, "row"))
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
		b, _ := canon.Str(button)
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
