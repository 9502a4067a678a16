package supervisor

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// PTY mode's benchmarks (docs/BENCHMARKS.md "PTY mode",
// scripts/bench-pty.sh), each beside its control/v1 yardstick: cat on
// the sandbox's terminal against the Go echo subject over pipes, both
// sandboxed (--isolation os) at 20×2.

// ptyBenchEpochs is how many keystroke lines BenchmarkPTYRun types into
// cat in one run: a PTY epoch costs milliseconds where a control/v1 one
// costs tens of microseconds, so fewer than BenchmarkEpochs' 4,900.
const ptyBenchEpochs = 500

// catLine is the PTY benchmarks' input: a keystroke and Enter, which the
// line discipline echoes and cat copies back once it reads the line.
var catLine input.Input = input.Text{Text: "x\n"}

// echoKey is the control/v1 yardstick's input, as BenchmarkEpochs sends.
var echoKey input.Input = input.Key{Keys: []string{"Control", "c"}}

// benchPTYRequest is benchRequest for cat on the sandbox's terminal.
func benchPTYRequest(inputs []input.Input, out string) Request {
	req := benchRequest(receipts.IsolationOS, inputs, out)
	req.PTY, req.Args = true, []string{"cat"}
	req.Config.Terminal.Columns, req.Config.Terminal.Rows = 20, 2
	return req
}

// BenchmarkPTYRun is BenchmarkEpochs for PTY mode: whole runs of
// supervisor.Run typing ptyBenchEpochs lines into cat in the sandbox.
// loop-epochs/s is the epochs phase of the evidence alone; the control/v1
// yardstick is BenchmarkEpochs/os.
func BenchmarkPTYRun(b *testing.B) {
	if env.buildErr != nil {
		b.Fatal(env.buildErr)
	}
	inputs := make([]input.Input, ptyBenchEpochs)
	for i := range inputs {
		inputs[i] = catLine
	}
	dir := b.TempDir()
	var epochs int
	var loop time.Duration
	cpu0 := selfCPU()
	for b.Loop() {
		req := benchPTYRequest(inputs, filepath.Join(dir, "t.jsonl"))
		req.EvidencePath = filepath.Join(dir, "evidence.json")
		res, err := Run(context.Background(), req)
		noteSandboxes(res.Sandboxes)
		if err != nil || res.Outcome != transcript.KindRunFinished {
			b.Fatalf("%v %+v", err, res)
		}
		epochs += len(inputs)
		loop += epochsPhase(b, req.EvidencePath)
	}
	b.ReportMetric(float64(epochs)/b.Elapsed().Seconds(), "epochs/s")
	b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/float64(epochs), "cpu-µs/epoch")
	b.ReportMetric(float64(epochs)/loop.Seconds(), "loop-epochs/s")
}

// benchSession is a started sandbox with its session past the handshake,
// as Run has it before its epochs, writing its transcript nowhere.
type benchSession struct {
	b     *testing.B
	req   *plan
	ev    *evidence
	rec   *recorder
	st    streams
	s     *session
	inner func() // what launch left to close
	epoch int
}

