package transcript

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
)

// benchData returns the transcript named by $TRANSCRIPT_BENCH_FILE
// (scripts/bench-codec.sh generates a realistic ~30 MiB one), or a
// smaller one built here so that the benchmark also runs on its own.
func benchData(b testing.TB) []byte {
	b.Helper()
	if name := os.Getenv("TRANSCRIPT_BENCH_FILE"); name != "" {
		data, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	var out bytes.Buffer
	w := NewWriter(&out, "bench")
	mustWriteOpenEpoch(b, w)
	lines := make([]string, 24)
	for i := range lines {
		lines[i] = strings.Repeat("x", 80)
	}
	for w.Bytes() < 4<<20 {
		o := Observation{State: canon.StringValue("s"), Frame: &Frame{Lines: lines, Columns: 80, Rows: 24},
			Events: []Event{{Type: "terminal.output", Data: canon.StringValue("\x1b[31mred\x1b[0m\r\n")}}}
		if err := w.Observe(o); err != nil {
			b.Fatal(err)
		}
		if err := w.Input(input.Text{Text: "hello"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.FailBudget(nil); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}

// BenchmarkParse is the whole strict codec: framing, decoding, the
// canonical check and every semantic pass.
func BenchmarkParse(b *testing.B) {
	data := benchData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
