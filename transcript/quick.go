package transcript

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// quickDecoder is the streaming checker's fast path through steps 5 and 6
// for the lines a Writer emits. It takes a line only when the line is
// already in RFC 8785 form and within every value budget, and then builds
// the tree canon.Decode would, in memory it reuses line after line; for
// any other line it gives up, and the caller asks canon, which alone
// names violations. So it adds no rule: it is a shortcut through canon's
// for the one case where canon has nothing to say (FuzzQuickDecode holds
// it to that).
//
// The tree it returns refers to the line's bytes and to the decoder's
// memory: it is valid until the next decode and while the line is not
// modified.
type quickDecoder struct {
	line     []byte
	pos      int
	values   int
	strBytes int

	items   []canon.Value  // containers' elements while being decoded, innermost last
	members []canon.Member // ditto for objects
	slab    []canon.Value  // this line's arrays, carved
	mslab   []canon.Member // this line's objects, carved
	text    []byte         // this line's escaped strings, decoded
}

// decode returns line's tree and true exactly when canon.Decode would
// return that tree with canonical set and no error; false when it cannot
// tell, and then the caller must ask canon.
func (q *quickDecoder) decode(line []byte) (canon.Value, bool) {
	if len(line) == 0 || line[0] != '{' || !utf8.Valid(line) {
		return canon.Value{}, false
	}
	q.line, q.pos, q.values, q.strBytes = line, 0, 0, 0
	q.items, q.members = q.items[:0], q.members[:0]
	q.slab, q.mslab = q.slab[:0], q.mslab[:0]
	// Decoded escaped strings are never longer than their text: sized once,
	// the buffer never moves while the line's strings refer to it.
	if cap(q.text) < len(line) {
		q.text = make([]byte, 0, len(line))
	}
	q.text = q.text[:0]
	v, ok := q.value(1)
	if !ok || q.pos != len(line) {
		return canon.Value{}, false
	}
	return v, true
}

// value decodes the value at q.pos, at the given nesting depth of its
// containers (the top-level object is at depth 1).
func (q *quickDecoder) value(depth int) (canon.Value, bool) {
	if q.pos >= len(q.line) {
		return canon.Value{}, false
	}
	if q.values++; q.values > canon.MaxValues {
		return canon.Value{}, false
	}
	switch c := q.line[q.pos]; {
	case c == '{':
		return q.object(depth)
	case c == '[':
		return q.array(depth)
	case c == '"':
		s, ok := q.str()
		return canon.Value{Kind: canon.String, Str: s}, ok
	case c == 't':
		return canon.Value{Kind: canon.Bool, Bool: true}, q.word("true")
	case c == 'f':
		return canon.Value{Kind: canon.Bool}, q.word("false")
	case c == 'n':
		return canon.Value{}, q.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return q.integer()
	}
	return canon.Value{}, false
}

func (q *quickDecoder) word(w string) bool {
	if !bytes.HasPrefix(q.line[q.pos:], []byte(w)) {
		return false
	}
	q.pos += len(w)
	return true
}

// object decodes an object whose names ascend strictly in RFC 8785 order
// (so none repeats), with no whitespace.
func (q *quickDecoder) object(depth int) (canon.Value, bool) {
	if depth > canon.MaxDepth {
		return canon.Value{}, false
	}
	q.pos++ // '{'
	if q.pos < len(q.line) && q.line[q.pos] == '}' {
		q.pos++
		return canon.Value{Kind: canon.Object, Members: []canon.Member{}}, true
	}
	// On failure the stacks are left as they are: decode starts afresh.
	base := len(q.members)
	for {
		if q.pos >= len(q.line) || q.line[q.pos] != '"' {
			return canon.Value{}, false
		}
		key, ok := q.str()
		if !ok || q.pos >= len(q.line) || q.line[q.pos] != ':' {
			return canon.Value{}, false
		}
		if n := len(q.members); n > base && !canon.Less(q.members[n-1].Key, key) || n-base == canon.MaxItems {
			return canon.Value{}, false
		}
		q.pos++
		v, ok := q.value(depth + 1)
		if !ok || q.pos >= len(q.line) {
			return canon.Value{}, false
		}
		q.members = append(q.members, canon.Member{Key: key, Value: v})
		switch q.line[q.pos] {
		case ',':
			q.pos++
		case '}':
			q.pos++
			start := len(q.mslab)
			q.mslab = append(q.mslab, q.members[base:]...)
			q.members = q.members[:base]
			return canon.Value{Kind: canon.Object, Members: q.mslab[start:len(q.mslab):len(q.mslab)]}, true
		default:
			return canon.Value{}, false
		}
	}
}

