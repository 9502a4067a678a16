package input

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// inputErr returns the *Error of err and fails the test for any other
// error type.
func inputErr(tb testing.TB, err error) *Error {
	tb.Helper()
	e, ok := errors.AsType[*Error](err)
	if !ok {
		tb.Fatalf("error %T is not an *input.Error: %v", err, err)
	}
	return e
}

var controlKinds = []string{KindText, KindKey, KindResize, KindClock, KindStop}

// scriptCases are ReadScript's table, also the seeds of FuzzReadScript.
var scriptCases = []struct {
	name     string
	script   string
	kinds    []string
	want     []Input
	wantLine int    // refusals: the line named (0: whole script)
	wantRule string // "" accepts
}{
	{name: "empty", script: ""},
	{name: "blank lines only", script: "\n  \n\t\n"},
	{name: "every kind", script: `{"kind":"input.text","payload":{"text":"héllo"}}
{"kind":"input.key","payload":{"keys":["Control","c"]}}
{"kind":"input.resize","payload":{"columns":100,"rows":30}}
{"kind":"input.mouse","payload":{"action":"press","column":0,"row":2,"button":"left"}}
{"kind":"input.mouse","payload":{"action":"scroll","column":1,"row":2,"delta":-3}}
{"kind":"input.clipboard_set","payload":{"text":""}}
{"kind":"input.clock_advanced","payload":{"delta_ms":250}}
{"kind":"input.stop","payload":{}}`,
		want: []Input{Text{"héllo"}, Key{[]string{"Control", "c"}}, Resize{100, 30},
			Mouse{Action: MousePress, Row: 2, Button: "left"}, Mouse{Action: MouseScroll, Column: 1, Row: 2, Delta: -3},
			ClipboardSet{""}, ClockAdvanced{250}, Stop{}}},
	{name: "blank lines, CRLF, spaces, x- members",
		script: "\r\n  {\"kind\": \"input.text\", \"payload\": {\"text\": \"a\", \"x-n\": 1}, \"x-c\": true}  \r\n\n" +
			`{"payload":{"keys":["Enter"]},"kind":"input.key"}`,
		kinds: controlKinds, want: []Input{Text{"a"}, Key{[]string{"Enter"}}}},
	{name: "no final LF", script: `{"kind":"input.stop","payload":{}}`, want: []Input{Stop{}}},
	{name: "mouse not admitted", script: `{"kind":"input.text","payload":{"text":"ok"}}` + "\n" + `{"kind":"input.mouse","payload":{"action":"move","column":1,"row":1}}`,
		kinds: controlKinds, wantLine: 2, wantRule: RuleKind},
	{name: "clipboard not admitted", script: `{"kind":"input.clipboard_set","payload":{"text":"x"}}`, kinds: controlKinds, wantLine: 1, wantRule: RuleKind},
	{name: "not an input", script: `{"kind":"observation","payload":{}}`, wantLine: 1, wantRule: RuleKind},
	{name: "unknown input kind", script: `{"kind":"input.paste","payload":{}}`, wantLine: 1, wantRule: RuleKind},
	{name: "kind not a string", script: `{"kind":1,"payload":{}}`, wantLine: 1, wantRule: RuleScriptLine},
	{name: "no payload", script: `{"kind":"input.stop"}`, wantLine: 1, wantRule: RuleScriptLine},
	{name: "extra line member", script: `{"kind":"input.stop","payload":{},"at_ms":0}`, wantLine: 1, wantRule: RuleScriptLine},
	{name: "payload not an object", script: `{"kind":"input.stop","payload":[]}`, wantLine: 1, wantRule: RulePayloadMembers},
	{name: "at_ms in a script", script: `{"kind":"input.text","payload":{"at_ms":0,"text":"a"}}`, wantLine: 1, wantRule: RulePayloadMembers},
	{name: "unknown payload member", script: `{"kind":"input.text","payload":{"text":"a","rows":1}}`, wantLine: 1, wantRule: RulePayloadMembers},
	{name: "duplicate member", script: `{"kind":"input.text","payload":{"text":"a","text":"b"}}`, wantLine: 1, wantRule: canon.RuleDuplicateMember},
	{name: "not JSON", script: "{\"kind\":\"input.stop\",\"payload\":{}}\n{kind}", wantLine: 2, wantRule: canon.RuleSyntax},
	{name: "not an object line", script: `[1]`, wantLine: 1, wantRule: canon.RuleNotObject},
	{name: "bad UTF-8", script: "{\"kind\":\"input.text\",\"payload\":{\"text\":\"\xff\"}}", wantLine: 1, wantRule: canon.RuleUTF8},
	{name: "text not a string", script: `{"kind":"input.text","payload":{"text":1}}`, wantLine: 1, wantRule: RuleText},
	{name: "text missing", script: `{"kind":"input.text","payload":{}}`, wantLine: 1, wantRule: RuleText},
	{name: "chord out of order", script: `{"kind":"input.key","payload":{"keys":["c","Control"]}}`, wantLine: 1, wantRule: RuleKeyChord},
	{name: "bare letter key", script: `{"kind":"input.key","payload":{"keys":["c"]}}`, wantLine: 1, wantRule: RuleKeyChord},
	{name: "keys not strings", script: `{"kind":"input.key","payload":{"keys":[1]}}`, wantLine: 1, wantRule: RuleKeyChord},
	{name: "resize zero", script: `{"kind":"input.resize","payload":{"columns":0,"rows":24}}`, wantLine: 1, wantRule: RuleResize},
	{name: "resize float", script: `{"kind":"input.resize","payload":{"columns":80.0,"rows":24}}`, wantLine: 1, wantRule: RuleResize},
	{name: "resize beyond 2^53", script: `{"kind":"input.resize","payload":{"columns":9007199254740992,"rows":24}}`, wantLine: 1, wantRule: canon.RuleIntegerRange},
	{name: "clock zero", script: `{"kind":"input.clock_advanced","payload":{"delta_ms":0}}`, wantLine: 1, wantRule: RuleClockAdvanced},
	{name: "clock negative", script: `{"kind":"input.clock_advanced","payload":{"delta_ms":-5}}`, wantLine: 1, wantRule: RuleClockAdvanced},
	{name: "mouse press without button", script: `{"kind":"input.mouse","payload":{"action":"press","column":1,"row":1}}`, wantLine: 1, wantRule: RuleMouseButton},
	{name: "mouse drag", script: `{"kind":"input.mouse","payload":{"action":"drag","column":1,"row":1}}`, wantLine: 1, wantRule: RuleMousePosition},
	{name: "clipboard not a string", script: `{"kind":"input.clipboard_set","payload":{"text":null}}`, wantLine: 1, wantRule: RuleClipboard},
	{name: "input after stop", script: "{\"kind\":\"input.stop\",\"payload\":{}}\n\n{\"kind\":\"input.text\",\"payload\":{\"text\":\"late\"}}",
		wantLine: 3, wantRule: RuleAfterStop},
	{name: "two stops", script: "{\"kind\":\"input.stop\",\"payload\":{}}\n{\"kind\":\"input.stop\",\"payload\":{}}", wantLine: 2, wantRule: RuleAfterStop},
}

