package interminai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// MaxDepth and MaxMembers bound a line's JSON beyond MaxLine. The seed's
// requests are at most two objects deep (a "data" object inside the
// request) with a handful of members; the bounds keep a 10 MiB line of
// brackets or of distinct member names from costing the daemon more than
// the line itself, since checking duplicates keeps every name of the
// object being read.
const (
	MaxDepth   = 32
	MaxMembers = 1000
)

// checkJSON holds line to the strict JSON this package reads: valid UTF-8
// without lone surrogate escapes, one JSON value with nothing but
// whitespace after it, no duplicate member names in any object, within
// MaxDepth and MaxMembers, and an object at the top. It checks before any
// member is read because encoding/json silently repairs the first two and
// keeps the last of a duplicate, so a duplicated "type" could otherwise
// mean two different requests to two readers.
func checkJSON(line []byte, what string) error {
	if !utf8.Valid(line) {
		return lineErr(what, RuleUTF8, int64(firstInvalidUTF8(line)), "invalid UTF-8 at byte %d", firstInvalidUTF8(line))
	}
	if len(bytes.TrimLeft(line, " \t\r\n")) == 0 {
		return lineErr(what, RuleSyntax, 0, "empty line")
	}
	object, end, err := walkJSON(line, what)
	if err != nil {
		return err
	}
	if rest := bytes.TrimLeft(line[end:], " \t\r\n"); len(rest) > 0 {
		off := int64(len(line) - len(rest))
		return lineErr(what, RuleTrailing, off, "unexpected bytes after the JSON value at byte %d", off)
	}
	if !object {
		return lineErr(what, RuleNotObject, 0, "the line is not a JSON object")
	}
	// Surrogates last: the scan relies on the line being valid JSON.
	if off := loneSurrogate(line); off >= 0 {
		return lineErr(what, RuleUTF8, int64(off), "lone surrogate escape at byte %d", off)
	}
	return nil
}

// objectState is one open object or array in walkJSON.
type objectState struct {
	object  bool
	wantKey bool                // next token is a member name (objects only)
	names   map[string]struct{} // member names seen so far (objects only)
	name    string              // the member being read (objects only)
}

// walkJSON reads the first JSON value of line token by token and reports
// whether it is an object and the offset just past it. It keeps its own
// stack instead of recursing, so the depth bound is its only cost.
func walkJSON(line []byte, what string) (object bool, end int64, err error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var stack []*objectState
	first := true
	for {
		tok, err := dec.Token()
		if err != nil {
			return false, 0, syntaxErr(err, line, what)
		}
		if first {
			object = tok == json.Delim('{')
			first = false
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:top]
				if done := valueDone(stack); done {
					return object, dec.InputOffset(), nil
				}
				continue
			}
			name, _ := tok.(string) // the decoder yields only strings or '}' here
			s := stack[top]
			if _, dup := s.names[name]; dup {
				off := dec.InputOffset()
				e := lineErr(what, RuleDuplicate, off, "duplicate member %s at byte %d", strconv.Quote(name), off)
				switch {
				case top == 0:
					e.Field = name
				case top == 1 && stack[0].name == "data":
					e.Field = "data." + name
				}
				return false, 0, e
			}
			if len(s.names) == MaxMembers {
				e := lineErr(what, RuleMembers, dec.InputOffset(), "an object has more than %d members", MaxMembers)
				e.Limit = MaxMembers
				return false, 0, e
			}
			s.names[name] = struct{}{}
			s.name = name
			s.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == MaxDepth {
				e := lineErr(what, RuleDepth, dec.InputOffset(), "nested deeper than %d", MaxDepth)
				e.Limit = MaxDepth
				return false, 0, e
			}
			s := &objectState{object: tok == json.Delim('{')}
			if s.object {
				s.wantKey = true
				s.names = map[string]struct{}{}
			}
			stack = append(stack, s)
			continue
		case json.Delim(']'):
			stack = stack[:top]
		}
		if valueDone(stack) {
			return object, dec.InputOffset(), nil
		}
	}
}

// valueDone records that a value ended: the enclosing object, if any, now
// wants a member name. It reports whether the value was the top one.
func valueDone(stack []*objectState) bool {
	if len(stack) == 0 {
		return true
	}
	if s := stack[len(stack)-1]; s.object {
		s.wantKey = true
	}
	return false
}

// syntaxErr turns a json.Decoder error into a json.syntax *Error with the
// decoder's offset.
func syntaxErr(err error, line []byte, what string) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		e := lineErr(what, RuleSyntax, se.Offset, "%v (byte %d)", se, se.Offset)
		e.Err = err
		return e
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		e := lineErr(what, RuleSyntax, int64(len(line)), "the JSON value ends early (byte %d)", len(line))
		e.Err = err
		return e
	}
	e := lineErr(what, RuleSyntax, -1, "%v", err)
	e.Err = err
	return e
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// loneSurrogate returns the offset of the first \uD800–\uDFFF escape in a
// string of line that is not half of a pair, or -1. encoding/json turns
// one into U+FFFD, which would make INPUT send bytes the client never
// wrote. line must be valid JSON.
func loneSurrogate(line []byte) int {
	in := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\':
			if line[i+1] != 'u' {
				i++
				continue
			}
			r := hex4(line[i+2 : i+6])
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if i+12 <= len(line) && line[i+6] == '\\' && line[i+7] == 'u' {
					if lo := hex4(line[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF {
						i += 11
						continue
					}
				}
				return i
			case r >= 0xDC00 && r <= 0xDFFF:
				return i
			}
			i += 5
		}
	}
	return -1
}

func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 16) // valid JSON: four hex digits
	return rune(n)
}
