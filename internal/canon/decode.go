package canon

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Rules are the stable identifiers of what Decode and the line checks
// enforce. Callers branch on Rule, never on message text.
const (
	RuleUTF8              = "json.utf8"
	RuleSyntax            = "json.syntax"
	RuleDuplicateMember   = "json.duplicate-member"
	RuleLoneSurrogate     = "json.lone-surrogate"
	RuleNotObject         = "json.not-object"
	RuleDepth             = "limit.depth"
	RuleItems             = "limit.items"
	RuleValues            = "limit.values"
	RuleStringBytes       = "limit.string-bytes"
	RuleRecordStringBytes = "limit.record-string-bytes"
	RuleLineBytes         = "limit.line-bytes"
	RuleNonFinite         = "number.non-finite"
	RuleIntegerRange      = "number.integer-range"
)

// Error is a JSON-level violation: the rule broken, where, and a short
// human detail (member names are quoted and truncated).
type Error struct {
	Rule   string
	Offset int // byte offset in the line, or -1
	Detail string
}

func (e *Error) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s at byte %d: %s", e.Rule, e.Offset, e.Detail)
	}
	return fmt.Sprintf("%s: %s", e.Rule, e.Detail)
}

// Quote renders s for an error message: Go-quoted, at most 40 bytes of it.
func Quote(s string) string {
	const max = 40
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

// LexicalDepth returns the deepest simultaneous nesting of '[' and '{'
// counted outside strings, without decoding (so it is safe on any bytes).
// It stops counting once the depth passes limit and returns that depth.
func LexicalDepth(line []byte, limit int) int {
	depth, max := 0, 0
	inString := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if inString {
			// Jump to the next quote (IndexByte is vectorized); it ends the
			// string unless an odd run of backslashes escapes it. Nothing
			// inside a string nests.
			k := bytes.IndexByte(line[i:], '"')
			if k < 0 {
				break
			}
			q := i + k
			n := 0
			for p := q - 1; p >= i && line[p] == '\\'; p-- {
				n++
			}
			i = q
			inString = n%2 == 1
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth > max {
				max = depth
				if max > limit {
					return max
				}
			}
		case ']', '}':
			depth--
		}
	}
	return max
}

// Decode decodes one record or message: a single JSON object. It rejects,
// never repairs: invalid UTF-8, malformed JSON, duplicate member names at any
// depth, lone surrogate escapes, NaN and Infinity, numbers that overflow a
// double, integer literals beyond ±MaxSafeInteger, a top level that is not an
// object, and any breach of the v1 value budgets (depth, items, values,
// string bytes, record string bytes). It stops at the first violation found.
//
// canonical reports whether line is byte-identical to the RFC 8785 form of
// the decoded value; it is computed in the same pass, and proven against
// github.com/gowebpki/jcs by this package's fuzz tests.
func Decode(line []byte) (v Value, canonical bool, err error) {
	// A one-off decode allocates each container exactly: slabs pay off only
	// when a Decoder is reused.
	dec := Decoder{exact: true}
	return dec.Decode(line)
}

// Decoder decodes one line after another, reusing its scratch space
// between calls; use one per goroutine. The zero Decoder is ready to use.
type Decoder struct {
	items   []Value
	members []Member

	// Slabs the decoded arrays and objects are carved from: far fewer
	// allocations than one per container. A carved slice is never written
	// again, so values from earlier lines stay intact; a slab lives as
	// long as any value carved from it.
	itemSlab   []Value
	memberSlab []Member
	strSlab    []byte // decoded escaped strings, append-only
	lineSlab   []byte // kept lines (Keep), and copies of the lines once Recycle was called

	exact     bool // no slabs: every container and escaped string allocated to size
	recycling bool // Recycle was called: lines are copied into lineSlab
}

// Recycle declares every value this Decoder has returned so far dead: the
// caller keeps none of them, nor any string or slice inside them. The
// next Decode writes its values over theirs, in the same slabs, and from
// then on the Decoder also copies each line into memory it reuses.
//
// A caller that decodes one message at a time and is done with it before
// the next (the supervisor's epoch loop) thus decodes in the same few
// kilobytes over and over: the memory stays in cache and nothing is left
// for the garbage collector. A value used after Recycle reads whatever
// later lines put there.
func (dec *Decoder) Recycle() {
	dec.itemSlab = dec.itemSlab[:0]
	dec.memberSlab = dec.memberSlab[:0]
	dec.strSlab = dec.strSlab[:0]
	dec.lineSlab = dec.lineSlab[:0]
	dec.recycling = true
}

