package transcript

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// decodeErr returns the *DecodeError of err and fails the test for any
// other error type.
func decodeErr(tb testing.TB, err error) *DecodeError {
	tb.Helper()
	de, ok := errors.AsType[*DecodeError](err)
	if !ok {
		tb.Fatalf("error %T is not a *DecodeError: %v", err, err)
	}
	return de
}

func mustValue(tb testing.TB, s string) canon.Value {
	tb.Helper()
	v, _, err := canon.Decode([]byte(strings.ReplaceAll(s, "\n", "")))
	if err != nil {
		tb.Fatalf("test JSON %q: %v", s, err)
	}
	return v
}

// TestDecodeSubject: the request form and the recorded form are read, and
// every refusal names the member and the rule.
func TestDecodeSubject(t *testing.T) {
	const sel = `"application":{"id":"app","version":"1","build":"b1"},"fixture":{"id":"fx","version":"1"},` +
		`"normalizer":{"id":"id","version":"1"},"state_schema":{"id":"st","version":"1"}`
	request := testSubject()
	request.Adapter = Selector{}
	withPlatform := request
	withPlatform.Platform = &Platform{OS: "linux", Architecture: "amd64"}
	cases := []struct {
		name     string
		json     string
		want     Subject
		wantPath string // "" accepts
	}{
		{name: "recorded form", json: subjectJSON, want: testSubject()},
		{name: "request form", json: `{` + sel + `}`, want: request},
		{name: "format given", json: `{"format":"termverify.replay-subject/v1",` + sel + `}`, want: request},
		{name: "platform", json: `{` + sel + `,"platform":{"os":"linux","architecture":"amd64"}}`, want: withPlatform},
		{name: "x- members", json: `{` + sel + `,"x-note":1}`, want: request},
		{name: "not an object", json: `{"s":[]}`, wantPath: "subject"},
		{name: "missing fixture", json: `{"application":{"id":"app","version":"1","build":"b1"},"normalizer":{"id":"id","version":"1"},"state_schema":{"id":"st","version":"1"}}`, wantPath: "subject"},
		{name: "unknown member", json: `{` + sel + `,"extra":1}`, wantPath: "subject"},
		{name: "other format", json: `{"format":"v2",` + sel + `}`, wantPath: "subject.format"},
		{name: "format not a string", json: `{"format":1,` + sel + `}`, wantPath: "subject.format"},
		{name: "bad id", json: strings.Replace(`{`+sel+`}`, `"fx"`, `"FX"`, 1), wantPath: "subject.fixture.id"},
		{name: "empty build", json: strings.Replace(`{`+sel+`}`, `"b1"`, `""`, 1), wantPath: "subject.application.build"},
		{name: "selector member", json: strings.Replace(`{`+sel+`}`, `"fx","version":"1"`, `"fx","version":"1","build":"b"`, 1), wantPath: "subject.fixture"},
		{name: "adapter not a selector", json: `{` + sel + `,"adapter":"x"}`, wantPath: "subject.adapter"},
		{name: "platform without os", json: `{` + sel + `,"platform":{"architecture":"amd64"}}`, wantPath: "subject.platform"},
		{name: "version a number", json: strings.Replace(`{`+sel+`}`, `"st","version":"1"`, `"st","version":1`, 1), wantPath: "subject.state_schema.version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mustValue(t, tc.json)
			if tc.name == "not an object" {
				v = *get(&v, "s")
			}
			got, err := DecodeSubject(&v)
			if tc.wantPath == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			de := decodeErr(t, err)
			if de.Rule != RuleSubject || de.Path != tc.wantPath {
				t.Fatalf("%v: rule %s path %q, want %s %q", err, de.Rule, de.Path, RuleSubject, tc.wantPath)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		if de := decodeErr(t, func() error { _, err := DecodeSubject(nil); return err }()); de.Path != "subject" {
			t.Fatalf("nil subject: %v", de)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		s := withPlatform
		s.Adapter = Selector{"termverify-sandbox", "0.1.0"}
		v := s.Value()
		got, err := DecodeSubject(&v)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("DecodeSubject(Value()) = %+v, %v; want %+v", got, err, s)
		}
	})
}

var controlKinds = []string{KindInputText, KindInputKey, KindInputResize, KindInputClock, KindInputStop}

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
		kinds: controlKinds, wantLine: 2, wantRule: RuleInputKind},
	{name: "clipboard not admitted", script: `{"kind":"input.clipboard_set","payload":{"text":"x"}}`, kinds: controlKinds, wantLine: 1, wantRule: RuleInputKind},
	{name: "not an input", script: `{"kind":"observation","payload":{}}`, wantLine: 1, wantRule: RuleInputKind},
	{name: "unknown input kind", script: `{"kind":"input.paste","payload":{}}`, wantLine: 1, wantRule: RuleInputKind},
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
	{name: "text not a string", script: `{"kind":"input.text","payload":{"text":1}}`, wantLine: 1, wantRule: RuleInputText},
	{name: "text missing", script: `{"kind":"input.text","payload":{}}`, wantLine: 1, wantRule: RuleInputText},
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
			de := decodeErr(t, err)
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
		if de := decodeErr(t, err); de.Line != 1 || de.Rule != canon.RuleLineBytes {
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
		if de := decodeErr(t, err); de.Rule != canon.RuleLineBytes {
			t.Fatalf("a %d-byte line: %v", canon.MaxLineBytes+1, err)
		}
	})
	t.Run("script over the limit", func(t *testing.T) {
		r := &endless{pattern: []byte(`{"kind":"input.text","payload":{"text":"a"}}` + "\n"), stop: canon.MaxTranscriptBytes + 1<<20}
		_, err := ReadScript(r)
		if de := decodeErr(t, err); de.Line != 0 || de.Rule != RuleTranscriptBytes {
			t.Fatalf("%v: want the whole script refused, %s", err, RuleTranscriptBytes)
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
		if _, ok := errors.AsType[*DecodeError](err); ok {
			t.Fatalf("an I/O error came back as a *DecodeError: %v", err)
		}
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// readyWriter returns a Writer past negotiation and readiness, so that it
// takes inputs.
func readyWriter(tb testing.TB, out io.Writer) *Writer {
	tb.Helper()
	w := NewWriter(out, testRunID)
	if err := w.Start(testConfig(tb), testSubject()); err != nil {
		tb.Fatal(err)
	}
	for _, c := range receipts.Constraints() {
		if err := w.Applied(c, receipts.OS, nil); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Observe(Observation{}); err != nil {
		tb.Fatal(err)
	}
	return w
}

// scriptLine is in's script line: its record payload without at_ms.
func scriptLine(tb testing.TB, in Input) []byte {
	tb.Helper()
	var a canon.Arena
	p := in.payload(0, &a)
	var members []canon.Member
	for _, m := range p.Members {
		if m.Key != "at_ms" {
			members = append(members, m)
		}
	}
	v := canon.ObjectValue(canon.M("kind", canon.StringValue(in.kind())), canon.M("payload", canon.ObjectValue(members...)))
	line, err := canon.Marshal(&v)
	if err != nil {
		tb.Fatalf("script line of %#v: %v", in, err)
	}
	return append(line, '\n')
}

// TestInputsRoundTrip: every input kind survives the script and the
// transcript: script lines → ReadScript → Writer → Parse → Inputs.
func TestInputsRoundTrip(t *testing.T) {
	ins := scriptCases[2].want
	var script []byte
	for _, in := range ins {
		script = append(script, scriptLine(t, in)...)
	}
	got, err := ReadScript(bytes.NewReader(script))
	if err != nil || !reflect.DeepEqual(got, ins) {
		t.Fatalf("ReadScript of the encoded script: %#v, %v", got, err)
	}
	var out bytes.Buffer
	w := readyWriter(t, &out)
	for _, in := range got {
		if err := w.Input(in); err != nil {
			t.Fatalf("Writer refused %#v: %v", in, err)
		}
		if err := w.Observe(Observation{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(Exit{Kind: ExitCode}); err != nil {
		t.Fatal(err)
	}
	tr, err := Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	back, err := tr.Inputs()
	if err != nil || !reflect.DeepEqual(back, ins) {
		t.Fatalf("Inputs: %#v, %v", back, err)
	}

	t.Run("kinds not admitted name the record", func(t *testing.T) {
		_, err := tr.Inputs(controlKinds...)
		e, ok := errors.AsType[*Error](err)
		if !ok || e.Rule != RuleInputKind || e.Kind != KindInputMouse || e.Record != 15 {
			t.Fatalf("%v: want record 15 (the first input.mouse) refused with %s", err, RuleInputKind)
		}
	})
	t.Run("a hand-built record is checked, never a crash", func(t *testing.T) {
		bad := &Transcript{Records: []Record{
			{Seq: 0, Kind: KindInputText, Value: canon.ObjectValue()},
			{Seq: 1, Kind: KindInputKey, Value: mustValue(t, `{"payload":{"keys":["x"]}}`)},
		}}
		_, err := bad.Inputs()
		if e, ok := errors.AsType[*Error](err); !ok || e.Record != 0 || e.Rule != RulePayloadMembers {
			t.Fatalf("record without payload: %v", err)
		}
		bad.Records = bad.Records[1:]
		_, err = bad.Inputs()
		if e, ok := errors.AsType[*Error](err); !ok || e.Record != 1 || e.Rule != RuleKeyChord {
			t.Fatalf("bad chord: %v", err)
		}
	})
}

// TestCheckInput: typed inputs are held to the rules a script line is.
func TestCheckInput(t *testing.T) {
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
		{name: "nil", in: nil, want: RuleInputKind},
		{name: "mouse not admitted", in: Mouse{Action: MouseMove}, kinds: controlKinds, want: RuleInputKind},
		{name: "clipboard not admitted", in: ClipboardSet{"x"}, kinds: controlKinds, want: RuleInputKind},
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
			err := CheckInput(tc.in, tc.kinds...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if de := decodeErr(t, err); de.Rule != tc.want {
				t.Fatalf("%v: rule %s, want %s", err, de.Rule, tc.want)
			}
		})
	}
}

// FuzzReadScript: ReadScript never panics and refuses only with a
// *DecodeError; what it accepts re-encodes to the same inputs and is
// recorded by the Writer. Seeded from TestReadScript's table.
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
			decodeErr(t, err)
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
		w := readyWriter(t, io.Discard)
		var clock int64
		for _, in := range ins {
			if err := CheckInput(in, kinds...); err != nil {
				t.Fatalf("CheckInput refused accepted input %#v: %v", in, err)
			}
			if c, ok := in.(ClockAdvanced); ok {
				// The sum of the deltas can pass 2^53, which no
				// transcript can record; each delta alone is checked.
				if clock += c.DeltaMS; clock > canon.MaxSafeInteger-100 {
					return
				}
			}
			if err := w.Input(in); err != nil {
				if errors.Is(err, ErrBudget) {
					return
				}
				t.Fatalf("the Writer refused accepted input %#v: %v", in, err)
			}
			if err := w.Observe(Observation{}); err != nil {
				if errors.Is(err, ErrBudget) {
					return
				}
				t.Fatal(err)
			}
		}
	})
}

// FuzzDecodeSubject: DecodeSubject never panics, refuses only with a
// *DecodeError, and what it accepts re-encodes to the same subject.
func FuzzDecodeSubject(f *testing.F) {
	f.Add([]byte(subjectJSON))
	f.Add([]byte(`{"application":{"id":"a","version":"1","build":"b"},"fixture":{"id":"f","version":"1"},"normalizer":{"id":"n","version":"1"},"state_schema":{"id":"s","version":"1"},"platform":{"os":"linux","architecture":"arm64"},"x-a":{}}`))
	f.Add([]byte(`{"format":"x","application":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _, err := canon.Decode(data)
		if err != nil {
			return
		}
		s, err := DecodeSubject(&v)
		if err != nil {
			decodeErr(t, err)
			return
		}
		if s.Adapter == (Selector{}) {
			s.Adapter = Selector{"termverify-sandbox", "0.1.0"} // Value always writes one
		}
		out := s.Value()
		again, err := DecodeSubject(&out)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-encoded subject gives %+v, %v; want %+v", again, err, s)
		}
	})
}
