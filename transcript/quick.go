package transcript

import (
	"bytes"
	"strings"
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
// it to that). Its tokens are canon's lexer's: whitespace is none, an
// escape or a number is taken only when canon.Unescape or
// canon.ScanNumber says it is spelled as RFC 8785 writes it.
//
// The tree it returns refers to the line's bytes and to the decoder's
// memory: it is valid until the next decode and while the line is not
// modified.
//
// With elide set it builds no tree for the opaque parts of a record: the
// values that no check after step 6 looks into (see elided). It checks
// them as it scans, exactly as it checks what it builds, and puts in
// their place a value of their kind with nothing in it. A line's tree
// then costs memory for its envelope and typed members only, however
// many values its state or event data hold.
//
// Eliding, it does not build an observation's typed arrays either (its
// events, its ui's regions, its frame's lines): it checks each element
// as soon as it is decoded, exactly as checkObservation checks the
// elements of a tree (checkEvent, regionIDs.checkRegion,
// checkFrameLine), drops it, and keeps the outcome in typed; the tree
// holds an empty array in their place. A line packed with typed values
// then costs the tree of one element at a time, and the set of region
// ids.
type quickDecoder struct {
	elide bool

	line     []byte
	pos      int
	values   int
	strBytes int
	kind     string // the record's kind, once read (elide only)
	typed    typedArrays

	items   []canon.Value  // containers' elements while being decoded, innermost last
	members []canon.Member // ditto for objects
	slab    []canon.Value  // this line's arrays, carved (see carve)
	mslab   []canon.Member // this line's objects, carved
	text    []byte         // this line's escaped strings, decoded (see decode)
}

// decode returns line's tree and true exactly when canon.Decode would
// return that tree with canonical set and no error; false when it cannot
// tell, and then the caller must ask canon.
func (q *quickDecoder) decode(line []byte) (canon.Value, bool) {
	if len(line) == 0 || line[0] != '{' || !utf8.Valid(line) {
		return canon.Value{}, false
	}
	q.line, q.pos, q.values, q.strBytes, q.kind = line, 0, 0, 0, ""
	q.typed = typedArrays{}
	q.items, q.members = q.items[:0], q.members[:0]
	q.slab, q.mslab = q.slab[:0], q.mslab[:0]
	// The line's decoded escaped strings go to text, which grows as needed:
	// when append moves it, the strings already decoded keep the old array,
	// which nothing writes again. (Sizing it to the line, as this did, cost
	// a line's length per goroutine for lines whose strings are elided.)
	q.text = q.text[:0]
	top := inNone
	if q.elide {
		top = inRecord
	}
	v, ok := q.value(1, top)
	if !ok || q.pos != len(line) {
		return canon.Value{}, false
	}
	return v, true
}

// place is where in a record a container is, as far as elision cares:
// the places that hold opaque members, and the way to them.
type place uint8

const (
	inNone    place = iota // nothing opaque inside
	inRecord               // the record: x- members, and the payload
	inPayload              // the payload of q.kind
	inEvents               // an observation's events (checked as scanned)
	inEvent                // one event: data
	inError                // run.failed's error: details
	inUI                   // an observation's ui
	inRegions              // its regions (checked as scanned)
	inFrame                // an observation's frame
	inLines                // its lines (checked as scanned)
)

// typedArrays is what the quick path, eliding, found in the typed arrays
// of an observation that it checked as it scanned them.
type typedArrays struct {
	events, regions, lines checkedArray
}

// checkedArray is the outcome of checking an array's elements as they
// were scanned.
type checkedArray struct {
	scanned bool      // the array was checked so; the tree holds an empty array in its place
	n       int       // its elements
	err     error     // the first element's violation, as checkObservation reports it
	ids     regionIDs // regions: the ids of those before the first violation
}

// array returns the outcome for the array at p (inEvents, inRegions or
// inLines), or nil when t is nil or that array is in the tree.
func (t *typedArrays) array(p place) *checkedArray {
	if t == nil {
		return nil
	}
	a := t.slot(p)
	if a == nil || !a.scanned {
		return nil
	}
	return a
}

// slot is where the outcome for the array at p goes.
func (t *typedArrays) slot(p place) *checkedArray {
	switch p {
	case inEvents:
		return &t.events
	case inRegions:
		return &t.regions
	case inLines:
		return &t.lines
	}
	return nil
}

// elided reports whether the member key of a container at p is opaque,
// and otherwise the place of its value. Opaque are the values the checks
// after step 6 look at only to see that they are there: observation
// state and event data, diagnostic, run.failed error and run.unsupported
// details (TRANSCRIPT-RULES.md: any JSON value), and the x- members of
// the record and of the payload. Records whose whole tree is used later
// are never elided: run.started (its config is kept), capability.result
// (the compat rule re-encodes it) and kinds v1 does not define.
func (q *quickDecoder) elided(p place, key string) (place, bool) {
	switch p {
	case inRecord:
		if key == "payload" {
			return inPayload, false
		}
		return inNone, strings.HasPrefix(key, "x-") && elidable(q.kind)
	case inPayload:
		if !elidable(q.kind) {
			return inNone, false
		}
		if strings.HasPrefix(key, "x-") {
			return inNone, true
		}
		switch {
		case q.kind == KindObservation && key == "state":
			return inNone, true
		case q.kind == KindObservation && key == "events":
			return inEvents, false
		case q.kind == KindObservation && key == "ui":
			return inUI, false
		case q.kind == KindObservation && key == "frame":
			return inFrame, false
		case (q.kind == KindDiagnostic || q.kind == KindRunUnsupported) && key == "details":
			return inNone, true
		case q.kind == KindRunFailed && key == "error":
			return inError, false
		}
	case inEvent:
		return inNone, key == "data"
	case inError:
		return inNone, key == "details"
	case inUI:
		if key == "regions" {
			return inRegions, false
		}
	case inFrame:
		if key == "lines" {
			return inLines, false
		}
	}
	return inNone, false
}

// elidable reports whether the records of kind may have opaque parts
// left out of their tree.
func elidable(kind string) bool {
	switch kind {
	case KindObservation, KindDiagnostic, KindRunFailed, KindRunFinished, KindRunUnsupported,
		KindInputText, KindInputKey, KindInputClock, KindInputResize, KindInputMouse, KindInputClipboard, KindInputStop:
		return true
	}
	return false
}

// value decodes the value at q.pos, at the given nesting depth of its
// containers (the top-level object is at depth 1), at place p.
func (q *quickDecoder) value(depth int, p place) (canon.Value, bool) {
	if q.pos >= len(q.line) {
		return canon.Value{}, false
	}
	if q.values++; q.values > canon.MaxValues {
		return canon.Value{}, false
	}
	switch c := q.line[q.pos]; {
	case c == '{':
		return q.object(depth, p)
	case c == '[':
		return q.array(depth, p)
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
		// A number is taken only as RFC 8785 spells it, and canonical is
		// never set with a fault; the lexer is called here, not from a
		// method of its own, so that a number costs no call more.
		start := q.pos
		end, canonical, _ := canon.ScanNumber(q.line, start, true /* spelling */)
		q.pos = end
		return canon.Value{Kind: canon.Number, Str: unsafe.String(&q.line[start], end-start)}, canonical
	}
	return canon.Value{}, false
}

// skip is value for an opaque value: it checks what value checks, and
// counts what value counts, building nothing, and returns the value's
// kind.
func (q *quickDecoder) skip(depth int) (canon.Kind, bool) {
	if q.pos >= len(q.line) {
		return 0, false
	}
	if q.values++; q.values > canon.MaxValues {
		return 0, false
	}
	switch c := q.line[q.pos]; {
	case c == '{':
		return canon.Object, q.skipObject(depth)
	case c == '[':
		return canon.Array, q.skipArray(depth)
	case c == '"':
		mark := len(q.text) // an escaped string's decoded bytes are dead once counted
		_, ok := q.str()
		q.text = q.text[:mark]
		return canon.String, ok
	case c == 't':
		return canon.Bool, q.word("true")
	case c == 'f':
		return canon.Bool, q.word("false")
	case c == 'n':
		return canon.Null, q.word("null")
	case c == '-' || c >= '0' && c <= '9':
		var canonical bool
		q.pos, canonical, _ = canon.ScanNumber(q.line, q.pos, true /* spelling */)
		return canon.Number, canonical
	}
	return 0, false
}

// skipObject is object for an opaque object.
func (q *quickDecoder) skipObject(depth int) bool {
	if depth > canon.MaxDepth {
		return false
	}
	q.pos++ // '{'
	if q.pos < len(q.line) && q.line[q.pos] == '}' {
		q.pos++
		return true
	}
	// The names' decoded bytes (escaped names only) are needed until the
	// next name is compared, and are dead once the object ends.
	mark := len(q.text)
	var prev string
	for n := 0; ; n++ {
		if q.pos >= len(q.line) || q.line[q.pos] != '"' {
			return false
		}
		key, ok := q.str()
		if !ok || q.pos >= len(q.line) || q.line[q.pos] != ':' {
			return false
		}
		if n > 0 && !canon.Less(prev, key) || n == canon.MaxItems {
			return false
		}
		prev = key
		q.pos++
		if _, ok := q.skip(depth + 1); !ok || q.pos >= len(q.line) {
			return false
		}
		switch q.line[q.pos] {
		case ',':
			q.pos++
		case '}':
			q.pos++
			q.text = q.text[:mark]
			return true
		default:
			return false
		}
	}
}

// skipArray is array for an opaque array.
func (q *quickDecoder) skipArray(depth int) bool {
	if depth > canon.MaxDepth {
		return false
	}
	q.pos++ // '['
	if q.pos < len(q.line) && q.line[q.pos] == ']' {
		q.pos++
		return true
	}
	for n := 0; ; n++ {
		if n == canon.MaxItems {
			return false
		}
		if _, ok := q.skip(depth + 1); !ok || q.pos >= len(q.line) {
			return false
		}
		switch q.line[q.pos] {
		case ',':
			q.pos++
		case ']':
			q.pos++
			return true
		default:
			return false
		}
	}
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
func (q *quickDecoder) object(depth int, p place) (canon.Value, bool) {
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
		var v canon.Value
		if in, opaque := q.elided(p, key); opaque {
			v.Kind, ok = q.skip(depth + 1)
		} else {
			v, ok = q.value(depth+1, in)
		}
		if !ok || q.pos >= len(q.line) {
			return canon.Value{}, false
		}
		if p == inRecord && key == "kind" && v.Kind == canon.String {
			q.kind = v.Str // before the payload: names ascend
		}
		q.members = append(q.members, canon.Member{Key: key, Value: v})
		switch q.line[q.pos] {
		case ',':
			q.pos++
		case '}':
			q.pos++
			m := carve(&q.mslab, q.members[base:])
			q.members = q.members[:base]
			return canon.Value{Kind: canon.Object, Members: m}, true
		default:
			return canon.Value{}, false
		}
	}
}

func (q *quickDecoder) array(depth int, p place) (canon.Value, bool) {
	if depth > canon.MaxDepth {
		return canon.Value{}, false
	}
	if p == inEvents || p == inRegions || p == inLines {
		return q.checkArray(depth, p)
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
		// The typed arrays (an observation's events among them) went to
		// checkArray: the items here have no place of their own.
		v, ok := q.value(depth+1, inNone)
		if !ok || q.pos >= len(q.line) {
			return canon.Value{}, false
		}
		q.items = append(q.items, v)
		switch q.line[q.pos] {
		case ',':
			q.pos++
		case ']':
			q.pos++
			items := carve(&q.slab, q.items[base:])
			q.items = q.items[:base]
			return canon.Value{Kind: canon.Array, Items: items}, true
		default:
			return canon.Value{}, false
		}
	}
}

// checkArray is array for an observation's typed array at p (inEvents,
// inRegions, inLines): it decodes each element as array would, checks
// it at once as checkObservation would check it in the tree, and drops
// it; the outcome goes to q.typed, and the tree gets an empty array.
// After the first violation the elements are only scanned (skip):
// checkObservation reports no later one.
func (q *quickDecoder) checkArray(depth int, p place) (canon.Value, bool) {
	a := q.typed.slot(p)
	*a = checkedArray{scanned: true}
	q.pos++ // '['
	if q.pos < len(q.line) && q.line[q.pos] == ']' {
		q.pos++
		return canon.Value{Kind: canon.Array}, true
	}
	for n := 0; ; n++ {
		if n == canon.MaxItems {
			return canon.Value{}, false
		}
		var ok bool
		switch {
		case a.err != nil:
			_, ok = q.skip(depth + 1)
		case p == inLines:
			// A line is checked for its kind alone: skip's is value's.
			var kind canon.Kind
			kind, ok = q.skip(depth + 1)
			a.err = checkFrameLine(&canon.Value{Kind: kind})
		default:
			ok = q.checkElement(depth+1, p, n, a)
		}
		if !ok || q.pos >= len(q.line) {
			return canon.Value{}, false
		}
		switch q.line[q.pos] {
		case ',':
			q.pos++
		case ']':
			q.pos++
			a.n = n + 1
			return canon.Value{Kind: canon.Array}, true
		default:
			return canon.Value{}, false
		}
	}
}

// checkElement decodes element n of the events or regions and checks it
// into a, then gives back the memory its tree took.
func (q *quickDecoder) checkElement(depth int, p place, n int, a *checkedArray) bool {
	slab, mslab, text := q.slab, q.mslab, len(q.text)
	in := inNone
	if p == inEvents {
		in = inEvent
	}
	e, ok := q.value(depth, in)
	if !ok {
		return false
	}
	if p == inEvents {
		a.err = checkEvent(n, &e)
		q.text = q.text[:text] // nothing of the event lives on
	} else {
		// The region's id may be in text: a.ids keeps it.
		a.err = a.ids.checkRegion(n, &e)
	}
	q.slab, q.mslab = rewind(slab, q.slab), rewind(mslab, q.mslab)
	return true
}

// rewind returns the slab to carve from after an element whose tree is
// dead: was is the slab before the element, now after. If the element
// was carved from was, what follows was's end is free again; if it took
// a new slab, all of that slab is.
func rewind[T any](was, now []T) []T {
	if unsafe.SliceData(was) == unsafe.SliceData(now) {
		return now[:len(was)]
	}
	return now[:0]
}

// slabMax is the most elements a slab of the quick path holds.
const slabMax = 4096

// carve returns a copy of src carved from *slab. A slab without room is
// replaced by a new one, twice as large up to slabMax elements, and the
// old one lives on in what was carved from it; a container of more than
// a quarter of that gets memory of its own. So a line's tree costs its
// size and never a copy of what was carved before (a slab grown by
// append moved every earlier element: ~5x a large tree, in copies and
// garbage).
func carve[T any](slab *[]T, src []T) []T {
	n := len(src)
	if n > slabMax/4 {
		return append([]T(nil), src...)
	}
	s := *slab
	if cap(s)-len(s) < n {
		s = make([]T, 0, min(max(2*cap(s), 64), slabMax))
	}
	start := len(s)
	s = append(s, src...)
	*slab = s
	return s[start : start+n : start+n]
}

// str decodes the string at q.pos, whose escapes must be the ones RFC 8785
// writes: \" \\ \b \f \n \r \t, and \u00xx (lowercase) for the other
// control characters. A string with none is its own text; the others are
// canon.Unescape's, called only for them.
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
	if canon.HasControl(seg[:plainEnd]) {
		return "", false
	}
	if plainEnd == len(seg) {
		q.pos = start + k + 1
		return q.count(seg)
	}
	out := len(q.text)
	q.text = append(q.text, seg[:plainEnd]...)
	text, end, canonical, f := canon.Unescape(q.text, q.line, start+plainEnd)
	if f != canon.NoFault || !canonical {
		return "", false
	}
	q.text, q.pos = text, end
	return q.count(q.text[out:])
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
