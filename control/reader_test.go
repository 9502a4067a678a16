package control

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// step is what one Reader.Next call should give.
type step struct {
	kind Kind   // valid message of this kind
	rule string // or an *Error with this rule
	raw  string // expected raw bytes, when set
	eof  bool   // or io.EOF
}

func readAll(t *testing.T, r *Reader, want []step) {
	t.Helper()
	for i, w := range want {
		m, raw, err := r.Next()
		switch {
		case w.eof:
			if !errors.Is(err, io.EOF) {
				t.Fatalf("step %d: got %v, %v; want io.EOF", i, m, err)
			}
		case w.rule != "":
			ce, ok := errors.AsType[*Error](err)
			if !ok || ce.Rule != w.rule {
				t.Fatalf("step %d: got error %v, want rule %s", i, err, w.rule)
			}
		default:
			if err != nil || m.Kind() != w.kind {
				t.Fatalf("step %d: got %v, %v; want %s", i, m, err, w.kind)
			}
		}
		if w.raw != "" && string(raw) != w.raw {
			t.Fatalf("step %d: raw %q, want %q", i, raw, w.raw)
		}
	}
}

func TestReader(t *testing.T) {
	stop := string(line("input.stop", "{}"))
	text := string(line("input.text", `{"text":"hi"}`))
	tests := []struct {
		name  string
		input string
		want  []step
	}{
		{"empty", "", []step{{eof: true}, {eof: true}}},
		{"two messages", stop + text, []step{{kind: KindInputStop, raw: stop}, {kind: KindInputText, raw: text}, {eof: true}}},
		{"bad line does not stop the stream", "nope\n" + stop, []step{{rule: canon.RuleSyntax, raw: "nope\n"}, {kind: KindInputStop}, {eof: true}}},
		{"blank line", "\n" + stop, []step{{rule: canon.RuleSyntax}, {kind: KindInputStop}, {eof: true}}},
		{"truncated last line", stop + `{"protocol"`, []step{{kind: KindInputStop}, {rule: RuleMissingLF, raw: `{"protocol"`}, {eof: true}}},
		{"CR in truncated last line", "{\r", []step{{rule: RuleCR}, {eof: true}}},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
		"data+EOF": iotest.DataErrReader,
	}
	for _, tc := range tests {
		for rname, wrap := range readers {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				readAll(t, NewReader(wrap(strings.NewReader(tc.input))), tc.want)
			})
		}
	}
}

// TestReaderBuffered checks that a message the subject already sent is
// visible before Next is asked for it: the supervisor's idle-traffic check.
// TestReaderRecycle reads with Recycle before every message, as the
// supervisor does: each message is what Parse makes of its line.
func TestReaderRecycle(t *testing.T) {
	lines := []string{
		string(line("observation", `{"state":{"b":[1,2.5,"\u00e9"],"a":null},"ui":{"regions":[{"id":"r","role":"x","column":0,"row":0,"columns":1,"rows":1}],"cursor":{"column":0,"row":0,"visible":true}},"events":[{"type":"key","data":{"k":"\n"}}]}`)),
		string(line("diagnostic", `{"code":"c","message":"m","details":{"z":1,"y":[true]}}`)),
		string(line("observation", `{"state":"`+strings.Repeat("s", 70000)+`","ui":{"regions":[],"cursor":{"column":0,"row":0,"visible":false}},"events":[]}`)),
		string(line("run.finished", `{"exit":{"kind":"code","value":3}}`)),
	}
	var stream strings.Builder
	for range 3 {
		for _, l := range lines {
			stream.WriteString(l)
		}
	}
	r := NewReader(strings.NewReader(stream.String()))
	for i := range 3 * len(lines) {
		r.Recycle()
		m, raw, err := r.Next()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		want := lines[i%len(lines)]
		if string(raw) != want {
			t.Fatalf("message %d: raw %.80q, want %.80q", i, raw, want)
		}
		p, err := Parse([]byte(want))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := Encode(m)
		wantLine, _ := Encode(p)
		if !bytes.Equal(got, wantLine) {
			t.Fatalf("message %d: recycled Next gave %.200s, Parse %.200s", i, got, wantLine)
		}
	}
}

