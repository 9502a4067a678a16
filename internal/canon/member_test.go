package canon

import "testing"

func TestMemberReaders(t *testing.T) {
	obj := ObjectValue(M("s", StringValue("x")), M("n", IntValue(3)), M("z", IntValue(0)),
		M("neg", IntValue(-1)), M("b", BoolValue(true)), M("f", Value{Kind: Number, Str: "1.5"}))
	tests := []struct {
		name         string
		v            *Value
		str          string
		isStr        bool
		nonNeg, pos  bool
		nonNegAmount int64
	}{
		{name: "string", v: Lookup(&obj, "s"), str: "x", isStr: true},
		{name: "positive", v: Lookup(&obj, "n"), nonNeg: true, pos: true, nonNegAmount: 3},
		{name: "zero", v: Lookup(&obj, "z"), nonNeg: true},
		{name: "negative", v: Lookup(&obj, "neg")},
		{name: "bool is no number", v: Lookup(&obj, "b")},
		{name: "fraction is no integer", v: Lookup(&obj, "f")},
		{name: "absent", v: Lookup(&obj, "missing")},
		{name: "nil object", v: Lookup(nil, "s")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, ok := Str(tt.v); s != tt.str || ok != tt.isStr {
				t.Errorf("Str = %q, %v; want %q, %v", s, ok, tt.str, tt.isStr)
			}
			if n, ok := NonNegInt(tt.v); ok != tt.nonNeg || (ok && n != tt.nonNegAmount) {
				t.Errorf("NonNegInt = %d, %v; want %d, %v", n, ok, tt.nonNegAmount, tt.nonNeg)
			}
			if _, ok := PosInt(tt.v); ok != tt.pos {
				t.Errorf("PosInt ok = %v; want %v", ok, tt.pos)
			}
		})
	}
}

func TestClosed(t *testing.T) {
	obj := ObjectValue(M("a", NullValue()), M("x-note", NullValue()), M("b", NullValue()))
	str := StringValue("s")
	tests := []struct {
		name               string
		v                  *Value
		required, optional []string
		want               string
	}{
		{"all known, extension admitted", &obj, []string{"a"}, []string{"b"}, ""},
		{"required missing", &obj, []string{"a", "c"}, []string{"b"}, `missing member "c"`},
		{"unknown member", &obj, []string{"a"}, nil, `unknown member "b"`},
		{"not an object", &str, nil, nil, "must be an object"},
		{"nil", nil, nil, nil, "must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Closed(tt.v, tt.required, tt.optional)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Closed = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHasWordAndIsExtension(t *testing.T) {
	for _, tt := range []struct {
		list, w string
		want    bool
	}{
		{"at_ms text", "text", true}, {"at_ms text", "at_ms", true}, {"at_ms text", "tex", false},
		{"", "", false}, {"at_ms", "", false},
	} {
		if got := HasWord(tt.list, tt.w); got != tt.want {
			t.Errorf("HasWord(%q, %q) = %v", tt.list, tt.w, got)
		}
	}
	if !IsExtension("x-a") || IsExtension("xa") || IsExtension("X-a") {
		t.Error("IsExtension: only the lower-case x- prefix is an extension")
	}
}