// TestReadScript: what a script may hold, and the line and rule of each
// refusal.
func TestReadScript(t *testing.T) {
	for _, tc := range scriptCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadScript(strings.NewReader(tc.script), tc.kinds...)
			if tc.wantRule == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %#v\nwant %#v", got, tc.want)
				}
				return
			}
			de := inputErr(t, err)
			if de.Line != tc.wantLine || de.Rule != tc.wantRule {
				t.Fatalf("%v: line %d rule %s, want line %d rule %s", err, de.Line, de.Rule, tc.wantLine, tc.wantRule)
			}
			if got != nil {
				t.Fatalf("a refused script returned %d inputs", len(got))
			}
		})
	}
}

// endless is a reader of pattern repeated until stop bytes were read.
type endless struct {
	pattern []byte
	n, stop int
}

func (r *endless) Read(p []byte) (int, error) {
	if r.n >= r.stop {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.stop-r.n)]
	for i := range p {
		p[i] = r.pattern[(r.n+i)%len(r.pattern)]
	}
	r.n += len(p)
	return len(p), nil
}

// TestReadScriptLimits: a long line and a long script are refused while
// they are read, never read whole, and a line at the limit is read.
func TestReadScriptLimits(t *testing.T) {
	t.Run("line over the limit", func(t *testing.T) {
		r := &endless{pattern: []byte("x"), stop: 3 * canon.MaxLineBytes}
		_, err := ReadScript(r)
		if de := inputErr(t, err); de.Line != 1 || de.Rule != canon.RuleLineBytes {
			t.Fatalf("%v: want line 1, %s", err, canon.RuleLineBytes)
		}
		if r.n > canon.MaxLineBytes+1<<20 {
			t.Errorf("read %d bytes of a line over %d", r.n, canon.MaxLineBytes)
		}
	})
	t.Run("line at the limit", func(t *testing.T) {
		// Padding is whitespace, which is trimmed: the line's length is
		// what counts, not its JSON.
		line := []byte(`{"kind":"input.stop","payload":{}}`)
		line = append(line, bytes.Repeat([]byte(" "), canon.MaxLineBytes-len(line))...)
		got, err := ReadScript(bytes.NewReader(append(line, '\n')))
		if err != nil || len(got) != 1 {
			t.Fatalf("a %d-byte line: %d inputs, %v", canon.MaxLineBytes, len(got), err)
		}
		_, err = ReadScript(bytes.NewReader(append(line, " \n"...)))
		if de := inputErr(t, err); de.Rule != canon.RuleLineBytes {
			t.Fatalf("a %d-byte line: %v", canon.MaxLineBytes+1, err)
		}
	})
	t.Run("script over the limit", func(t *testing.T) {
		r := &endless{pattern: []byte(`{"kind":"input.text","payload":{"text":"a"}}` + "\n"), stop: canon.MaxTranscriptBytes + 1<<20}
		_, err := ReadScript(r)
		if de := inputErr(t, err); de.Line != 0 || de.Rule != RuleScriptBytes {
			t.Fatalf("%v: want the whole script refused, %s", err, RuleScriptBytes)
		}
		if r.n > canon.MaxTranscriptBytes+1 {
			t.Errorf("read %d bytes, limit %d", r.n, canon.MaxTranscriptBytes)
		}
	})
	t.Run("read error", func(t *testing.T) {
		_, err := ReadScript(io.MultiReader(strings.NewReader("{"), errReader{}))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%v: want the reader's error", err)
		}
		if _, ok := errors.AsType[*Error](err); ok {
			t.Fatalf("an I/O error came back as a *Error: %v", err)
		}
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// TestCheck: typed inputs are held to the rules a script line is.
func TestCheck(t *testing.T) {
	cases := []struct {
		name  string
		in    Input
		kinds []string
		want  string // rule; "" accepts
	}{
		{name: "text", in: Text{"a"}},
		{name: "chord", in: Key{[]string{"Control", "Alt", "F1"}}, kinds: controlKinds},
		{name: "mouse", in: Mouse{Action: MouseMove, Column: 3, Row: 4}},
		{name: "stop", in: Stop{}, kinds: controlKinds},
		{name: "nil", in: nil, want: RuleKind},
		{name: "mouse not admitted", in: Mouse{Action: MouseMove}, kinds: controlKinds, want: RuleKind},
		{name: "clipboard not admitted", in: ClipboardSet{"x"}, kinds: controlKinds, want: RuleKind},
		{name: "no keys", in: Key{}, want: RuleKeyChord},
		{name: "modifier last", in: Key{[]string{"a", "Control"}}, want: RuleKeyChord},
		{name: "resize negative", in: Resize{Columns: -1, Rows: 2}, want: RuleResize},
		{name: "resize beyond 2^53", in: Resize{Columns: 1 << 60, Rows: 2}, want: RuleResize},
		{name: "clock zero", in: ClockAdvanced{}, want: RuleClockAdvanced},
		{name: "scroll without delta", in: Mouse{Action: MouseScroll}, want: RuleMouseDelta},
		{name: "press, bad button", in: Mouse{Action: MousePress, Button: "fourth"}, want: RuleMouseButton},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.in, tc.kinds...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if de := inputErr(t, err); de.Rule != tc.want {
				t.Fatalf("%v: rule %s, want %s", err, de.Rule, tc.want)
			}
		})
	}
}

