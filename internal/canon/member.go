package canon

import (
	"errors"
	"strings"
)

// The readers below are what the codecs built on Value (transcript,
// input, control) use to look inside a payload. Each takes nil for a
// member that is absent, so that a check reads as one expression:
// Str(Lookup(p, "text")).

// Lookup is obj's member name, or nil when obj has none (or is nil).
func Lookup(obj *Value, name string) *Value {
	if obj == nil {
		return nil
	}
	v, _ := obj.Get(name)
	return v
}

// Str is v's text when v is a JSON string.
func Str(v *Value) (string, bool) {
	if v == nil || v.Kind != String {
		return "", false
	}
	return v.Str, true
}

// NonNegInt and PosInt read integer members; booleans and non-integer
// literals never count.
func NonNegInt(v *Value) (int64, bool) {
	if v == nil {
		return 0, false
	}
	n, ok := v.Int()
	return n, ok && n >= 0
}

// PosInt is NonNegInt above zero.
func PosInt(v *Value) (int64, bool) {
	n, ok := NonNegInt(v)
	return n, ok && n > 0
}

// Closed reports whether obj is an object whose members are all in
// required or optional (or x- extensions), with every name in required
// present. It returns a detail for the first problem.
func Closed(obj *Value, required, optional []string) error {
	if obj == nil || obj.Kind != Object {
		return errors.New("must be an object")
	}
	if missing, unknown := obj.CheckClosed(required, optional); missing != "" {
		return errors.New("missing member " + Quote(missing))
	} else if unknown != "" {
		return errors.New("unknown member " + Quote(unknown))
	}
	return nil
}

// IsExtension reports whether a member name is an x- extension, which
// every closed member set admits.
func IsExtension(name string) bool { return strings.HasPrefix(name, "x-") }

// HasWord reports whether w is one of the space-separated words of list
// (the member sets are constant strings: a slice would be allocated on
// every call).
func HasWord(list, w string) bool {
	for list != "" {
		var word string
		word, list, _ = strings.Cut(list, " ")
		if word == w {
			return true
		}
	}
	return false
}