// Keep returns a copy of line in memory the Decoder owns: unchanged until
// Recycle (for good if Recycle is never called). A reader that hands out
// each raw line beside its decoded message keeps it here, so recycling
// reuses that memory too.
func (dec *Decoder) Keep(line []byte) []byte {
	if len(line) > maxStrSlab {
		return bytes.Clone(line)
	}
	kept := take(&dec.lineSlab, len(line), maxStrSlab, maxStrSlab)
	copy(kept, line)
	return kept
}

// lineCopy returns line as a string that stays unchanged until Recycle:
// a plain copy, or once recycling, a kept one.
func (dec *Decoder) lineCopy(line []byte) string {
	if !dec.recycling || len(line) > maxStrSlab {
		return string(line)
	}
	kept := dec.Keep(line)
	return unsafe.String(unsafe.SliceData(kept), len(kept))
}

// stringBuf returns an empty buffer of capacity n for decoding an escaped
// string: the free tail of the string slab when it fits.
func (dec *Decoder) stringBuf(n int) []byte {
	if dec.exact || n > maxStrSlab/4 {
		return make([]byte, 0, n)
	}
	if cap(dec.strSlab)-len(dec.strSlab) < n {
		dec.strSlab = make([]byte, 0, min(max(2*cap(dec.strSlab), 256, n), maxStrSlab))
	}
	return dec.strSlab[len(dec.strSlab):len(dec.strSlab):cap(dec.strSlab)]
}

// keepString marks buf, returned by stringBuf and now holding a finished
// string, as used: the slab never writes those bytes again, which is what
// makes handing them out as a string safe.
func (dec *Decoder) keepString(buf []byte) {
	if len(buf) == 0 || cap(dec.strSlab) == 0 || unsafe.SliceData(buf) != unsafe.SliceData(dec.strSlab[len(dec.strSlab):cap(dec.strSlab)]) {
		return // not carved from the slab (a large string's own buffer)
	}
	dec.strSlab = dec.strSlab[:len(dec.strSlab)+len(buf)]
}

// Slab sizes, in elements: the first slab of a Decoder is small so that a
// one-off Decode of a short message stays cheap, later ones grow to the max.
const (
	minSlab    = 16
	maxSlab    = 2048
	maxStrSlab = 64 << 10 // bytes
)

// carveItems returns a copy of src carved from the item slab.
func (dec *Decoder) carveItems(src []Value) []Value {
	if dec.exact || len(src) > maxSlab/4 {
		return append([]Value(nil), src...)
	}
	items := take(&dec.itemSlab, len(src), minSlab, maxSlab)
	copy(items, src)
	return items
}

// carveMembers returns a copy of src carved from the member slab.
func (dec *Decoder) carveMembers(src []Member) []Member {
	if dec.exact || len(src) > maxSlab/4 {
		return append([]Member(nil), src...)
	}
	members := take(&dec.memberSlab, len(src), minSlab, maxSlab)
	copy(members, src)
	return members
}

