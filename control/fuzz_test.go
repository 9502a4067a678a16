package control

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// maxSeed keeps the multi-megabyte limit cases out of the fuzz corpus: the
// engine mutates every seed, and huge ones only slow it down. The limits
// themselves are pinned by TestParseRules.
const maxSeed = 4 << 10

func addSeeds(f *testing.F) {
	for _, tc := range ruleCases() {
		if len(tc.line) <= maxSeed {
			f.Add(tc.line)
		}
	}
	if corpusDir(f) == "" {
		return
	}
	for _, c := range loadCorpus(f) {
		if len(c.line) <= maxSeed {
			f.Add(c.line)
		}
	}
}

// FuzzParse: Parse never panics, every error is a peer-malformed *Error
// with a rule, and anything accepted encodes canonically and parses back to
// an equal message (roundTrip).
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			ce, ok := errors.AsType[*Error](err)
			if !ok || ce.Rule == "" || ce.Class != PeerMalformed {
				t.Fatalf("error %T %v is not a peer-malformed *Error", err, err)
			}
			return
		}
		if m.Kind().Direction() == 0 {
			t.Fatalf("accepted kind %q has no direction", m.Kind())
		}
		roundTrip(t, m)
	})
}

// FuzzReader: any byte stream, delivered in any chunking, never panics,
// always terminates, never holds more than one line, and yields for each
// line exactly what Parse says about it. A small line limit lets short
// inputs reach the over-limit and resynchronisation paths.
func FuzzReader(f *testing.F) {
	addSeeds(f)
	f.Add([]byte("a\n\n{}\n"))
	f.Add(bytes.Repeat([]byte("x"), 200))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, limit := range []int{48, 4 << 20} {
			var src io.Reader = bytes.NewReader(data)
			if len(data) > 0 && data[0]&1 == 1 {
				src = iotest.HalfReader(src)
			}
			r := newReader(src, limit)
			recycle := len(data) > 0 && data[0]&2 == 2
			// Each call consumes at least one byte or ends the stream.
			for calls := 0; ; calls++ {
				if calls > len(data)+1 {
					t.Fatalf("limit %d: %d calls for %d bytes", limit, calls, len(data))
				}
				if recycle {
					r.Recycle()
				}
				m, raw, err := r.Next()
				if cap(r.buf) > limit || r.Buffered() > limit {
					t.Fatalf("limit %d: buffer %d, buffered %d", limit, cap(r.buf), r.Buffered())
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if len(raw) > limit {
					t.Fatalf("limit %d: returned a %d-byte line", limit, len(raw))
				}
				if err != nil {
					if _, ok := errors.AsType[*Error](err); !ok {
						t.Fatalf("error %T %v is not an *Error", err, err)
					}
					if raw != nil {
						if _, perr := Parse(raw); perr == nil {
							t.Fatalf("Next rejected %q, which Parse accepts", raw)
						}
					}
					continue
				}
				want, perr := Parse(raw)
				if perr != nil || want.Kind() != m.Kind() {
					t.Fatalf("Next gave %s for %q, Parse gives %v", m.Kind(), raw, perr)
				}
				got, gerr := Encode(m)
				wantLine, werr := Encode(want)
				if !bytes.Equal(got, wantLine) || (gerr == nil) != (werr == nil) {
					t.Fatalf("Next (recycling %v) gave %q, Parse %q", recycle, got, wantLine)
				}
			}
		}
	})
}

// benchObservation is a typical epoch-closing observation: an 80×24
// frame, a few regions, events and some state, members in no particular
// order (2,622 bytes).
func benchObservation() []byte {
	var frame bytes.Buffer
	for i := range 24 {
		if i > 0 {
			frame.WriteByte(',')
		}
		frame.WriteString(`"` + string(bytes.Repeat([]byte{byte('a' + i%26)}, 80)) + `"`)
	}
	return line("observation", `{"state":{"screen":"editor","buffer":{"lines":3,"dirty":true},"history":[1,2,3]},`+
		`"ui":{"regions":[`+region("status")+`,`+region("main")+`,`+region("prompt")+`],"focus":"main","mode":"insert",`+cursor+`},`+
		`"events":[{"type":"terminal.output","data":{"chunk":"hello"}},{"type":"key","data":{"key":"Enter"}}],`+
		`"frame":{"lines":[`+frame.String()+`],"columns":80,"rows":24},"process":{"state":"running"}}`)
}

// BenchmarkParse parses benchObservation with a one-off Parse.
func BenchmarkParse(b *testing.B) {
	msg := benchObservation()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReaderRecycled reads benchObservation line after line through
// a Reader that recycles before each, as the supervisor's epochs do.
func BenchmarkReaderRecycled(b *testing.B) {
	msg := benchObservation()
	r := NewReader(&cycleReader{line: msg})
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		r.Recycle()
		if _, _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// cycleReader reads line over and over, without end.
type cycleReader struct {
	line []byte
	off  int
}

func (c *cycleReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k := copy(b[n:], c.line[c.off:])
		n += k
		c.off = (c.off + k) % len(c.line)
	}
	return n, nil
}

// BenchmarkEncode encodes an input, the adapter's per-epoch write.
func BenchmarkEncode(b *testing.B) {
	m := Text{Text: "hello, world"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}
