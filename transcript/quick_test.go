package transcript

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// quickAgrees fails when the quick path takes a line canon would not
// return, canonical and without error, as the very same tree.
func quickAgrees(t *testing.T, q *quickDecoder, line []byte) bool {
	t.Helper()
	got, ok := q.decode(line)
	if !ok {
		return false
	}
	want, canonical, err := canon.Decode(line)
	if err != nil || !canonical {
		t.Fatalf("quick path took %q; canon: canonical %v, %v", line, canonical, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("quick path tree differs on %q:\n%#v\n%#v", line, got, want)
	}
	return true
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
	}
	left := []string{
		``, `[]`, ` {}`, `{} `, `{"a":1,"a":2}`, `{"b":1,"a":2}`, `{"a" :1}`, `{"a":1.5}`, `{"a":1e+21}`,
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
// canonical, without error, as the same tree.
func FuzzQuickDecode(f *testing.F) {
	for _, seed := range parseSeeds(f) {
		for line := range bytes.Lines(seed) {
			f.Add(bytes.TrimSuffix(line, []byte("\n")))
		}
	}
	f.Add([]byte(`{"a":"\u001f\n","b":[1,-2,{"c":null}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var q quickDecoder
		quickAgrees(t, &q, line)
	})
}
