package supervisor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/receipts"
)

// BenchmarkEpochs measures whole runs of 4,900 epochs (the most a
// transcript holds) with the Go echo subject; it reports epochs/s.
func BenchmarkEpochs(b *testing.B) {
	for _, iso := range []receipts.Isolation{receipts.IsolationNone, receipts.IsolationOS} {
		b.Run(string(iso), func(b *testing.B) {
			if env.buildErr != nil {
				b.Fatal(env.buildErr)
			}
			const n = 4900
			inputs := make([]input.Input, n)
			for i := range inputs {
				inputs[i] = input.Key{Keys: []string{"Control", "c"}}
			}
			dir := b.TempDir()
			var epochs int
			var loop time.Duration // the epochs phase alone, from the evidence
			cpu0 := selfCPU()
			for b.Loop() {
				req := benchRequest(iso, inputs, filepath.Join(dir, "t.jsonl"))
				req.EvidencePath = filepath.Join(dir, "evidence.json")
				// A small terminal: the echo subject draws a full frame in
				// every observation, and its size is the subject's cost.
				req.Config.Terminal.Columns, req.Config.Terminal.Rows = 20, 2
				res, err := Run(context.Background(), req)
				if err != nil || !res.Succeeded() {
					b.Fatalf("%v %+v", err, res)
				}
				epochs += n
				loop += epochsPhase(b, req.EvidencePath)
			}
			b.ReportMetric(float64(epochs)/b.Elapsed().Seconds(), "epochs/s")
			// The supervisor's own CPU (this process, user + system) per
			// epoch; the subject is a child and not counted.
			b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/float64(epochs), "cpu-µs/epoch")
			// Without the sandbox's start and teardown (~70-100 ms a run).
			b.ReportMetric(float64(epochs)/loop.Seconds(), "loop-epochs/s")
		})
	}
}