// Decode is the package-level Decode, reusing dec's scratch space.
func (dec *Decoder) Decode(line []byte) (v Value, canonical bool, err error) {
	if !utf8.Valid(line) {
		off := 0
		for off < len(line) {
			r, size := utf8.DecodeRune(line[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return Value{}, false, &Error{Rule: RuleUTF8, Offset: off, Detail: "invalid UTF-8"}
	}
	// One copy of the line per call: unescaped strings and number literals
	// are substrings of it. (Sharing one copy of a whole transcript instead
	// measured slower: every pointer then targets the same huge object.)
	d := decoder{dec: dec, data: line, src: dec.lineCopy(line), canonical: true,
		itemStack: dec.items[:0], memberStack: dec.members[:0]}
	v, err = d.value(0)
	// Keep the grown stacks, cleared (as far as this line used them) so
	// they pin no decoded values.
	clear(d.itemStack[:d.itemHigh])
	clear(d.memberStack[:d.memberHigh])
	dec.items, dec.members = d.itemStack[:0], d.memberStack[:0]
	if err != nil {
		return Value{}, false, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return Value{}, false, d.errf(RuleSyntax, "unexpected data after the top-level value")
	}
	if v.Kind != Object {
		return Value{}, false, &Error{Rule: RuleNotObject, Offset: 0, Detail: "top level is a " + v.Kind.String() + ", not an object"}
	}
	return v, d.canonical, nil
}

type decoder struct {
	dec       *Decoder
	data      []byte
	src       string // one copy of data: unescaped strings and keys are substrings of it
	pos       int
	values    int
	strBytes  int
	canonical bool

	itemStack   []Value  // items of the arrays being decoded, innermost last
	memberStack []Member // members of the objects being decoded, innermost last
	itemHigh    int      // the most itemStack held during this line
	memberHigh  int      // the most memberStack held during this line
}

func (d *decoder) errf(rule, format string, args ...any) *Error {
	return &Error{Rule: rule, Offset: d.pos, Detail: fmt.Sprintf(format, args...)}
}

// skipSpace skips whitespace, which no canonical line holds.
func (d *decoder) skipSpace() {
	if i := SkipSpace(d.data, d.pos); i != d.pos {
		d.canonical = false
		d.pos = i
	}
}

func (d *decoder) value(depth int) (Value, error) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return Value{}, d.errf(RuleSyntax, "unexpected end of input")
	}
	d.values++
	if d.values > MaxValues {
		return Value{}, d.errf(RuleValues, "more than %d JSON values", MaxValues)
	}
	switch c := d.data[d.pos]; c {
	case '{':
		return d.object(depth + 1)
	case '[':
		return d.array(depth + 1)
	case '"':
		s, err := d.str()
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: String, Str: s}, nil
	case 't':
		return d.literal("true", Value{Kind: Bool, Bool: true})
	case 'f':
		return d.literal("false", Value{Kind: Bool})
	case 'n':
		return d.literal("null", Value{})
	case 'N':
		if d.hasPrefix("NaN") {
			return Value{}, d.errf(RuleNonFinite, "NaN is not a finite number")
		}
	case 'I':
		if d.hasPrefix("Infinity") {
			return Value{}, d.errf(RuleNonFinite, "Infinity is not a finite number")
		}
	case '-':
		if d.hasPrefix("-Infinity") {
			return Value{}, d.errf(RuleNonFinite, "-Infinity is not a finite number")
		}
		return d.number()
	default:
		if c >= '0' && c <= '9' {
			return d.number()
		}
	}
	return Value{}, d.errf(RuleSyntax, "invalid character %q looking for a value", d.data[d.pos])
}

func (d *decoder) hasPrefix(s string) bool {
	return len(d.data)-d.pos >= len(s) && string(d.data[d.pos:d.pos+len(s)]) == s
}

func (d *decoder) literal(word string, v Value) (Value, error) {
	if !d.hasPrefix(word) {
		return Value{}, d.errf(RuleSyntax, "invalid literal, expected %s", word)
	}
	d.pos += len(word)
	return v, nil
}

