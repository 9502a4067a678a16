package canon

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/gowebpki/jcs"
)

func TestDecodeRules(t *testing.T) {
	cases := []struct {
		name, in, rule string
		canonical      bool
	}{
		{"empty object", `{}`, "", true},
		{"canonical", `{"a":[1,-2,1.5,1e+21,1e-7,"x",true,false,null],"b":{}}`, "", true},
		{"whitespace", `{"a": 1}`, "", false},
		{"unsorted", `{"b":1,"a":2}`, "", false},
		{"utf16 order", "{\"\U0001F600\":1,\"\uE000\":2}", "", true},
		{"utf16 order wrong", "{\"\uE000\":2,\"\U0001F600\":1}", "", false},
		{"float 1.0", `{"a":1.0}`, "", false},
		{"1e21", `{"a":1e21}`, "", false},
		{"1E+21", `{"a":1E+21}`, "", false},
		{"-0", `{"a":-0}`, "", false},
		{"-0.0", `{"a":-0.0}`, "", false},
		{"1e-07", `{"a":1e-07}`, "", false},
		{"escaped slash", `{"a":"\/"}`, "", false},
		{"upper hex", `{"a":"\u001F"}`, "", false},
		{"lower hex", `{"a":"\u001f"}`, "", true},
		{"u-escaped newline", `{"a":"\u000a"}`, "", false},
		{"escaped non-ascii", `{"a":"\u00e9"}`, "", false},
		{"raw DEL", "{\"a\":\"\x7f\"}", "", true},
		{"surrogate pair", `{"a":"\ud83d\ude00"}`, "", false},
		{"lone high", `{"a":"\ud800"}`, RuleLoneSurrogate, false},
		{"lone low", `{"a":"\udc00x"}`, RuleLoneSurrogate, false},
		{"high then non-low", `{"a":"\ud800\u0041"}`, RuleLoneSurrogate, false},
		{"bad utf8", "{\"a\":\"\xff\"}", RuleUTF8, false},
		{"raw surrogate bytes", "{\"a\":\"\xed\xa0\x80\"}", RuleUTF8, false},
		{"duplicate", `{"a":1,"a":2}`, RuleDuplicateMember, false},
		{"deep duplicate", `{"a":[{"b":{"c":1,"c":1}}]}`, RuleDuplicateMember, false},
		{"many members duplicate", `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"a":1}`, RuleDuplicateMember, false},
		// Repeats after the key order breaks at different points, before
		// and after the decoder switches from a scan to an index.
		{"duplicate after order breaks", `{"b":1,"a":2,"b":3}`, RuleDuplicateMember, false},
		{"duplicate of first after order breaks late", `{"a":1,"c":1,"b":1,"a":1}`, RuleDuplicateMember, false},
		{"duplicate in sorted prefix of many", `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"e":1}`, RuleDuplicateMember, false},
		{"duplicate of a key after the index", `{"b":1,"a":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"j":1}`, RuleDuplicateMember, false},
		{"unsorted distinct", `{"b":1,"a":1,"d":1,"c":1,"f":1,"e":1,"h":1,"g":1,"j":1,"i":1}`, "", false},
		{"sorted by UTF-16 not bytes", "{\"\uE000\":1,\"\U0001F600\":2,\"\uE000\":3}", RuleDuplicateMember, false},
		{"NaN", `{"a":NaN}`, RuleNonFinite, false},
		{"Infinity", `{"a":-Infinity}`, RuleNonFinite, false},
		{"overflow", `{"a":1e400}`, RuleNonFinite, false},
		{"underflow is zero", `{"a":1e-400}`, "", false},
		{"max safe", `{"a":9007199254740991}`, "", true},
		{"2^53", `{"a":9007199254740992}`, RuleIntegerRange, false},
		{"-2^53", `{"a":-9007199254740992}`, RuleIntegerRange, false},
		{"long digits", `{"a":` + strings.Repeat("9", 10000) + `}`, RuleIntegerRange, false},
		{"long float digits", `{"a":0.` + strings.Repeat("1", 10000) + `}`, "", false},
		{"array top", `[1]`, RuleNotObject, false},
		{"trailing", `{} x`, RuleSyntax, false},
		{"leading zero", `{"a":01}`, RuleSyntax, false},
		{"bare dot", `{"a":1.}`, RuleSyntax, false},
		{"plus", `{"a":+1}`, RuleSyntax, false},
		{"control char", "{\"a\":\"\x01\"}", RuleSyntax, false},
		{"bad escape", `{"a":"\x"}`, RuleSyntax, false},
		{"unterminated", `{"a":"x`, RuleSyntax, false},
		{"trailing comma", `{"a":1,}`, RuleSyntax, false},
		{"depth 64", strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat(`}`, 64), "", true},
		{"depth 65", strings.Repeat(`{"a":`, 65) + `1` + strings.Repeat(`}`, 65), RuleDepth, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, canonical, err := Decode([]byte(tc.in))
			if tc.rule != "" {
				ce, ok := errors.AsType[*Error](err)
				if !ok || ce.Rule != tc.rule {
					t.Fatalf("Decode(%.60q) error = %v, want rule %s", tc.in, err, tc.rule)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%.60q) error = %v", tc.in, err)
			}
			if canonical != tc.canonical {
				t.Fatalf("canonical = %v, want %v", canonical, tc.canonical)
			}
			checkAgainstJCS(t, []byte(tc.in))
		})
	}
}

