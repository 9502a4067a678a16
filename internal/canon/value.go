package canon

import (
	"strconv"
	"strings"
)

// The fixed termverify v1 budgets, shared by the control and transcript
// protocols (seed 000 "Fixed v1 resource limits", seed 001 table).
const (
	MaxTranscriptBytes   = 32 << 20  // whole transcript, every LF included
	MaxRecords           = 10_000    // lines in one transcript
	MaxLineBytes         = 4 << 20   // one record or message, LF excluded
	MaxDepth             = 64        // simultaneously open objects and arrays
	MaxItems             = 16_384    // members of one object or items of one array
	MaxValues            = 100_000   // value nodes in one record; keys not counted
	MaxStringBytes       = 1 << 20   // UTF-8 bytes of one string value or key
	MaxRecordStringBytes = 2 << 20   // UTF-8 bytes of every string and key in one record
	MaxSafeInteger       = 1<<53 - 1 // largest integer every JSON reader keeps exactly
)

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON kinds. The zero Kind is Null, so a zero Value is JSON null.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one decoded JSON value. Numbers keep their literal text so that
// callers can tell 1 from 1.0 and check integer ranges exactly; objects keep
// their members in input order (duplicates are impossible: Decode rejects
// them).
type Value struct {
	Kind    Kind
	Bool    bool     // Bool
	Str     string   // String: the decoded text; Number: the literal text
	Items   []Value  // Array
	Members []Member // Object, in input order
}

// Member is one object member.
type Member struct {
	Key   string
	Value Value
}

// Constructors for building values to encode.

// NullValue returns JSON null.
func NullValue() Value { return Value{} }

// BoolValue returns a JSON boolean.
func BoolValue(b bool) Value { return Value{Kind: Bool, Bool: b} }

// StringValue returns a JSON string.
func StringValue(s string) Value { return Value{Kind: String, Str: s} }

// IntValue returns a JSON integer. Encoding fails if |n| > MaxSafeInteger.
func IntValue(n int64) Value { return Value{Kind: Number, Str: strconv.FormatInt(n, 10)} }

// ArrayValue returns a JSON array of items.
func ArrayValue(items ...Value) Value {
	if items == nil {
		items = []Value{}
	}
	return Value{Kind: Array, Items: items}
}

// ObjectValue returns a JSON object of members (in any order; encoding sorts).
func ObjectValue(members ...Member) Value {
	if members == nil {
		members = []Member{}
	}
	return Value{Kind: Object, Members: members}
}

// M is shorthand for a Member.
func M(key string, v Value) Member { return Member{Key: key, Value: v} }

// Get returns the member named key of an object value.
func (v *Value) Get(key string) (*Value, bool) {
	if v.Kind != Object {
		return nil, false
	}
	for i := range v.Members {
		if v.Members[i].Key == key {
			return &v.Members[i].Value, true
		}
	}
	return nil, false
}

// Int returns the value as an integer when it is a JSON number written as
// an integer literal (no fraction, no exponent) within ±MaxSafeInteger.
// 1.0 and 1e2 are not integers here: upstream's parser reads them as floats.
func (v *Value) Int() (int64, bool) {
	if v.Kind != Number || !isIntegerLiteral(v.Str) {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Str, 10, 64)
	if err != nil || n > MaxSafeInteger || n < -MaxSafeInteger {
		return 0, false
	}
	return n, true
}

// IsInteger reports whether the value is a number written as an integer
// literal, whatever its size.
func (v *Value) IsInteger() bool { return v.Kind == Number && isIntegerLiteral(v.Str) }

func isIntegerLiteral(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// Equal reports whether a and b are the same JSON value with strict types:
// numbers compare by numeric value within their kind of literal (1 and 1.0
// differ, as upstream's int and float differ), objects compare as member sets.
func Equal(a, b *Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Null:
		return true
	case Bool:
		return a.Bool == b.Bool
	case String:
		return a.Str == b.Str
	case Number:
		if a.Str == b.Str {
			return true
		}
		ai, bi := isIntegerLiteral(a.Str), isIntegerLiteral(b.Str)
		if ai != bi {
			return false
		}
		if ai {
			x, err1 := strconv.ParseInt(a.Str, 10, 64)
			y, err2 := strconv.ParseInt(b.Str, 10, 64)
			return err1 == nil && err2 == nil && x == y
		}
		x, err1 := strconv.ParseFloat(a.Str, 64)
		y, err2 := strconv.ParseFloat(b.Str, 64)
		return err1 == nil && err2 == nil && x == y
	case Array:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !Equal(&a.Items[i], &b.Items[i]) {
				return false
			}
		}
		return true
	case Object:
		if len(a.Members) != len(b.Members) {
			return false
		}
		for i := range a.Members {
			w, ok := b.Get(a.Members[i].Key)
			if !ok || !Equal(&a.Members[i].Value, w) {
				return false
			}
		}
		return true
	}
	return false
}

// CheckClosed checks the member set of the object v against a closed
// schema: every required member present, nothing outside required,
// optional and the x- extension members every termverify object admits.
// It returns the first missing required member (in required's order) and
// the first unknown member (in v's order); both are empty when the set is
// complete and closed, and the caller decides which to report first (the
// two protocols differ). Member names are unique (Decode rejects
// duplicates), so one pass counts the required ones.
func (v *Value) CheckClosed(required, optional []string) (missing, unknown string) {
	found := 0
	unknownAt := -1
	for i := range v.Members {
		k := v.Members[i].Key
		switch {
		case inList(required, k):
			found++
		case unknownAt < 0 && !inList(optional, k) && !strings.HasPrefix(k, "x-"):
			unknownAt = i
		}
	}
	if found < len(required) {
		for _, name := range required {
			if _, ok := v.Get(name); !ok {
				missing = name
				break
			}
		}
	}
	if unknownAt >= 0 {
		unknown = v.Members[unknownAt].Key
	}
	return missing, unknown
}

func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