func (d *decoder) object(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, d.errf(RuleDepth, "nesting deeper than %d", MaxDepth)
	}
	d.pos++ // '{'
	// Members collect on a stack shared by every object being decoded and
	// are copied out once, sized exactly: one allocation per object instead
	// of one per doubling.
	base := len(d.memberStack)
	defer func() { d.memberStack = d.memberStack[:base] }()
	var index map[string]struct{} // built once an unordered object grows past a few members
	ordered := true               // every name so far is above the one before it
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return Value{Kind: Object, Members: []Member{}}, nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return Value{}, d.errf(RuleSyntax, "expected a member name")
		}
		keyOff := d.pos
		key, err := d.str()
		if err != nil {
			return Value{}, err
		}
		members := d.memberStack[base:]
		// While the names so far strictly ascend in RFC 8785 order (as in
		// every canonical line), a name above the last is new: no lookup.
		if n := len(members); ordered && n > 0 && !Less(members[n-1].Key, key) {
			ordered = false
			d.canonical = false
		}
		if !ordered && isDuplicate(&index, members, key) {
			return Value{}, &Error{Rule: RuleDuplicateMember, Offset: keyOff, Detail: "duplicate JSON member " + Quote(key)}
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return Value{}, d.errf(RuleSyntax, "expected ':' after member name")
		}
		d.pos++
		val, err := d.value(depth)
		if err != nil {
			return Value{}, err
		}
		if len(members) == MaxItems {
			return Value{}, d.errf(RuleItems, "object has more than %d members", MaxItems)
		}
		d.memberStack = append(d.memberStack, Member{Key: key, Value: val})
		d.memberHigh = max(d.memberHigh, len(d.memberStack))
		d.skipSpace()
		if d.pos >= len(d.data) {
			return Value{}, d.errf(RuleSyntax, "unexpected end of input in object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return Value{Kind: Object, Members: d.dec.carveMembers(d.memberStack[base:])}, nil
		default:
			return Value{}, d.errf(RuleSyntax, "expected ',' or '}' in object")
		}
	}
}

// isDuplicate reports whether key names one of members, in a set built
// once the object has a few members (an object may have 16,384: no
// quadratic scan), and adds key to the set.
func isDuplicate(index *map[string]struct{}, members []Member, key string) bool {
	if *index == nil && len(members) >= 8 {
		*index = make(map[string]struct{}, 2*len(members))
		for i := range members {
			(*index)[members[i].Key] = struct{}{}
		}
	}
	if *index != nil {
		_, dup := (*index)[key]
		(*index)[key] = struct{}{}
		return dup
	}
	for i := range members {
		if members[i].Key == key {
			return true
		}
	}
	return false
}

func (d *decoder) array(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, d.errf(RuleDepth, "nesting deeper than %d", MaxDepth)
	}
	d.pos++ // '['
	base := len(d.itemStack)
	defer func() { d.itemStack = d.itemStack[:base] }()
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return Value{Kind: Array, Items: []Value{}}, nil
	}
	for {
		val, err := d.value(depth)
		if err != nil {
			return Value{}, err
		}
		if len(d.itemStack)-base == MaxItems {
			return Value{}, d.errf(RuleItems, "array has more than %d items", MaxItems)
		}
		d.itemStack = append(d.itemStack, val)
		d.itemHigh = max(d.itemHigh, len(d.itemStack))
		d.skipSpace()
		if d.pos >= len(d.data) {
			return Value{}, d.errf(RuleSyntax, "unexpected end of input in array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return Value{Kind: Array, Items: d.dec.carveItems(d.itemStack[base:])}, nil
		default:
			return Value{}, d.errf(RuleSyntax, "expected ',' or ']' in array")
		}
	}
}

// str decodes the string starting at the opening quote at d.pos.
func (d *decoder) str() (string, error) {
	start := d.pos + 1
	// Fast path: find the closing quote with the vectorized IndexByte; if
	// no backslash comes before it and no control character, the string is
	// that span as it stands.
	if q := bytes.IndexByte(d.data[start:], '"'); q >= 0 {
		seg := d.data[start : start+q]
		end := len(seg)
		if b := bytes.IndexByte(seg, '\\'); b >= 0 {
			end = b
		}
		for k, c := range seg[:end] {
			if c < 0x20 {
				d.pos = start + k
				return "", d.fault(FaultControl, d.pos)
			}
		}
		if end < len(seg) {
			return d.strSlow(start, start+end)
		}
		s := d.src[start : start+q]
		d.pos = start + q + 1
		return s, d.countString(len(s))
	}
	i := start
	for i < len(d.data) {
		c := d.data[i]
		if IsPlain(c) {
			i++
			continue
		}
		if c == '"' {
			s := d.src[start:i]
			d.pos = i + 1
			return s, d.countString(len(s))
		}
		if c == '\\' {
			return d.strSlow(start, i)
		}
		if c < 0x20 {
			d.pos = i
			return "", d.fault(FaultControl, i)
		}
		i++
	}
	d.pos = i
	return "", d.fault(FaultUnterminated, i)
}