// selfCPU is the user and system CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// epochsPhase is the duration of a run's epochs phase in its evidence.
func epochsPhase(b *testing.B, path string) time.Duration {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var ev struct {
		Phases []Phase `json:"phases"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		b.Fatal(err)
	}
	for _, p := range ev.Phases {
		if p.Name == "epochs" {
			return time.Duration(p.Micros) * time.Microsecond
		}
	}
	b.Fatalf("%s: no epochs phase", path)
	return 0
}

// pingEnv makes the test binary the trivial peer of BenchmarkPipeRoundTrip.
const pingEnv = "TV_SUPERVISOR_TEST_PING"

// pingReply is the size of the echo subject's observation at 20×2.
const pingReply = 650

// pingChild answers every read from stdin with one pingReply-byte line,
// with blocking reads and writes and no work: a subject that costs nothing.
func pingChild() int {
	buf := make([]byte, 4096)
	reply := make([]byte, pingReply)
	for i := range reply {
		reply[i] = 'x'
	}
	reply[pingReply-1] = '\n'
	for {
		if n, err := os.Stdin.Read(buf); n == 0 || err != nil {
			return 0
		}
		if _, err := os.Stdout.Write(reply); err != nil {
			return 1
		}
	}
}

// BenchmarkPipeRoundTrip is the floor under BenchmarkEpochs: one short
// line to a child process and one pingReply-byte line back, over the
// supervisor's own pipes and pipeIO, with a Go child that does nothing
// else. Every op is one round trip.
func BenchmarkPipeRoundTrip(b *testing.B) {
	p, err := openPipes(&plan{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), pingEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.childIn, p.childOut, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.closeChild()
	line := []byte(`{"kind":"input.key","payload":{"keys":["Control","c"]},"protocol":"termverify.control/v1"}` + "\n")
	buf := make([]byte, 64<<10)
	for b.Loop() {
		if _, err := p.io.write(context.Background(), line); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < pingReply; {
			n, err := p.io.read(buf)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	_ = p.stdin.Close()
	p.stdin = nil
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEchoRoundTrip is the Go echo subject with nothing of the
// supervisor around it: the same pipes and pipeIO, a hello and the key
// input BenchmarkEpochs sends, and the reply read up to its newline with
// no decoding, validation or recording. Its ns/op is the shortest epoch
// any supervisor could have with this subject on this machine; the rest
// of BenchmarkEpochs' epoch is the supervisor's own work.
func BenchmarkEchoRoundTrip(b *testing.B) {
	if env.buildErr != nil {
		b.Fatal(env.buildErr)
	}
	p, err := openPipes(&plan{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	cmd := exec.Command(filepath.Join(env.root, "echo-subject"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.childIn, p.childOut, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.closeChild()
	buf := make([]byte, 64<<10)
	// exchange writes one line and reads until the reply's newline.
	exchange := func(line string) {
		if _, err := p.io.write(context.Background(), []byte(line+"\n")); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := p.io.read(buf)
			if err != nil {
				b.Fatal(err)
			}
			if n > 0 && buf[n-1] == '\n' {
				return
			}
		}
	}
	exchange(`{"kind":"session.hello","payload":{"at_ms":0,"config":{"clock":{"initial_ms":0,"mode":"manual"},"filesystem":{"mode":"sandbox","root_id":"app"},"locale":"en-US","network":{"mode":"deny"},"seed":"42","terminal":{"capabilities":[],"columns":20,"rows":2},"timezone":"UTC"},"run_id":"bench"},"protocol":"termverify.control/v1"}`)
	key := `{"kind":"input.key","payload":{"keys":["Control","c"]},"protocol":"termverify.control/v1"}`
	for b.Loop() {
		exchange(key)
	}
	_ = p.stdin.Close()
	p.stdin = nil
	_ = cmd.Wait()
}

// echoObservation is the echo subject's reply to a key input at 20×2, as it
// writes it (canonical, 636 bytes).
const echoObservation = `{"kind":"observation","payload":{"events":[{"data":{"keys":["Control","c"]},"type":"key"}],"frame":{"columns":20,"lines":["t=0ms 20x2 echo-subj",">                   "],"rows":2},"state":{"columns":20,"cwd":"/work/main","draw":189983,"env":{"LANG":"C.UTF-8"},"inputs":1,"last_key":["Control","c"],"now_ms":0,"rows":2,"run_id":"bench","seed":"42","text":""},"ui":{"cursor":{"column":2,"row":1,"visible":true},"focus":"input","mode":"insert","regions":[{"column":0,"columns":20,"id":"status","role":"status","row":0,"rows":1},{"column":0,"columns":20,"id":"input","role":"textbox","row":1,"rows":1}]}},"protocol":"termverify.control/v1"}` + "\n"

// repeatReader returns line over and over.
type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		c := copy(b[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

// BenchmarkEpochWork is the supervisor's own CPU work per epoch with no
// I/O and no subject: record the input, encode the next one, read and
// parse the observation from a buffer, record it. Every op is one epoch;
// a fresh transcript is started every 4,900 epochs (outside the timer).
func BenchmarkEpochWork(b *testing.B) {
	// An Input, as the session holds its script (Request.Inputs): boxing
	// a Key per call would count an allocation no run makes.
	var in input.Input = input.Key{Keys: []string{"Control", "c"}}
	var (
		s      *session
		c      *pipeConn
		epochs int
	)
	begin := func() {
		c = &pipeConn{io: &pipeIO{}, rd: control.NewReader(&repeatReader{line: []byte(echoObservation)})}
		s = &session{rec: &recorder{w: readyWriter(b, "bench")}, conn: c, wire: c}
		epochs = 0
	}
	ctx := context.Background()
	begin()
	b.ReportAllocs()
	for b.Loop() {
		if epochs == 4900 {
			b.StopTimer()
			begin()
			b.StartTimer()
		}
		epochs++
		s.input = epochs
		c.recorded()
		if err := s.rec.input(in); err != nil {
			b.Fatal(err)
		}
		c.prepare(in)
		m, _, err := c.next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.rec.observe(m.obs); err != nil {
			b.Fatal(err)
		}
	}
}