func TestBudgets(t *testing.T) {
	items := func(n int) string {
		return `{"a":[` + strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]}`
	}
	str := func(n int) string { return `{"a":"` + strings.Repeat("x", n) + `"}` }
	twoStrings := func(n int) string {
		return `{"a":"` + strings.Repeat("x", 1<<20) + `","b":"` + strings.Repeat("y", n-(1<<20)-2) + `"}`
	}
	cases := []struct {
		name, in, rule string
	}{
		{"items at limit", items(MaxItems), ""},
		{"items over", items(MaxItems + 1), RuleItems},
		{"string at limit", str(MaxStringBytes), ""},
		{"string over", str(MaxStringBytes + 1), RuleStringBytes},
		{"record strings at limit", twoStrings(MaxRecordStringBytes), ""},
		{"record strings over", twoStrings(MaxRecordStringBytes + 1), RuleRecordStringBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := Decode([]byte(tc.in))
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if err := Measure(&v).Check(); err != nil {
					t.Fatalf("Measure.Check: %v", err)
				}
				return
			}
			if ce, ok := errors.AsType[*Error](err); !ok || ce.Rule != tc.rule {
				t.Fatalf("Decode error = %v, want rule %s", err, tc.rule)
			}
		})
	}
}

func TestValuesBudget(t *testing.T) {
	// n values: the object, the outer array, k inner arrays and the zeros.
	build := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"a":[`)
		left := n - 2
		first := true
		for left > 0 {
			if !first {
				b.WriteByte(',')
			}
			first = false
			k := min(10000, left-1)
			left -= k + 1
			b.WriteByte('[')
			for i := 0; i < k; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteByte('0')
			}
			b.WriteByte(']')
		}
		b.WriteString(`]}`)
		return b.Bytes()
	}
	v, _, err := Decode(build(MaxValues))
	if err != nil {
		t.Fatalf("at limit: %v", err)
	}
	if got := Measure(&v).Values; got != MaxValues {
		t.Fatalf("Measure.Values = %d, want %d", got, MaxValues)
	}
	_, _, err = Decode(build(MaxValues + 1))
	if ce, ok := errors.AsType[*Error](err); !ok || ce.Rule != RuleValues {
		t.Fatalf("over limit: %v, want %s", err, RuleValues)
	}
}

