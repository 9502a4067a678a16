package report_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/transcripttest"
	"github.com/termverify/termverify-sandbox/report"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// bigPTY is a PTY-mode transcript of epochs epochs on an 80×24 terminal,
// each redrawing the whole screen in eight colours with bold and
// underline: the worst case for the styled rendering (a span every few
// cells, every line changed). Its frames come from vt, as PTY mode's do.
func bigPTY(b *testing.B, epochs int) *transcript.Transcript {
	b.Helper()
	var buf bytes.Buffer
	w := transcript.NewWriter(&buf, "bench")
	check := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	transcripttest.Begin(b, w, 80, 24, true)
	emu := vt.New(vt.Config{Cols: 80, Rows: 24})
	for e := 0; e < epochs; e++ {
		if e > 0 {
			check(w.Input(input.Key{Keys: []string{"Enter"}}))
		}
		var out strings.Builder
		out.WriteString("\x1b[H")
		for r := 0; r < 24; r++ {
			for c := 0; c < 10; c++ {
				fmt.Fprintf(&out, "\x1b[%d;%dm%-7s\x1b[0m ", 31+(r+c+e)%7, 1+3*((r+c)%2), fmt.Sprintf("e%dr%d", e, r))
			}
			if r < 23 {
				out.WriteString("\r\n")
			}
		}
		_, _ = emu.WriteString(out.String())
		cur := emu.Cursor()
		check(w.Observe(transcript.Observation{State: canon.ObjectValue(),
			Events:  []transcript.Event{{Type: "terminal.output", Data: canon.ObjectValue(canon.M("chunk", canon.StringValue(out.String())))}},
			UI:      transcript.UI{Cursor: transcript.Cursor{Row: int64(cur.Row), Column: int64(cur.Col), Visible: true}},
			Frame:   &transcript.Frame{Lines: emu.Lines(), Columns: 80, Rows: 24},
			Process: &transcript.Process{}}))
	}
	check(w.Finish(transcript.Exit{Kind: transcript.ExitCode}))
	check(w.Close())
	tr, err := transcript.Parse(buf.Bytes())
	check(err)
	return tr
}

// BenchmarkWriteRuns: the report of one PTY run of 1,000 full-screen
// colour epochs (docs/BENCHMARKS.md).
func BenchmarkWriteRuns(b *testing.B) {
	tr := bigPTY(b, 1000)
	var n countWriter
	if err := report.WriteRuns(&n, []report.Run{{Name: "big", Transcript: tr}}); err != nil {
		b.Fatal(err)
	}
	if strings.Contains(string(runsOf(b, tr)), "does not reproduce") {
		b.Fatal("the benchmark's frames are not reproduced: it would measure the plain path")
	}
	b.ResetTimer()
	for b.Loop() {
		if err := report.WriteRuns(io.Discard, []report.Run{{Name: "big", Transcript: tr}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "page-bytes")
}

func runsOf(b *testing.B, tr *transcript.Transcript) []byte {
	var buf bytes.Buffer
	if err := report.WriteRuns(&buf, []report.Run{{Name: "big", Transcript: tr}}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
