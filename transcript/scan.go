package transcript

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// scanner answers, for a line the quick path did not take, the one
// question step 5 asks of it: would canon.Decode return no error? It
// builds no tree: a line that decodes but is not canonical (the quick
// path takes every canonical line that decodes) is then a step-6
// violation whatever its values, and its tree would be dropped unread.
// Only a line that does not decode goes on to canon, which alone names
// the violation. So a transcript of long non-canonical lines costs no
// tree per line either.
//
// It checks what canon.Decode checks, in no particular order: UTF-8,
// syntax and whitespace, duplicate member names at any depth, escapes
// and lone surrogates, integer range, finite numbers, a top-level
// object, and the value budgets. FuzzScan holds it to canon's verdict.
// Whitespace, escapes and numbers it reads with canon's lexer, as
// canon.Decode does; the structure is its own.
type scanner struct {
	line     []byte
	pos      int
	values   int
	strBytes int
	keys     []string // the names of the objects being scanned, innermost last
	text     []byte   // escaped names, decoded
}

// decodes reports whether canon.Decode(line) returns no error.
func (s *scanner) decodes(line []byte) bool {
	if !utf8.Valid(line) {
		return false
	}
	s.line, s.pos, s.values, s.strBytes = line, 0, 0, 0
	s.keys, s.text = s.keys[:0], s.text[:0]
	s.space()
	if s.pos >= len(line) || line[s.pos] != '{' {
		return false // not an object, or not a value at all
	}
	ok := s.value(0)
	clear(s.keys[:cap(s.keys)]) // pin no line
	s.keys = s.keys[:0]
	if !ok {
		return false
	}
	s.space()
	return s.pos == len(line)
}

func (s *scanner) space() { s.pos = canon.SkipSpace(s.line, s.pos) }

// value scans the value after any whitespace at s.pos; depth is that of
// its container, as in canon (the top level is at 0).
func (s *scanner) value(depth int) bool {
	s.space()
	if s.pos >= len(s.line) {
		return false
	}
	if s.values++; s.values > canon.MaxValues {
		return false
	}
	switch c := s.line[s.pos]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		mark := len(s.text)
		_, ok := s.str()
		s.text = s.text[:mark]
		return ok
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

func (s *scanner) word(w string) bool {
	if !bytes.HasPrefix(s.line[s.pos:], []byte(w)) {
		return false
	}
	s.pos += len(w)
	return true
}

func (s *scanner) object(depth int) bool {
	if depth > canon.MaxDepth {
		return false
	}
	s.pos++ // '{'
	s.space()
	if s.pos < len(s.line) && s.line[s.pos] == '}' {
		s.pos++
		return true
	}
	base, mark := len(s.keys), len(s.text)
	defer func() { s.keys, s.text = s.keys[:base], s.text[:mark] }()
	ordered := true
	var index map[string]struct{} // built once an unordered object grows past a few names
	for {
		s.space()
		if s.pos >= len(s.line) || s.line[s.pos] != '"' {
			return false
		}
		key, ok := s.str()
		if !ok {
			return false
		}
		// As canon: while the names ascend no name repeats; after that,
		// every name is looked up among all before it.
		keys := s.keys[base:]
		if n := len(keys); ordered && n > 0 && !canon.Less(keys[n-1], key) {
			ordered = false
		}
		if !ordered && repeats(&index, keys, key) {
			return false
		}
		s.space()
		if s.pos >= len(s.line) || s.line[s.pos] != ':' {
			return false
		}
		s.pos++
		if !s.value(depth) || len(keys) == canon.MaxItems {
			return false
		}
		s.keys = append(s.keys, key)
		s.space()
		if s.pos >= len(s.line) {
			return false
		}
		switch s.line[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// repeats reports whether key is one of keys (the names before it in
// its object), looked up in index once there are a few (an object may
// have 16,384), and adds it there.
func repeats(index *map[string]struct{}, keys []string, key string) bool {
	if *index == nil && len(keys) >= 8 {
		*index = make(map[string]struct{}, 2*len(keys))
		for _, k := range keys {
			(*index)[k] = struct{}{}
		}
	}
	if *index != nil {
		_, dup := (*index)[key]
		(*index)[key] = struct{}{}
		return dup
	}
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}

func (s *scanner) array(depth int) bool {
	if depth > canon.MaxDepth {
		return false
	}
	s.pos++ // '['
	s.space()
	if s.pos < len(s.line) && s.line[s.pos] == ']' {
		s.pos++
		return true
	}
	for n := 0; ; n++ {
		if !s.value(depth) || n == canon.MaxItems {
			return false
		}
		s.space()
		if s.pos >= len(s.line) {
			return false
		}
		switch s.line[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// str scans the string at s.pos and returns it decoded (valid while the
// enclosing object is scanned), counted against the string budgets.
func (s *scanner) str() (string, bool) {
	start := s.pos + 1
	i := start
	for i < len(s.line) && canon.IsPlain(s.line[i]) {
		i++
	}
	if i < len(s.line) && s.line[i] == '"' {
		s.pos = i + 1
		return s.count(s.line[start:i])
	}
	if i == len(s.line) || s.line[i] != '\\' {
		return "", false // unterminated, or a control character
	}
	out := len(s.text)
	s.text = append(s.text, s.line[start:i]...)
	text, end, _, f := canon.Unescape(s.text, s.line, i)
	if f != canon.NoFault {
		return "", false
	}
	s.text, s.pos = text, end
	return s.count(s.text[out:])
}

func (s *scanner) count(b []byte) (string, bool) {
	s.strBytes += len(b)
	if len(b) > canon.MaxStringBytes || s.strBytes > canon.MaxRecordStringBytes {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

// number scans a number as canon does: an integer within ±(2^53 − 1),
// or any other number finite as a double.
func (s *scanner) number() bool {
	end, _, f := canon.ScanNumber(s.line, s.pos, false /* spelling */)
	s.pos = end
	return f == canon.NoFault
}