// lexicalDepthOracle is the plain byte-at-a-time definition LexicalDepth
// must agree with: brackets counted outside strings, a backslash in a
// string skipping the next byte.
func lexicalDepthOracle(line []byte, limit int) int {
	depth, max := 0, 0
	inString := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
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

func FuzzLexicalDepth(f *testing.F) {
	for _, s := range []string{`{"a":"\\"}`, `{"a":"\\\"[["}`, `["\"`, `{"a":"x\\\\"}[[`, `"\\`, `[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if got, want := LexicalDepth(line, 64), lexicalDepthOracle(line, 64); got != want {
			t.Fatalf("LexicalDepth(%q) = %d, oracle %d", line, got, want)
		}
	})
}

func TestLexicalDepth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`{}`, 1}, {`{"a":"[[[["}`, 1}, {`{"a":"\"[["}`, 1}, {`[[{}]]`, 3}, {`]]]`, 0},
	} {
		if got := LexicalDepth([]byte(tc.in), 64); got != tc.want {
			t.Errorf("LexicalDepth(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestLess(t *testing.T) {
	keys := []string{"", "a", "aa", "b", "\u00e9", "\U0001F600", "\U0001F601", "\uE000", "\uFFFF"}
	for i := range keys {
		for j := range keys {
			if got, want := Less(keys[i], keys[j]), i < j; got != want {
				t.Errorf("Less(%q, %q) = %v, want %v", keys[i], keys[j], got, want)
			}
		}
	}
}

// checkAgainstJCS asserts that an accepted line's canonical flag and our
// writer agree with the reference RFC 8785 transform.
func checkAgainstJCS(t testing.TB, line []byte) {
	v, canonical, err := Decode(line)
	if err != nil {
		return
	}
	ref, jerr := jcs.Transform(line)
	if jerr != nil {
		t.Fatalf("jcs rejects what Decode accepts: %q: %v", line, jerr)
	}
	ours, err := Marshal(&v)
	if ce, ok := errors.AsType[*Error](err); ok && ce.Rule == RuleIntegerRange {
		// A float such as 1e20, whose canonical spelling is an integer
		// literal v1 rejects: refused exactly when Decode refuses jcs's form.
		if _, _, derr := Decode(ref); derr == nil {
			t.Fatalf("Marshal refuses %q (%v), but its jcs form %q decodes", line, err, ref)
		}
		return
	}
	if err != nil {
		t.Fatalf("Marshal of accepted value: %v", err)
	}
	if !bytes.Equal(ours, ref) {
		t.Fatalf("Marshal differs from jcs:\n in  %q\n ours %q\n jcs  %q", line, ours, ref)
	}
	if canonical != bytes.Equal(line, ref) {
		t.Fatalf("canonical = %v for %q, jcs form %q", canonical, line, ref)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,-2,1.5,1e+21,1e-7,"x",true,false,null],"b":{}}`,
		`{"a":"\ud83d\ude00"}`, `{"b":1,"a":2}`, "{\"\uE000\":2,\"\U0001F600\":1}", `{"a":1.0}`,
		`{"a":"\u001f\n\/"}`, `{"a":-0}`, `{"a":5e-324}`, `{"a":1.7976931348623157e308}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":[1e20,-9007199254740993.0,1e21]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgainstJCS(t, line)
		checkDecoderReuse(t, line)
		checkRecycle(t, line)
	})
}

// benchLine is a typical observation record: a frame of 80x24 text, a few
// regions and events.
func benchLine() []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":"record-0042","kind":"observation","payload":{"at_ms":250,"events":[{"data":{"chunk":"hello"},"type":"terminal.output"}],"frame":{"columns":80,"lines":[`)
	for i := 0; i < 24; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strings.Repeat("x", 70) + `          "`)
	}
	b.WriteString(`],"rows":24},"state":{"buffer":"hello","size":[80,24],"time":250},"ui":{"cursor":{"column":5,"row":0,"visible":true},"focus":"main","mode":null,"regions":[{"bounds":{"column":0,"columns":80,"row":0,"rows":24},"id":"main","role":"editor"}]}},"protocol":"termverify.transcript/v1","run_id":"bench","seq":42}`)
	return b.Bytes()
}