func (q *quickDecoder) array(depth int) (canon.Value, bool) {
	if depth > canon.MaxDepth {
		return canon.Value{}, false
	}
	q.pos++ // '['
	if q.pos < len(q.line) && q.line[q.pos] == ']' {
		q.pos++
		return canon.Value{Kind: canon.Array, Items: []canon.Value{}}, true
	}
	base := len(q.items)
	for {
		if len(q.items)-base == canon.MaxItems {
			return canon.Value{}, false
		}
		v, ok := q.value(depth + 1)
		if !ok || q.pos >= len(q.line) {
			return canon.Value{}, false
		}
		q.items = append(q.items, v)
		switch q.line[q.pos] {
		case ',':
			q.pos++
		case ']':
			q.pos++
			start := len(q.slab)
			q.slab = append(q.slab, q.items[base:]...)
			q.items = q.items[:base]
			return canon.Value{Kind: canon.Array, Items: q.slab[start:len(q.slab):len(q.slab)]}, true
		default:
			return canon.Value{}, false
		}
	}
}

// str decodes the string at q.pos, whose escapes must be the ones RFC 8785
// writes: \" \\ \b \f \n \r \t, and \u00xx (lowercase) for the other
// control characters.
func (q *quickDecoder) str() (string, bool) {
	start := q.pos + 1
	// As canon does: the closing quote by the vectorized IndexByte, then
	// the string as it stands if nothing before it is escaped.
	k := bytes.IndexByte(q.line[start:], '"')
	if k < 0 {
		return "", false
	}
	seg := q.line[start : start+k]
	plainEnd := bytes.IndexByte(seg, '\\')
	if plainEnd < 0 {
		plainEnd = len(seg)
	}
	if hasControl(seg[:plainEnd]) {
		return "", false
	}
	if plainEnd == len(seg) {
		q.pos = start + k + 1
		return q.count(seg)
	}
	out := len(q.text)
	q.text = append(q.text, seg[:plainEnd]...)
	quote := start + k // the next quote at or after i: the end, unless escaped
	for i := start + plainEnd; ; {
		if quote < i {
			k := bytes.IndexByte(q.line[i:], '"')
			if k < 0 {
				return "", false
			}
			quote = i + k
		}
		// The run of plain bytes up to the next backslash or the quote.
		run := q.line[i:quote]
		if b := bytes.IndexByte(run, '\\'); b >= 0 {
			run = run[:b]
		}
		if hasControl(run) {
			return "", false
		}
		q.text = append(q.text, run...)
		if i += len(run); i == quote {
			q.pos = i + 1
			return q.count(q.text[out:])
		}
		if i+1 >= len(q.line) {
			return "", false
		}
		switch e := q.line[i+1]; e {
		case '"', '\\':
			q.text = append(q.text, e)
		case 'b':
			q.text = append(q.text, '\b')
		case 'f':
			q.text = append(q.text, '\f')
		case 'n':
			q.text = append(q.text, '\n')
		case 'r':
			q.text = append(q.text, '\r')
		case 't':
			q.text = append(q.text, '\t')
		case 'u':
			if i+6 > len(q.line) || q.line[i+2] != '0' || q.line[i+3] != '0' {
				return "", false
			}
			hi, lo := lowerHex(q.line[i+4]), lowerHex(q.line[i+5])
			if hi < 0 || hi > 1 || lo < 0 {
				return "", false
			}
			r := byte(hi<<4 | lo)
			if r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t' {
				return "", false // those have their short escapes
			}
			q.text = append(q.text, r)
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
}

// hasControl reports whether b holds a byte below 0x20, eight bytes at a
// time.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 borrows in x - 0x20…; one with its high bit set
		// cannot, which ^x masks out.
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// count counts a decoded string against the string budgets and returns
// it (its bytes are the line's or the decoder's, as documented on
// quickDecoder).
func (q *quickDecoder) count(b []byte) (string, bool) {
	q.strBytes += len(b)
	if len(b) > canon.MaxStringBytes || q.strBytes > canon.MaxRecordStringBytes {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

// lowerHex is the value of a lowercase hex digit, or -1.
func lowerHex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// integer decodes an integer literal in canonical form (no leading zero,
// no -0) within ±(2^53 − 1). Any other number is left to canon.
func (q *quickDecoder) integer() (canon.Value, bool) {
	start := q.pos
	i := start
	if q.line[i] == '-' {
		i++
	}
	digits := i
	for i < len(q.line) && q.line[i] >= '0' && q.line[i] <= '9' {
		i++
	}
	n := i - digits
	switch {
	case n == 0 || n > 16 || n > 1 && q.line[digits] == '0':
		return canon.Value{}, false
	case i < len(q.line) && (q.line[i] == '.' || q.line[i] == 'e' || q.line[i] == 'E'):
		return canon.Value{}, false
	}
	lit := q.line[start:i]
	v, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(lit), len(lit)), 10, 64)
	if err != nil || v > canon.MaxSafeInteger || v < -canon.MaxSafeInteger || v == 0 && digits > start {
		return canon.Value{}, false
	}
	q.pos = i
	return canon.Value{Kind: canon.Number, Str: unsafe.String(unsafe.SliceData(lit), len(lit))}, true
}
