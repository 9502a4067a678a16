package canon

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

const hexDigits = "0123456789abcdef"

// Append appends the RFC 8785 canonical form of v to dst. It fails on what
// has no canonical form: integers beyond ±MaxSafeInteger, non-finite or
// malformed numbers, and strings that are not valid UTF-8. It does not check
// the v1 budgets; callers that write records check those (see Measure).
func Append(dst []byte, v *Value) ([]byte, error) {
	switch v.Kind {
	case Null:
		return append(dst, "null"...), nil
	case Bool:
		if v.Bool {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case Number:
		s, err := CanonicalNumber(v.Str)
		if err != nil {
			return dst, err
		}
		return append(dst, s...), nil
	case String:
		return AppendString(dst, v.Str)
	case Array:
		dst = append(dst, '[')
		for i := range v.Items {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = Append(dst, &v.Items[i]); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case Object:
		if !ascending(v.Members) {
			return appendUnsorted(dst, v)
		}
		dst = append(dst, '{')
		for i := range v.Members {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendMember(dst, &v.Members[i]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, fmt.Errorf("canon: unknown value kind %d", v.Kind)
}

// ascending reports whether the names of members strictly ascend in
// RFC 8785 order: then they are written as they stand (values decoded
// from canonical lines, and payloads built in that order, are).
func ascending(members []Member) bool {
	for i := 1; i < len(members); i++ {
		if !Less(members[i-1].Key, members[i].Key) {
			return false
		}
	}
	return true
}

// appendUnsorted appends an object whose members are not in order: sorted
// through an index, refusing a duplicate name.
func appendUnsorted(dst []byte, v *Value) ([]byte, error) {
	var small [16]int
	order := small[:0]
	if len(v.Members) > len(small) {
		order = make([]int, 0, len(v.Members))
	}
	for i := range v.Members {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		ka, kb := v.Members[a].Key, v.Members[b].Key
		switch {
		case ka == kb:
			return 0
		case Less(ka, kb):
			return -1
		}
		return 1
	})
	dst = append(dst, '{')
	for n, i := range order {
		if n > 0 {
			if v.Members[order[n-1]].Key == v.Members[i].Key {
				return dst, &Error{Rule: RuleDuplicateMember, Offset: -1, Detail: "duplicate JSON member " + Quote(v.Members[i].Key)}
			}
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendMember(dst, &v.Members[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func appendMember(dst []byte, m *Member) ([]byte, error) {
	dst, err := AppendString(dst, m.Key)
	if err != nil {
		return dst, err
	}
	return Append(append(dst, ':'), &m.Value)
}

// AppendString appends s as a canonical JSON string: raw UTF-8, with only
// '"', '\\' and control characters escaped (\b \f \n \r \t, else \u00xx).
func AppendString(dst []byte, s string) ([]byte, error) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	if !validUTF8(s) {
		return dst, &Error{Rule: RuleUTF8, Offset: -1, Detail: "string is not valid UTF-8"}
	}
	return append(dst, '"'), nil
}

// CanonicalNumber returns the RFC 8785 (ECMAScript) spelling of a JSON
// number literal, or an error when it has none.
func CanonicalNumber(lit string) (string, error) {
	if isIntegerLiteral(lit) {
		if canonicalSafeInteger(lit) {
			return lit, nil
		}
		v := Value{Kind: Number, Str: lit}
		n, safe := v.Int()
		if !safe {
			return "", &Error{Rule: RuleIntegerRange, Offset: -1, Detail: "integer " + truncate(lit) + " is beyond ±(2^53-1)"}
		}
		return strconv.FormatInt(n, 10), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(f, 0) && f != 0 {
		return "", &Error{Rule: RuleSyntax, Offset: -1, Detail: "invalid number " + truncate(lit)}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", &Error{Rule: RuleNonFinite, Offset: -1, Detail: "number " + truncate(lit) + " is not finite"}
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return "", &Error{Rule: RuleNonFinite, Offset: -1, Detail: "number " + truncate(lit) + " has no canonical form"}
	}
	if err := checkSpelledInteger(s); err != nil {
		return "", &Error{Rule: RuleIntegerRange, Offset: -1, Detail: "number " + truncate(lit) + " is " + err.Error()}
	}
	return s, nil
}

// checkSpelledInteger refuses the canonical spelling s of a float when it
// reads as an integer literal beyond ±MaxSafeInteger: ECMAScript spells
// 1e20 as 100000000000000000000, which v1 (and Decode) would then reject
// as an integer out of range, so such a number has no v1 canonical form.
func checkSpelledInteger(s string) error {
	spelled := Value{Kind: Number, Str: s}
	if _, safe := spelled.Int(); safe || !isIntegerLiteral(s) {
		return nil
	}
	return fmt.Errorf("%s in canonical form, an integer beyond ±(2^53-1)", truncate(s))
}

// canonicalSafeInteger reports whether an integer literal is already in
// canonical form and safely in range: no leading zero, not -0, at most 15
// digits (every 15-digit integer is below 2^53).
func canonicalSafeInteger(lit string) bool {
	digits := strings.TrimPrefix(lit, "-")
	if digits == "" || len(digits) > 15 || (digits[0] == '0' && lit != "0") {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// FloatValue returns a JSON number for a finite float in canonical spelling.
func FloatValue(f float64) (Value, error) {
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return Value{}, &Error{Rule: RuleNonFinite, Offset: -1, Detail: "number is not finite"}
	}
	if err := checkSpelledInteger(s); err != nil {
		return Value{}, &Error{Rule: RuleIntegerRange, Offset: -1, Detail: "number " + err.Error()}
	}
	return Value{Kind: Number, Str: s}, nil
}

// Marshal returns the canonical bytes of v (no trailing LF).
func Marshal(v *Value) ([]byte, error) { return Append(nil, v) }

// Budget is what one record or message spends of the v1 value budgets.
type Budget struct {
	Depth       int // deepest nesting of objects and arrays
	Values      int // value nodes, keys not counted
	MaxItems    int // largest collection
	MaxString   int // longest string or key, in UTF-8 bytes
	StringBytes int // every string and key, in UTF-8 bytes
}

// Measure walks v and returns what it spends of the budgets; Check then
// names the first budget it breaks, in the order the protocols list them.
func Measure(v *Value) Budget {
	var b Budget
	measure(v, 1, &b)
	return b
}

func measure(v *Value, depth int, b *Budget) {
	b.Values++
	switch v.Kind {
	case String:
		b.str(len(v.Str))
	case Array:
		b.Depth = max(b.Depth, depth)
		b.MaxItems = max(b.MaxItems, len(v.Items))
		for i := range v.Items {
			measure(&v.Items[i], depth+1, b)
		}
	case Object:
		b.Depth = max(b.Depth, depth)
		b.MaxItems = max(b.MaxItems, len(v.Members))
		for i := range v.Members {
			b.str(len(v.Members[i].Key))
			measure(&v.Members[i].Value, depth+1, b)
		}
	}
}

func (b *Budget) str(n int) {
	b.MaxString = max(b.MaxString, n)
	b.StringBytes += n
}

// Check returns an *Error for the first v1 budget b breaks, or nil.
func (b Budget) Check() error {
	switch {
	case b.Values > MaxValues:
		return &Error{Rule: RuleValues, Offset: -1, Detail: fmt.Sprintf("%d JSON values exceed %d", b.Values, MaxValues)}
	case b.MaxItems > MaxItems:
		return &Error{Rule: RuleItems, Offset: -1, Detail: fmt.Sprintf("a collection of %d items exceeds %d", b.MaxItems, MaxItems)}
	case b.MaxString > MaxStringBytes:
		return &Error{Rule: RuleStringBytes, Offset: -1, Detail: fmt.Sprintf("a string of %d bytes exceeds %d", b.MaxString, MaxStringBytes)}
	case b.StringBytes > MaxRecordStringBytes:
		return &Error{Rule: RuleRecordStringBytes, Offset: -1, Detail: fmt.Sprintf("strings total %d bytes, more than %d", b.StringBytes, MaxRecordStringBytes)}
	case b.Depth > MaxDepth:
		return &Error{Rule: RuleDepth, Offset: -1, Detail: fmt.Sprintf("nesting %d exceeds %d", b.Depth, MaxDepth)}
	}
	return nil
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