func BenchmarkDecode(b *testing.B) {
	line := benchLine()
	if _, canonical, err := Decode(line); err != nil || !canonical {
		b.Fatalf("bench line: canonical %v, %v", canonical, err)
	}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

// checkDecoderReuse decodes line twice with one Decoder (and a third,
// different line in between) and checks that values from earlier calls are
// untouched: the Decoder's slabs are append-only.
func checkDecoderReuse(t testing.TB, line []byte) {
	var dec Decoder
	first, _, err := dec.Decode(line)
	if err != nil {
		return
	}
	before, err := Marshal(&first)
	if err != nil {
		return // no canonical form (checkAgainstJCS says why): nothing to compare
	}
	if _, _, err := dec.Decode([]byte(`{"other":["\u00e9\n",{"k":[1,2,3]},"x\ty"]}`)); err != nil {
		t.Fatal(err)
	}
	second, _, err := dec.Decode(line)
	if err != nil {
		t.Fatalf("second decode of an accepted line: %v", err)
	}
	after, _ := Marshal(&first)
	again, _ := Marshal(&second)
	if !bytes.Equal(before, after) || !bytes.Equal(before, again) {
		t.Fatalf("Decoder reuse changed a decoded value:\n before %q\n after  %q\n again  %q", before, after, again)
	}
}

func TestDecoderReuse(t *testing.T) {
	for _, s := range []string{`{"a":"x\ny","b":[1,{"c":"\u00e9"}]}`, `{"a":[` + strings.Repeat(`"\t",`, 3000) + `1]}`} {
		checkDecoderReuse(t, []byte(s))
	}
}

// checkRecycle decodes line with a recycling Decoder, after other lines
// that leave their values in its slabs, and checks that each decode gives
// exactly what a one-off Decode gives.
func checkRecycle(t testing.TB, line []byte) {
	want, _, err := Decode(line)
	if err != nil {
		return
	}
	wantBytes, err := Marshal(&want)
	if err != nil {
		return // no canonical form (checkAgainstJCS says why): nothing to compare
	}
	var dec Decoder
	other := []byte(`{"other":["\u00e9\n",{"k":[1,2,3]},"x\ty"],"z":{"a":"b"}}`)
	for _, l := range [][]byte{other, line, other, line, line} {
		dec.Recycle()
		got, _, err := dec.Decode(l)
		if err != nil {
			t.Fatalf("recycled decode of %q: %v", l, err)
		}
		if !bytes.Equal(l, line) {
			continue
		}
		gotBytes, _ := Marshal(&got)
		if !bytes.Equal(gotBytes, wantBytes) {
			t.Fatalf("recycled decode of %q = %q, want %q", line, gotBytes, wantBytes)
		}
	}
}

func TestRecycle(t *testing.T) {
	for _, s := range []string{`{"a":"x\ny","b":[1,{"c":"\u00e9"}]}`, `{"a":[` + strings.Repeat(`"\t",`, 3000) + `1]}`,
		`{"s":"` + strings.Repeat("x", 70000) + `"}`} {
		checkRecycle(t, []byte(s))
	}
	// Recycling is what makes the supervisor's epochs allocation-free: the
	// next line's containers and its copy land where the last line's were.
	var dec Decoder
	line := []byte(`{"a":[1,2],"b":{"c":"d\n"}}`)
	dec.Recycle()
	first, _, _ := dec.Decode(line)
	dec.Recycle()
	second, _, _ := dec.Decode(line)
	if &first.Members[0] != &second.Members[0] || &first.Members[0].Value.Items[0] != &second.Members[0].Value.Items[0] ||
		unsafe.StringData(first.Members[0].Key) != unsafe.StringData(second.Members[0].Key) {
		t.Error("a recycled Decoder did not reuse its memory")
	}
	// Kept lines share the recycled memory: intact until Recycle, reused after.
	dec.Recycle()
	kept := dec.Keep([]byte("raw line\n"))
	if _, _, err := dec.Decode([]byte(`{"other":"line"}`)); err != nil || string(kept) != "raw line\n" {
		t.Fatalf("a kept line changed before Recycle: %q (%v)", kept, err)
	}
	dec.Recycle()
	if again := dec.Keep([]byte("next line\n")); &again[0] != &kept[0] {
		t.Error("Recycle did not make Keep reuse its memory")
	}
	if allocs := testing.AllocsPerRun(100, func() {
		dec.Recycle()
		if _, _, err := dec.Decode(line); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("a recycled decode allocates %v times, want 0", allocs)
	}
}

func TestArena(t *testing.T) {
	var a Arena
	m := [...]Member{M("b", IntValue(2)), M("a", StringValue("x"))}
	obj := a.Object(m[:]...)
	m[0].Key = "changed"
	if got, _ := Marshal(&obj); string(got) != `{"a":"x","b":2}` {
		t.Errorf("arena object = %s", got)
	}
	items := a.Items(3)
	if len(items) != 3 || cap(items) != 3 || items[0].Kind != Null {
		t.Errorf("Items(3) = len %d cap %d %+v", len(items), cap(items), items)
	}
	items[0] = StringValue("dirty")
	a.Reset()
	again := a.Items(3)
	if &again[0] != &items[0] {
		t.Error("Reset did not make the arena reuse its memory")
	}
	if again[0].Kind != Null || again[0].Str != "" {
		t.Errorf("reused items are not zeroed: %+v", again[0])
	}
	for _, n := range []int{minArenaSlab + 1, maxArenaSlab / 4, maxArenaSlab} {
		var fresh Arena
		if m, v := fresh.Members(n), fresh.Items(n); len(m) != n || len(v) != n {
			t.Errorf("Members(%d), Items(%d) have lengths %d, %d", n, n, len(m), len(v))
		}
	}
	// A slab that fills is replaced, never overwritten while in use.
	var b Arena
	first := b.Items(1)
	first[0] = StringValue("kept")
	for range minArenaSlab {
		b.Items(1)[0] = StringValue("filler")
	}
	if first[0].Str != "kept" {
		t.Errorf("an arena overwrote a live value: %q", first[0].Str)
	}
}

func TestCanonicalNumber(t *testing.T) {
	cases := []struct{ lit, want, rule string }{
		{"0", "0", ""},
		{"-0", "0", ""},
		{"7", "7", ""},
		{"-12", "-12", ""},
		{"012", "12", ""}, // not JSON, but a Value can be built with it
		{"123456789012345", "123456789012345", ""},
		{"9007199254740991", "9007199254740991", ""},
		{"-9007199254740991", "-9007199254740991", ""},
		{"9007199254740992", "", RuleIntegerRange},
		{"-", "", RuleIntegerRange},
		{"1e2", "100", ""},
		{"1.50", "1.5", ""},
		{"9007199254740991.0", "9007199254740991", ""},
		{"9007199254740992.0", "", RuleIntegerRange}, // spelled 9007199254740992
		{"1e20", "", RuleIntegerRange},               // spelled 100000000000000000000
		{"-1E20", "", RuleIntegerRange},
		{"1e21", "1e+21", ""},
		{"1.5e19", "", RuleIntegerRange},
	}
	for _, tc := range cases {
		got, err := CanonicalNumber(tc.lit)
		var rule string
		if ce, ok := errors.AsType[*Error](err); ok {
			rule = ce.Rule
		}
		if got != tc.want || rule != tc.rule {
			t.Errorf("CanonicalNumber(%q) = %q, %v; want %q, rule %q", tc.lit, got, err, tc.want, tc.rule)
		}
	}
}

func TestCheckClosed(t *testing.T) {
	cases := []struct {
		in               string
		missing, unknown string
	}{
		{`{"a":1,"b":2}`, "", ""},
		{`{"a":1,"b":2,"c":3}`, "", ""},
		{`{"a":1,"x-note":2}`, "b", ""},
		{`{"b":1,"a":2,"z":3}`, "", "z"},
		{`{"z":1,"y":2}`, "a", "z"},
		{`{"a":1,"b":2,"x":3}`, "", "x"},
	}
	for _, tc := range cases {
		v, _, err := Decode([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		missing, unknown := v.CheckClosed([]string{"a", "b"}, []string{"c"})
		if missing != tc.missing || unknown != tc.unknown {
			t.Errorf("CheckClosed(%s) = (%q, %q), want (%q, %q)", tc.in, missing, unknown, tc.missing, tc.unknown)
		}
	}
}