func TestReaderBuffered(t *testing.T) {
	stop := line("input.stop", "{}")
	r := NewReader(bytes.NewReader(append(append([]byte{}, stop...), stop...)))
	if r.Buffered() != 0 {
		t.Fatalf("Buffered %d before any read", r.Buffered())
	}
	if _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if got := r.Buffered(); got != len(stop) {
		t.Fatalf("Buffered %d after the first message, want %d", got, len(stop))
	}
	if _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if got := r.Buffered(); got != 0 {
		t.Fatalf("Buffered %d after both messages, want 0", got)
	}
}

// countingReader is an endless stream of one byte that counts what it
// served: the flood a defective subject can write.
type countingReader struct {
	b    byte
	read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.b
	}
	c.read += len(p)
	return len(p), nil
}

// TestReaderFlood checks that a stream with no LF is cut off at the limit:
// the error arrives, and no more than one line's worth was read or held.
func TestReaderFlood(t *testing.T) {
	src := &countingReader{b: 'a'}
	r := NewReader(src)
	_, raw, err := r.Next()
	ce, ok := errors.AsType[*Error](err)
	if !ok || ce.Rule != RuleLineBytes || ce.Class != PeerMalformed {
		t.Fatalf("got %v, want %s", err, RuleLineBytes)
	}
	if raw != nil {
		t.Fatalf("over-limit line returned %d raw bytes", len(raw))
	}
	if limit := canon.MaxLineBytes + 1; src.read > limit || cap(r.buf) > limit {
		t.Fatalf("read %d bytes, buffer %d; limit %d", src.read, cap(r.buf), limit)
	}
}

// TestReaderLimits checks the exact line bound and resynchronisation after
// an over-limit line.
func TestReaderLimits(t *testing.T) {
	stop := line("input.stop", "{}")
	atLimit := padded(canon.MaxLineBytes)
	over := padded(canon.MaxLineBytes + 1)
	input := bytes.Join([][]byte{atLimit, over, stop}, nil)
	r := NewReader(iotest.HalfReader(bytes.NewReader(input)))
	readAll(t, r, []step{{kind: KindInputStop}, {rule: RuleLineBytes}, {kind: KindInputStop, raw: string(stop)}, {eof: true}})

	// Over the limit and then end of stream with no LF: the error, then EOF.
	r = NewReader(bytes.NewReader(over[:len(over)-1]))
	readAll(t, r, []step{{rule: RuleLineBytes}, {eof: true}})
}

// TestReaderErrors checks that the underlying reader's errors pass through.
func TestReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	stop := line("input.stop", "{}")
	r := NewReader(io.MultiReader(bytes.NewReader(stop), bytes.NewReader([]byte(`{"par`)), iotest.ErrReader(boom)))
	if _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // sticky
		if _, _, err := r.Next(); !errors.Is(err, boom) {
			t.Fatalf("got %v, want %v", err, boom)
		}
	}
	r = NewReader(zeroReader{})
	if _, _, err := r.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// TestCheck checks the per-line verdicts behind `control check`.
func TestCheck(t *testing.T) {
	input := string(line("input.stop", "{}")) + "x\n" + string(line("observation", obs("", "")))
	var got []Verdict
	valid, err := Check(strings.NewReader(input), func(v Verdict) { got = append(got, v) })
	if err != nil || valid {
		t.Fatalf("valid %v, err %v; want false, nil", valid, err)
	}
	if len(got) != 3 || got[0].Kind != KindInputStop || got[1].Err == nil || got[1].Line != 2 || got[2].Kind != KindObservation {
		t.Fatalf("verdicts %+v", got)
	}
	valid, err = Check(strings.NewReader(""), func(Verdict) { t.Fatal("verdict for empty input") })
	if err != nil || !valid {
		t.Fatalf("empty input: valid %v, err %v", valid, err)
	}
	boom := errors.New("boom")
	if _, err := Check(iotest.ErrReader(boom), func(Verdict) {}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}
