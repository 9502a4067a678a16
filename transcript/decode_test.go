package transcript

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
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
				v = *canon.Lookup(&v, "s")
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
func scriptLine(tb testing.TB, in input.Input) []byte {
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

// everyKind is one input of every kind (two mice).
var everyKind = []input.Input{input.Text{Text: "héllo"}, input.Key{Keys: []string{"Control", "c"}}, input.Resize{Columns: 100, Rows: 30},
	input.Mouse{Action: input.MousePress, Row: 2, Button: "left"}, input.Mouse{Action: input.MouseScroll, Column: 1, Row: 2, Delta: -3},
	input.ClipboardSet{}, input.ClockAdvanced{DeltaMS: 250}, input.Stop{}}

// TestInputsRoundTrip: every input kind survives the script and the
// transcript: script lines → input.ReadScript → Writer → Parse → Inputs.
func TestInputsRoundTrip(t *testing.T) {
	ins := everyKind
	var script []byte
	for _, in := range ins {
		script = append(script, scriptLine(t, in)...)
	}
	got, err := input.ReadScript(bytes.NewReader(script))
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

// FuzzScriptRecorded: what input.ReadScript accepts, the Writer records
// (input.FuzzReadScript checks the reader on its own).
func FuzzScriptRecorded(f *testing.F) {
	var every []byte
	for _, in := range everyKind {
		every = append(every, scriptLine(f, in)...)
	}
	f.Add(every, false)
	f.Add([]byte(`{"kind":"input.text","payload":{"text":"a","x-n":1}}`+"\n"+`{"payload":{"keys":["Enter"]},"kind":"input.key"}`), true)
	f.Add([]byte(`{"kind":"input.mouse","payload":{"action":"move","column":1,"row":1}}`), true)
	f.Add([]byte(`{"kind":"input.clock_advanced","payload":{"delta_ms":9007199254740991}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, control bool) {
		var kinds []string
		if control {
			kinds = controlKinds
		}
		ins, err := input.ReadScript(bytes.NewReader(data), kinds...)
		if err != nil {
			return
		}
		w := readyWriter(t, io.Discard)
		var clock int64
		for _, in := range ins {
			if c, ok := in.(input.ClockAdvanced); ok {
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

// TestInputRuleIDs: the rules an input script shares with the records
// keep one id, so a script line is refused for the reason its record
// would be. (The input payload rules are input's constants outright.)
func TestInputRuleIDs(t *testing.T) {
	for _, c := range []struct{ script, record string }{
		{input.RulePayloadMembers, RulePayloadMembers},
		{input.RuleAfterStop, RuleAfterStop},
		{input.RuleScriptBytes, RuleTranscriptBytes},
	} {
		if c.script != c.record {
			t.Errorf("input says %q where the transcript says %q", c.script, c.record)
		}
	}
}