func startBenchSession(b *testing.B, req Request) *benchSession {
	b.Helper()
	req.Transcript = io.Discard
	p, err := newPlan(req)
	if err != nil {
		b.Fatal(err)
	}
	bs := &benchSession{b: b, req: p, ev: newEvidence(&p.Request)}
	out, err := openOutput(nil, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	bs.rec = newRecorder(out, p.RunID)
	if err := bs.rec.start(p.Config, p.Subject); err != nil {
		b.Fatal(err)
	}
	if bs.st, err = p.adapter.open(p); err != nil {
		b.Fatal(err)
	}
	l, box, end := launch(context.Background(), p, bs.st.child(), bs.rec, bs.ev)
	bs.st.closeChild()
	noteSandboxes(bs.ev.sandboxes)
	if end != nil {
		<-teardown(box, bs.ev, nil)
		b.Fatalf("launch: %+v", end)
	}
	bs.rec.outcome = l.outcome
	c, end := p.adapter.connect(context.Background(), p, box, bs.st, bs.rec)
	if end != nil {
		<-teardown(box, bs.ev, nil)
		b.Fatalf("connect: %+v", end)
	}
	bs.s = newSession(bs.rec, box, c, &p.Request)
	bs.inner = func() {
		bs.s.close()
		<-teardown(box, bs.ev, nil)
		bs.st.finish(p, bs.ev)
		bs.st.close()
	}
	if end := bs.s.handshake(context.Background()); end != nil {
		bs.inner()
		b.Fatalf("handshake: %+v", end)
	}
	return bs
}

// step runs one epoch of in, as runEpochs does.
func (bs *benchSession) step(in input.Input) {
	bs.epoch++
	bs.s.input = bs.epoch
	pctx, cancel := context.WithTimeoutCause(context.Background(), bs.req.Deadlines.Epoch, errEpochDeadline)
	end := bs.s.epoch(pctx, in, in)
	cancel()
	if end != nil {
		bs.inner()
		bs.b.Fatalf("epoch %d: %+v", bs.epoch, end)
	}
}

// stop ends the run with input.stop and checks that it finished.
func (bs *benchSession) stop() {
	bs.epoch++
	bs.s.input = bs.epoch
	// step prepared its input again as the next one (control/v1 encodes
	// it ahead, sendfirst.go): the next one is input.stop instead.
	if bs.s.wire != nil {
		bs.s.wire.prepare(input.Stop{})
	}
	pctx, cancel := context.WithTimeoutCause(context.Background(), bs.req.Deadlines.Epoch, errEpochDeadline)
	end := bs.s.end(bs.s.epoch(pctx, input.Stop{}, nil))
	cancel()
	bs.inner()
	res, err := bs.rec.finish(end)
	if err != nil || res.Outcome != transcript.KindRunFinished {
		bs.b.Fatalf("stop: %v %+v", err, res)
	}
}

// BenchmarkEpochLatency times single epochs of a sandboxed run, each as
// the session runs it (record the last observation and the input, send
// the input, wait for the epoch to close): control, the Go echo subject
// over control/v1 pipes (the yardstick); pty, a keystroke line typed into
// cat on the sandbox's terminal, closed when quiesce sees cat read again.
// Every op is one epoch; p50-ms and p99-ms are the epochs' latency. A
// new run is started (outside the timer) every 2,000 epochs, within the
// transcript's record limit.
func BenchmarkEpochLatency(b *testing.B) {
	cases := []struct {
		name string
		req  func() Request
		in   input.Input
	}{
		{"control", func() Request {
			req := benchRequest(receipts.IsolationOS, []input.Input{echoKey}, "")
			req.Config.Terminal.Columns, req.Config.Terminal.Rows = 20, 2
			return req
		}, echoKey},
		{"pty", func() Request { return benchPTYRequest([]input.Input{catLine}, "") }, catLine},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if env.buildErr != nil {
				b.Fatal(env.buildErr)
			}
			var lat []time.Duration
			var bs *benchSession
			cpu0 := selfCPU()
			for b.Loop() {
				if bs == nil || bs.epoch >= 2000 {
					b.StopTimer()
					if bs != nil {
						bs.stop()
					}
					bs = startBenchSession(b, c.req())
					b.StartTimer()
				}
				t0 := time.Now()
				bs.step(c.in)
				lat = append(lat, time.Since(t0))
			}
			cpu := selfCPU() - cpu0
			if bs != nil {
				bs.stop()
			}
			slices.Sort(lat)
			q := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
			}
			b.ReportMetric(q(0.50), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "epochs/s")
			// The supervisor's CPU per epoch (the subject's not counted),
			// sandbox starts included: small next to a PTY epoch's.
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-µs/epoch")
		})
	}
}
