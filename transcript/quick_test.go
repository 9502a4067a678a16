package transcript

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// quickAgrees fails when the quick path takes a line canon would not
// return, canonical and without error, as the very same tree, or leaves
// one that canon would; and when
// the quick path eliding opaque values does not take exactly the same
// lines, or returns other than canon's tree with those values elided
// and the typed arrays it checked as it scanned them emptied; and when,
// for an observation, what it found in those arrays does not give
// checkObservation the very verdict (rule, message, process) canon's
// whole tree gives it.
func quickAgrees(t *testing.T, q *quickDecoder, line []byte) bool {
	t.Helper()
	q.elide = false
	got, ok := q.decode(line)
	e := quickDecoder{elide: true}
	elided, eok := e.decode(line)
	if eok != ok {
		t.Fatalf("quick path took %q: %v, eliding: %v", line, ok, eok)
	}
	want, canonical, err := canon.Decode(line)
	if !ok {
		// The streaming checker counts on this: a line the quick path
		// leaves and the scanner finds decodes is not canonical.
		if err == nil && canonical {
			t.Fatalf("quick path refused %q, which canon decodes as canonical", line)
		}
		return false
	}
	if err != nil || !canonical {
		t.Fatalf("quick path took %q; canon: canonical %v, %v", line, canonical, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("quick path tree differs on %q:\n%#v\n%#v", line, got, want)
	}
	if k, _ := canon.Str(canon.Lookup(&want, "kind")); k == KindObservation {
		if p := canon.Lookup(&want, "payload"); p != nil {
			rule, proc, err := checkObservation(p, nil)
			erule, eproc, eerr := checkObservation(canon.Lookup(&elided, "payload"), &e.typed)
			if rule != erule || fmt.Sprint(err) != fmt.Sprint(eerr) || !reflect.DeepEqual(proc, eproc) {
				t.Fatalf("observation verdict differs on %q:\ntree:    %q %v %+v\nscanned: %q %v %+v", line, rule, err, proc, erule, eerr, eproc)
			}
		}
	}
	if elideOpaque(&want); !reflect.DeepEqual(elided, want) {
		t.Fatalf("eliding quick path tree differs on %q:\n%#v\n%#v", line, elided, want)
	}
	return true
}

// opaquePaths are, for each kind whose records are elided, the members
// left out of the tree: payload members by name, "events/*/data" the
// data of every event, "error/details" run.failed's. A payload's and the
// record's x- members are elided too. (This is the specification
// quickDecoder.elided implements, written out apart from it.)
var opaquePaths = map[string][]string{
	KindObservation: {"state", "events/*/data"}, KindDiagnostic: {"details"},
	KindRunUnsupported: {"details"}, KindRunFailed: {"error/details"}, KindRunFinished: nil,
	KindInputText: nil, KindInputKey: nil, KindInputClock: nil, KindInputResize: nil,
	KindInputMouse: nil, KindInputClipboard: nil, KindInputStop: nil,
}

// elideOpaque replaces rec's opaque values by empty values of their kind.
func elideOpaque(rec *canon.Value) {
	kind, _ := canon.Str(canon.Lookup(rec, "kind"))
	paths, ok := opaquePaths[kind]
	if !ok {
		return
	}
	blank := func(v *canon.Value) { *v = canon.Value{Kind: v.Kind} }
	extensions := func(obj *canon.Value) {
		for i := range obj.Members {
			if strings.HasPrefix(obj.Members[i].Key, "x-") {
				blank(&obj.Members[i].Value)
			}
		}
	}
	extensions(rec)
	p := canon.Lookup(rec, "payload")
	if p == nil || p.Kind != canon.Object {
		return
	}
	extensions(p)
	if kind == KindObservation {
		// The typed arrays checked as scanned: events, ui.regions and
		// frame.lines, wherever they are arrays.
		for _, path := range [][]string{{"events"}, {"ui", "regions"}, {"frame", "lines"}} {
			v := p
			for _, name := range path {
				if v.Kind != canon.Object {
					v = nil
					break
				}
				if v, _ = v.Get(name); v == nil {
					break
				}
			}
			if v != nil && v.Kind == canon.Array {
				blank(v)
			}
		}
	}
	for _, path := range paths {
		switch parts := strings.Split(path, "/"); len(parts) {
		case 1:
			if v, ok := p.Get(parts[0]); ok {
				blank(v)
			}
		case 2:
			if v, ok := p.Get(parts[0]); ok && v.Kind == canon.Object {
				if d, ok := v.Get(parts[1]); ok {
					blank(d)
				}
			}
		case 3:
			if v, ok := p.Get(parts[0]); ok && v.Kind == canon.Array {
				for i := range v.Items {
					if v.Items[i].Kind == canon.Object {
						if d, ok := v.Items[i].Get(parts[2]); ok {
							blank(d)
						}
					}
				}
			}
		}
	}
}

// TestQuickDecode: the quick path takes what the Writer writes (or it
// would be no shortcut), and leaves to canon every line that canon
// rejects or that is not canonical.
func TestQuickDecode(t *testing.T) {
	var q quickDecoder
	for _, data := range [][]byte{streamBase(t), benchData(t)} {
		for line := range bytes.Lines(data) {
			if !quickAgrees(t, &q, bytes.TrimSuffix(line, []byte("\n"))) {
				t.Fatalf("quick path refused a Writer line: %.200q", line)
			}
		}
	}
	taken := []string{
		`{}`, `{"a":[]}`, `{"a":{}}`, `{"":0,"a":-1,"b":9007199254740991,"c":-9007199254740991}`,
		`{"a":"\"\\\b\f\n\r\t\u0000\u001f\u000b","b":"` + "\x7f\u2028é\U0001F600" + `"}`,
		`{"a":[true,false,null,"x",[{"b":[]}]]}`, `{"` + "\U0001F600" + `":1,"` + "\ue000" + `":2}`,
		`{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
		`{"a":[1.5,-1.5,1e+21,1e-7,0.1,-0.000001,1.2345678901234566e-7,5e-324,1.7976931348623157e+308]}`,
		// Opaque parts of the kinds that are elided, in every position.
		`{"kind":"observation","payload":{"events":[{"data":{"a\n":null,"b":[1,{"c":"\u0001"}]},"type":"t","x-e":[1]},1,{"data":"s"}],"process":{"state":"x"},"state":[1.5,{"":{}}],"x-p":{"q":[]}},"x-r":"s"}`,
		`{"kind":"diagnostic","payload":{"details":{"a":[true,false]},"x-d":1}}`,
		`{"kind":"run.failed","payload":{"details":[1],"error":{"details":{"e":"\"\\"},"x-e":2}}}`,
		`{"kind":"run.unsupported","payload":{"details":"d"}}`, `{"kind":"input.key","payload":{"x-k":{"a":1}},"x-":[]}`,
		`{"kind":"run.started","payload":{"state":[1],"x-s":{"a":1}},"x-r":[2]}`,
		`{"kind":"capability.result","payload":{"x-c":{"a":1}},"x-r":[2]}`,
		`{"kind":"observation","payload":[{"state":1}],"state":{"a":1}}`,
		`{"kind":1,"payload":{"state":{"a":1}}}`, `{"payload":{"state":{"a":1}}}`,
	}
	left := []string{
		``, `[]`, ` {}`, `{} `, `{"a":1,"a":2}`, `{"b":1,"a":2}`, `{"a" :1}`, `{"a":1.0}`, `{"a":1e21}`,
		`{"a":1E+21}`, `{"a":-0.0}`, `{"a":1e-07}`, `{"a":1e400}`, `{"a":0.10}`, `{"a":00.5}`, `{"a":1.}`,
		`{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":-}`, `{"a":1e-400}`, `{"a":100000000000000000000}`, `{"a":1e2}`,
		`{"a":-0}`, `{"a":01}`, `{"a":9007199254740992}`, `{"a":"\/"}`, `{"a":"\u0041"}`, `{"a":"\u000A"}`,
		`{"a":"\u000a"}`, `{"a":"\u001F"}`, `{"a":"\ud800"}`, `{"a":"` + "\x01" + `"}`, `{"a":"` + "\xff" + `"}`,
		`{"a":NaN}`, `{"a":tru}`, `{"a":[1,]}`, `{"a":{"b":1,}}`, `{"a":"x}`,
		`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		`{"` + "\ue000" + `":1,"` + "\U0001F600" + `":2}`,
	}
	for _, s := range taken {
		if !quickAgrees(t, &q, []byte(s)) {
			t.Errorf("quick path refused %q", s)
		}
	}
	for _, s := range left {
		if quickAgrees(t, &q, []byte(s)) {
			t.Errorf("quick path took %q", s)
		}
		// The same value where it is opaque, checked but not built.
		if v, ok := strings.CutPrefix(s, `{"a":`); ok {
			s = `{"kind":"observation","payload":{"state":` + v + `}`
			if quickAgrees(t, &q, []byte(s)) {
				t.Errorf("quick path took %q", s)
			}
		}
	}
	// The budgets: at the limit taken, past it left to canon.
	items := func(n int) string { return `{"a":[` + strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]}` }
	str := func(n int) string { return `{"a":"` + strings.Repeat("s", n) + `"}` }
	for _, c := range []struct {
		line  string
		taken bool
	}{
		{items(canon.MaxItems), true}, {items(canon.MaxItems + 1), false},
		{str(canon.MaxStringBytes), true}, {str(canon.MaxStringBytes + 1), false},
		{`{"a":"` + strings.Repeat("s", canon.MaxStringBytes) + `","b":"` + strings.Repeat("s", canon.MaxStringBytes-2) + `"}`, true},
		{`{"a":"` + strings.Repeat("s", canon.MaxStringBytes) + `","b":"` + strings.Repeat("s", canon.MaxStringBytes-1) + `"}`, false},
	} {
		if got := quickAgrees(t, &q, []byte(c.line)); got != c.taken {
			t.Errorf("quick path took %.60q…: %v, want %v", c.line, got, c.taken)
		}
	}
}

// FuzzQuickDecode: whatever line the quick path takes, canon returns
// canonical, without error, as the same tree, and it leaves no line that
// canon returns so. Both read each token with canon's lexer (FuzzLexer
// holds that to references of its own), so what this checks is what the
// quick path adds: its shortcut for a string without escapes, giving up
// on every spelling RFC 8785 does not write, the structure (names
// strictly ascending, depth, budgets) and the elision. The input is also
// tried as one value, so that the fuzzer reaches tokens directly.
func FuzzQuickDecode(f *testing.F) {
	for _, seed := range parseSeeds(f) {
		for line := range bytes.Lines(seed) {
			f.Add(bytes.TrimSuffix(line, []byte("\n")))
		}
	}
	f.Add([]byte(`{"a":"\u001f\n","b":[1,-2,{"c":null}]}`))
	f.Add([]byte(`{"kind":"observation","payload":{"events":[{"data":{"a\n":null,"b":[1.5,{"c":"\u0001"}]},"type":"t"}],"state":[1e-7,{"":{}}],"x-p":{"q":[]}},"x-r":"s"}`))
	// Observations whose typed arrays (checked as scanned) break their
	// rules in every way.
	for _, seed := range typedSeeds(f) {
		for line := range bytes.Lines(seed) {
			f.Add(bytes.TrimSuffix(line, []byte("\n")))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var q quickDecoder
		quickAgrees(t, &q, line)
		quickAgrees(t, &q, asValue(line))
	})
}

// scanAgrees fails when the scanner's verdict on line is not canon's.
func scanAgrees(t *testing.T, s *scanner, line []byte) {
	t.Helper()
	_, _, err := canon.Decode(line)
	if got := s.decodes(line); got != (err == nil) {
		t.Fatalf("scanner says %q decodes: %v; canon: %v", line, got, err)
	}
}

// TestScan: the scanner reaches canon's verdict on the quick path's
// cases and on lines that decode without being canonical.
func TestScan(t *testing.T) {
	var s scanner
	for _, data := range [][]byte{streamBase(t), benchData(t)} {
		for line := range bytes.Lines(data) {
			scanAgrees(t, &s, bytes.TrimSuffix(line, []byte("\n")))
		}
	}
	lines := []string{
		`{}`, ` {} `, "\t{\n}\r", `{"a" : [ 1 , 2 ] }`, `{"b":1,"a":2}`, `{"b":1,"a":2,"b":3}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":0}`,
		`{"i":1,"h":2,"g":3,"f":4,"e":5,"d":6,"c":7,"b":8,"a":9,"j":0}`,
		`{"i":1,"h":2,"g":3,"f":4,"e":5,"d":6,"c":7,"b":8,"a":9,"e":0}`,
		`{"\u0061":1,"a":2}`, `{"a\/":1,"a/":2}`, `{"\ud83d\ude00":1,"` + "\U0001F600" + `":2}`,
		`{"a":"\ud800"}`, `{"a":"\udc00"}`, `{"a":"\ud800\u0041"}`, `{"a":"\ud800\udbff"}`, `{"a":"\ud800\"}`,
		`{"a":"\u00E9\U0041"}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"` + "\x01" + `"}`, `{"a":"` + "\xff" + `"}`,
		`{"a":1.0}`, `{"a":1E400}`, `{"a":-1e-400}`, `{"a":-0}`, `{"a":01}`, `{"a":9007199254740991}`,
		`{"a":-9007199254740992}`, `{"a":1e}`, `{"a":.5}`, `{"a":-}`, `{"a":NaN}`, `{"a":-Infinity}`,
		`{"a":tru}`, `{"a":[1,]}`, `{"a":{"b":1,}}`, `{"a":"x}`, `[]`, `"a"`, `1`, `{} {}`, `{},`, ``, ` `,
		`{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
		`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		`{"a":[` + strings.TrimSuffix(strings.Repeat("0, ", canon.MaxItems), ", ") + `]}`,
		`{"a":[` + strings.TrimSuffix(strings.Repeat("0, ", canon.MaxItems+1), ", ") + `]}`,
		`{"a" : "` + strings.Repeat("s", canon.MaxStringBytes) + `"}`,
		`{"a" : "` + strings.Repeat("s", canon.MaxStringBytes-1) + `\n"}`,
		`{"a" : "` + strings.Repeat("s", canon.MaxStringBytes) + `\n"}`,
		`{"a":"` + strings.Repeat("s", canon.MaxStringBytes) + `", "b":"` + strings.Repeat("s", canon.MaxStringBytes-2) + `"}`,
		`{"a":"` + strings.Repeat("s", canon.MaxStringBytes) + `", "b":"` + strings.Repeat("s", canon.MaxStringBytes-1) + `"}`,
	}
	var many, manyObj strings.Builder
	for i := range canon.MaxItems + 1 {
		fmt.Fprintf(&many, ",%q:0", strconv.Itoa(canon.MaxItems-i))
		fmt.Fprintf(&manyObj, ",{\"k\":%d}", i)
	}
	lines = append(lines, `{"x":{`+many.String()[1:]+`}}`, `{"x":{`+many.String()[len(",\"16384\":0,"):]+`}}`,
		`{"x": [`+manyObj.String()[1:len(manyObj.String())/2]+`]}`)
	for _, l := range lines {
		scanAgrees(t, &s, []byte(l))
		scanAgrees(t, &s, []byte(strings.Replace(l, "{", "{ ", 1)))
	}
}

// asValue is line as the value of a member of an object.
func asValue(line []byte) []byte {
	return append(append([]byte(`{"a":`), line...), '}')
}

// FuzzScan: on any line, the scanner's verdict is canon's. Both read
// each token with canon's lexer, so what this checks is what the scanner
// adds: its shortcut for a string without escapes, and the structure
// (whitespace between tokens, duplicate names, depth, budgets). The
// input is also tried as one value, as in FuzzQuickDecode.
func FuzzScan(f *testing.F) {
	for _, seed := range parseSeeds(f) {
		for line := range bytes.Lines(seed) {
			f.Add(bytes.TrimSuffix(line, []byte("\n")))
		}
	}
	f.Add([]byte(`{ "b":[1.0, -0, "\ud83d\ude00\/"], "a" : {"c":null,"c":1}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var s scanner
		scanAgrees(t, &s, line)
		scanAgrees(t, &s, asValue(line))
	})
}