func (d *decoder) countString(n int) error {
	if n > MaxStringBytes {
		return d.errf(RuleStringBytes, "string of %d bytes exceeds %d", n, MaxStringBytes)
	}
	d.strBytes += n
	if d.strBytes > MaxRecordStringBytes {
		return d.errf(RuleRecordStringBytes, "strings total more than %d bytes", MaxRecordStringBytes)
	}
	return nil
}

// strSlow decodes a string that has escapes; i is the first backslash.
func (d *decoder) strSlow(start, i int) (string, error) {
	// The decoded string is never longer than its raw text: size the buffer
	// once from the closing quote, so escape-led strings do not regrow.
	end := i
	for end < len(d.data) && d.data[end] != '"' {
		if d.data[end] == '\\' {
			end++
		}
		end++
	}
	buf := d.dec.stringBuf(min(end, len(d.data)) - start)
	buf = append(buf, d.data[start:i]...)
	buf, end, canonical, f := Unescape(buf, d.data, i)
	d.pos = end
	if f != NoFault {
		return "", d.fault(f, d.pos)
	}
	d.canonical = d.canonical && canonical
	// buf is never written again: no second copy.
	d.dec.keepString(buf)
	return unsafe.String(unsafe.SliceData(buf), len(buf)), d.countString(len(buf))
}

// number decodes the number at d.pos.
func (d *decoder) number() (Value, error) {
	start := d.pos
	end, canonical, f := ScanNumber(d.data, start, d.canonical /* spelling */)
	d.pos = end
	if f != NoFault {
		return Value{}, d.fault(f, start)
	}
	d.canonical = canonical
	return Value{Kind: Number, Str: d.src[start:end]}, nil
}

// fault is Decode's error for the lexer's fault f in the token at
// data[at:]: a string's fault is at at, and for a number's, at is where
// its literal starts and d.pos where the lexer stopped.
func (d *decoder) fault(f Fault, at int) *Error {
	e := &Error{Rule: RuleSyntax, Offset: at}
	switch f {
	case FaultControl:
		e.Detail = fmt.Sprintf("control character 0x%02x in string", d.data[at])
	case FaultUnterminated:
		e.Detail = "unterminated string"
	case FaultEscapeEnd:
		e.Detail = "unterminated escape"
	case FaultEscape:
		e.Detail = fmt.Sprintf("invalid escape \\%c", d.data[at+1])
	case FaultHex:
		e.Detail = "invalid \\u escape"
	case FaultLoneSurrogate:
		r, _ := hex4(d.data, at+2)
		e.Rule, e.Detail = RuleLoneSurrogate, fmt.Sprintf("lone surrogate escape \\u%04x", r)
	case FaultNumber:
		e.Offset, e.Detail = d.pos, "invalid number"
	case FaultFraction:
		e.Offset, e.Detail = d.pos, "invalid number: no digits after '.'"
	case FaultExponent:
		e.Offset, e.Detail = d.pos, "invalid number: no digits in exponent"
	case FaultIntegerRange:
		e.Rule, e.Detail = RuleIntegerRange, fmt.Sprintf("integer %s is beyond ±(2^53-1)", truncate(d.src[at:d.pos]))
	case FaultNonFinite:
		e.Rule, e.Detail = RuleNonFinite, fmt.Sprintf("number %s is not finite as a double", truncate(d.src[at:d.pos]))
	}
	return e
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Less reports whether a sorts before b by UTF-16 code units, the member
// order RFC 8785 prescribes (U+1F600 sorts before U+E000).
func Less(a, b string) bool {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) < len(b)
	}
	if a[i] < 0x80 && b[i] < 0x80 {
		return a[i] < b[i]
	}
	// Back up to the start of the rune that differs and compare UTF-16 units.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	a1, a2 := utf16Units(ra)
	b1, b2 := utf16Units(rb)
	if a1 != b1 {
		return a1 < b1
	}
	return a2 < b2
}

// utf16Units returns the UTF-16 code units of r (the second is 0 for BMP).
func utf16Units(r rune) (rune, rune) {
	if r >= 0x10000 {
		return utf16.EncodeRune(r)
	}
	return r, 0
}
