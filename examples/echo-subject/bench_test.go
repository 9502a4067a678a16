package main

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// BenchmarkEpoch is the subject's own cost of one epoch (read an input,
// render and write the observation), fed a whole script at once so that
// no pipe round trip is counted: key chords on a 20×2 terminal, as the
// supervisor's BenchmarkEpochs sends.
func BenchmarkEpoch(b *testing.B) {
	const n = 4900
	var script bytes.Buffer
	script.WriteString(`{"kind":"session.hello","payload":{"at_ms":0,"config":{"clock":{"initial_ms":0,"mode":"manual"},"filesystem":{"mode":"sandbox","root_id":"app"},"locale":"en-US","network":{"mode":"deny"},"seed":"42","terminal":{"capabilities":[],"columns":20,"rows":2},"timezone":"UTC"},"run_id":"bench"},"protocol":"termverify.control/v1"}` + "\n")
	for range n {
		script.WriteString(`{"kind":"input.key","payload":{"keys":["Control","c"]},"protocol":"termverify.control/v1"}` + "\n")
	}
	script.WriteString(`{"kind":"input.stop","payload":{},"protocol":"termverify.control/v1"}` + "\n")
	env := []string{"TERMVERIFY_SEED=42", "TZ=UTC", "PATH=/usr/bin:/bin"}
	b.ReportAllocs()
	epochs := 0
	for b.Loop() {
		code := Run(context.Background(), Options{Environ: env, Dir: "/app",
			Stdin: bytes.NewReader(script.Bytes()), Stdout: io.Discard, Stderr: io.Discard})
		if code != 0 {
			b.Fatalf("exit status %d", code)
		}
		epochs += n
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(epochs), "ns/epoch")
}