// scriptLine is in's script line: its record payload without at_ms.
func scriptLine(tb testing.TB, in Input) []byte {
	tb.Helper()
	var a canon.Arena
	p := in.Payload(0, &a)
	var members []canon.Member
	for _, m := range p.Members {
		if m.Key != "at_ms" {
			members = append(members, m)
		}
	}
	v := canon.ObjectValue(canon.M("kind", canon.StringValue(in.Kind())), canon.M("payload", canon.ObjectValue(members...)))
	line, err := canon.Marshal(&v)
	if err != nil {
		tb.Fatalf("script line of %#v: %v", in, err)
	}
	return append(line, '\n')
}

// TestDecodeRecord: a record's payload carries at_ms, which a script line
// may not, and is otherwise held to the same rules.
func TestDecodeRecord(t *testing.T) {
	for _, in := range scriptCases[2].want {
		var a canon.Arena
		p := in.Payload(7, &a)
		got, err := DecodeRecord(in.Kind(), &p)
		if err != nil || !reflect.DeepEqual(got, in) {
			t.Fatalf("DecodeRecord(%s) = %#v, %v; want %#v", in.Kind(), got, err, in)
		}
	}
	bad := canon.ObjectValue(canon.M("at_ms", canon.IntValue(0)), canon.M("keys", canon.Value{Kind: canon.Array}))
	if _, err := DecodeRecord(KindKey, &bad); inputErr(t, err).Rule != RuleKeyChord {
		t.Fatalf("empty chord: %v", err)
	}
	if _, err := DecodeRecord("observation", &bad); inputErr(t, err).Rule != RuleKind {
		t.Fatalf("not an input: %v", err)
	}
	if _, err := DecodeRecord(KindMouse, &bad, controlKinds...); inputErr(t, err).Rule != RuleKind {
		t.Fatalf("kind not admitted: %v", err)
	}
}

// FuzzReadScript: ReadScript never panics and refuses only with an
// *Error; what it accepts re-encodes to the same inputs, each of which
// Check accepts. Seeded from TestReadScript's table. (That the transcript
// Writer records what it accepts is transcript's FuzzScriptRecorded.)
func FuzzReadScript(f *testing.F) {
	for _, tc := range scriptCases {
		f.Add([]byte(tc.script), tc.kinds != nil)
	}
	f.Fuzz(func(t *testing.T, data []byte, control bool) {
		var kinds []string
		if control {
			kinds = controlKinds
		}
		ins, err := ReadScript(bytes.NewReader(data), kinds...)
		if err != nil {
			inputErr(t, err)
			return
		}
		var script []byte
		for _, in := range ins {
			script = append(script, scriptLine(t, in)...)
		}
		again, err := ReadScript(bytes.NewReader(script), kinds...)
		if err != nil || !reflect.DeepEqual(again, ins) {
			t.Fatalf("re-encoded script:\n%s\ngives %#v, %v; want %#v", script, again, err, ins)
		}
		var c Checker
		for _, in := range ins {
			if err := c.Check(in, kinds...); err != nil {
				t.Fatalf("Check refused accepted input %#v: %v", in, err)
			}
		}
	})
}
