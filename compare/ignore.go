package compare

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Ignore is a parsed ignore path: differences at or below it are dropped,
// only between two records of Kind when Kind is set.
type Ignore struct {
	Kind string
	segs []segment
	text string
}

// segment is one step of an ignore path: a member name, any member name
// (*), an array index, or any index ([*]).
type segment struct {
	name     string
	index    int
	isIndex  bool
	wildcard bool
}

// String returns the path as it was given.
func (ig Ignore) String() string { return ig.text }

// kinds are the record kinds an ignore path may be narrowed to.
var kinds = []string{
	transcript.KindRunStarted, transcript.KindCapability,
	transcript.KindInputText, transcript.KindInputKey, transcript.KindInputResize,
	transcript.KindInputMouse, transcript.KindInputClipboard, transcript.KindInputClock,
	transcript.KindInputStop, transcript.KindObservation, transcript.KindDiagnostic,
	transcript.KindRunFinished, transcript.KindRunFailed, transcript.KindRunUnsupported,
}

// envelope are the envelope members a path may start with, besides x-
// extension members and *.
var envelope = []string{"id", "kind", "payload", "protocol", "seq"}

// ParseIgnore parses an ignore path (docs/REPLAY.md):
//
//	ignore  = [ kind ":" ] path
//	path    = first *( "." member / "[" index "]" / "[" quoted "]" )
//	first   = member / "[" quoted "]"
//	member  = name / "*"
//	index   = digits / "*"
//
// kind is a record kind; name is one or more characters other than
// . [ ] " : * \, space and controls; quoted is a JSON string, for any other
// name; * is any one member name, [*] any one index. The first member is an
// envelope member (id, kind, payload, protocol, seq, an x- member) or *;
// run_id is never compared, so it cannot be ignored.
func ParseIgnore(spec string) (Ignore, error) {
	ig := Ignore{text: spec}
	path := spec
	if i := strings.IndexByte(spec, ':'); i >= 0 && !strings.Contains(spec[:i], `"`) {
		ig.Kind, path = spec[:i], spec[i+1:]
		if !slices.Contains(kinds, ig.Kind) {
			return ig, pathError(spec, fmt.Errorf("%s is not a record kind (want one of %s)", strconv.Quote(ig.Kind), strings.Join(kinds, ", ")))
		}
	}
	segs, err := parsePath(path)
	if err != nil {
		return ig, pathError(spec, err)
	}
	switch first := segs[0]; {
	case first.isIndex:
		return ig, pathError(spec, errors.New("a record is an object, not an array"))
	case first.wildcard, strings.HasPrefix(first.name, "x-"), slices.Contains(envelope, first.name):
	case first.name == Excluded:
		return ig, pathError(spec, errors.New("run_id is never compared; there is nothing to ignore"))
	default:
		return ig, pathError(spec, fmt.Errorf("a path starts at an envelope member (%s, or an x- member), not %s",
			strings.Join(envelope, ", "), strconv.Quote(first.name)))
	}
	ig.segs = segs
	return ig, nil
}

// parsePath parses the path after the optional kind.
func parsePath(p string) ([]segment, error) {
	if p == "" {
		return nil, errNoPath
	}
	var segs []segment
	i := 0
	member := func() error {
		if i < len(p) && p[i] == '*' {
			segs = append(segs, segment{wildcard: true})
			i++
			return nil
		}
		start := i
		for i < len(p) && nameByte(p[i]) {
			i++
		}
		if i == start {
			return fmt.Errorf("want a member name at byte %d", start)
		}
		segs = append(segs, segment{name: p[start:i]})
		return nil
	}
	if p[0] != '[' {
		if err := member(); err != nil {
			return nil, err
		}
	}
	for i < len(p) {
		switch {
		case p[i] == '.' && i > 0:
			i++
			if err := member(); err != nil {
				return nil, err
			}
		case strings.HasPrefix(p[i:], `["`):
			end, name, err := quotedName(p, i+1)
			if err != nil {
				return nil, err
			}
			if end >= len(p) || p[end] != ']' {
				return nil, fmt.Errorf("want ] after the quoted name at byte %d", end)
			}
			segs = append(segs, segment{name: name})
			i = end + 1
		case p[i] == '[':
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ at byte %d", i)
			}
			idx := p[i+1 : i+end]
			switch {
			case idx == "*":
				segs = append(segs, segment{isIndex: true, wildcard: true})
			case validIndex(idx):
				n, err := strconv.Atoi(idx)
				if err != nil || n >= canon.MaxItems {
					return nil, fmt.Errorf("index %s: arrays hold at most %d items", idx, canon.MaxItems)
				}
				segs = append(segs, segment{isIndex: true, index: n})
			default:
				return nil, fmt.Errorf("index %s at byte %d: want digits without leading zeros, *, or a JSON string", strconv.Quote(idx), i)
			}
			i += end + 1
		default:
			return nil, fmt.Errorf("unexpected %s at byte %d (want . or [)", strconv.QuoteRune(rune(p[i])), i)
		}
	}
	return segs, nil
}

// quotedName decodes the JSON string starting at p[i] and returns the
// index after it.
func quotedName(p string, i int) (int, string, error) {
	j := i + 1
	for j < len(p) && p[j] != '"' {
		if p[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(p) {
		return 0, "", fmt.Errorf("unclosed quoted name at byte %d", i)
	}
	v, _, err := canon.Decode([]byte(`{"name":` + p[i:j+1] + `}`))
	if err != nil {
		return 0, "", fmt.Errorf("quoted name at byte %d is not a JSON string: %w", i, err)
	}
	name, _ := v.Get("name")
	return j + 1, name.Str, nil
}

func validIndex(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// nameByte reports whether c may appear in an unquoted name. Bytes of
// multi-byte UTF-8 characters may.
func nameByte(c byte) bool {
	return c > ' ' && c != 0x7f && !strings.ContainsRune(`.[]":*\`, rune(c))
}

// plainName reports whether a member name is written as it is in a path;
// any other name is written as a JSON string.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return false
		}
	}
	return true
}

// matches reports whether ig drops a difference at path between records of
// the two kinds: when narrowed, both records are of its kind; its segments
// match the first steps of path (the difference is at or below it).
func (ig *Ignore) matches(leftKind, rightKind string, path []step) bool {
	if ig.Kind != "" && (leftKind != ig.Kind || rightKind != ig.Kind) {
		return false
	}
	if len(ig.segs) > len(path) {
		return false
	}
	for i, s := range ig.segs {
		p := path[i]
		switch {
		case s.isIndex != !p.isKey:
			return false
		case s.wildcard:
		case s.isIndex && s.index != p.index, !s.isIndex && s.name != p.key:
			return false
		}
	}
	return true
}
