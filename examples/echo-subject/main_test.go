package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// asMain makes the test binary run main instead of the tests, so TestProcess
// (and daemon's re-executions, which inherit it) need no separate build.
const asMain = "ECHO_SUBJECT_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// peer is the adapter side of an in-process subject, over synchronous pipes.
type peer struct {
	t      *testing.T
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	lines  chan []byte // one message per item, LF included; closed at EOF
	exit   chan int    // Run's status
	stderr *syncBuffer
	cancel context.CancelFunc
	aborts chan struct{} // one item per Abort call
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// maxTestLine caps what the reader collects of one line: flood has none.
const maxTestLine = 5 << 20

// start runs the subject in-process with args and the given environment.
func start(t *testing.T, env []string, args ...string) *peer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{
		t: t, stdin: inW, stdout: outR, lines: make(chan []byte, 1), exit: make(chan int, 1),
		stderr: &syncBuffer{}, cancel: cancel, aborts: make(chan struct{}, 1),
	}
	opts := Options{
		Args: args, Environ: env, Dir: "/app",
		Stdin: inR, Stdout: outW, Stderr: p.stderr,
		Abort:     func() { p.aborts <- struct{}{}; cancel() },
		Daemonize: func() error { return nil },
	}
	done := make(chan struct{}) // closed at cleanup: stop delivering lines
	var wg sync.WaitGroup
	wg.Go(func() {
		p.exit <- Run(ctx, opts)
		outW.Close()
	})
	wg.Go(func() {
		defer close(p.lines)
		r := bufio.NewReader(outR)
		for {
			var line []byte
			for {
				chunk, err := r.ReadSlice('\n')
				line = append(line, chunk...)
				if err == nil || len(line) > maxTestLine {
					break
				}
				if !errors.Is(err, bufio.ErrBufferFull) {
					return
				}
			}
			select {
			case p.lines <- line:
			case <-done:
				return
			}
			if len(line) > maxTestLine {
				return
			}
		}
	})
	t.Cleanup(func() {
		close(done)
		cancel()
		inW.Close()
		outR.Close()
		wg.Wait()
	})
	return p
}

// send writes one adapter message.
func (p *peer) send(kind string, payload any) {
	p.t.Helper()
	line, err := encode(envelope{Kind: kind, Payload: payload, Protocol: protocol})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(line); err != nil {
		p.t.Fatalf("write %s: %v", kind, err)
	}
}

func (p *peer) hello(columns, rows int) {
	p.t.Helper()
	p.send("session.hello", map[string]any{"run_id": "test-run", "at_ms": 1000, "config": testConfig(columns, rows)})
}

func testConfig(columns, rows int) map[string]any {
	return map[string]any{
		"seed":       "42",
		"clock":      map[string]any{"mode": "manual", "initial_ms": 1000},
		"locale":     "en-US",
		"timezone":   "UTC",
		"terminal":   map[string]any{"columns": columns, "rows": rows, "capabilities": []string{}},
		"filesystem": map[string]any{"mode": "sandbox", "root_id": "app"},
		"network":    map[string]any{"mode": "deny"},
	}
}

// msg is a decoded subject message.
type msg struct {
	Protocol string         `json:"protocol"`
	Kind     string         `json:"kind"`
	Payload  map[string]any `json:"payload"`
	raw      []byte
}

// recv reads the next message and checks its framing and envelope.
func (p *peer) recv() msg {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("recv: end of stream")
		}
		m, err := decodeMsg(line)
		if err != nil {
			p.t.Fatalf("recv: %v: %.200s", err, line)
		}
		return m
	case <-time.After(5 * time.Second):
		p.t.Fatal("recv: no message in 5s")
	}
	return msg{}
}

func decodeMsg(line []byte) (msg, error) {
	var m msg
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 || bytes.ContainsRune(line, '\r') {
		return m, errors.New("not one LF-terminated line")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return m, err
	}
	if len(members) != 3 {
		return m, errors.New("envelope members are not exactly protocol, kind, payload")
	}
	for name, v := range map[string]any{"protocol": &m.Protocol, "kind": &m.Kind, "payload": &m.Payload} {
		if err := json.Unmarshal(members[name], v); err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
	}
	if m.Protocol != protocol || m.Payload == nil {
		return m, errors.New("bad envelope")
	}
	m.raw = line
	return m, nil
}

// quiet checks that nothing arrives for a short while.
func (p *peer) quiet() {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if ok {
			p.t.Fatalf("unexpected message: %.200s", line)
		}
		p.t.Fatal("unexpected end of stream")
	case <-time.After(50 * time.Millisecond):
	}
}

// eof checks that the subject's stdout ends and returns its exit status.
func (p *peer) eof() int {
	p.t.Helper()
	for line := range p.lines {
		p.t.Fatalf("unexpected message before end of stream: %.200s", line)
	}
	select {
	case code := <-p.exit:
		return code
	case <-time.After(5 * time.Second):
		p.t.Fatal("subject did not return")
	}
	return -1
}

// unread checks that the subject does not read its stdin: on a synchronous
// pipe a write then blocks (until cleanup closes the pipe).
func (p *peer) unread() {
	p.t.Helper()
	wrote := make(chan struct{})
	go func() { p.stdin.Write([]byte("{}\n")); close(wrote) }()
	select {
	case <-wrote:
		p.t.Fatal("the subject read its stdin")
	case <-time.After(50 * time.Millisecond):
	}
}

func (p *peer) text(s string) { p.t.Helper(); p.send("input.text", map[string]any{"text": s}) }
func (p *peer) stop()         { p.t.Helper(); p.send("input.stop", map[string]any{}) }

// observation returns the observation of a session.ready or observation
// message, checking the parts every observation must have.
func observationOf(t *testing.T, m msg) map[string]any {
	t.Helper()
	o := m.Payload
	if m.Kind == "session.ready" {
		o, _ = m.Payload["observation"].(map[string]any)
	} else if m.Kind != "observation" {
		t.Fatalf("kind %s, want an observation", m.Kind)
	}
	for _, k := range []string{"state", "ui", "events"} {
		if _, ok := o[k]; !ok {
			t.Fatalf("observation without %s", k)
		}
	}
	return o
}

func stateOf(t *testing.T, m msg) map[string]any {
	t.Helper()
	s, ok := observationOf(t, m)["state"].(map[string]any)
	if !ok {
		t.Fatalf("state is not an object: %.200s", m.raw)
	}
	return s
}

// checkFrame checks the frame is exactly columns × rows.
func checkFrame(t *testing.T, m msg, columns, rows int) []string {
	t.Helper()
	f, _ := observationOf(t, m)["frame"].(map[string]any)
	raw, _ := f["lines"].([]any)
	if f["columns"] != float64(columns) || f["rows"] != float64(rows) || len(raw) != rows {
		t.Fatalf("frame %vx%v with %d lines, want %dx%d", f["columns"], f["rows"], len(raw), columns, rows)
	}
	lines := make([]string, len(raw))
	for i, l := range raw {
		lines[i] = l.(string)
		if n := len([]rune(lines[i])); n != columns {
			t.Fatalf("frame line %d has %d columns, want %d: %q", i, n, columns, lines[i])
		}
	}
	return lines
}

var testEnv = []string{
	"TERMVERIFY_SEED=42", "TERMVERIFY_CLOCK_INITIAL_MS=1000", "TERMVERIFY_LOCALE=en-US",
	"TZ=UTC0", "TERMVERIFY_TIMEZONE=UTC", "TERMVERIFY_FS_ROOT=/app", "TERMVERIFY_NETWORK=deny",
	"HOME=/nonexistent", "PATH=/usr/bin",
}

// wellBehaved drives one whole session and returns the raw transcript.
func wellBehaved(t *testing.T) []byte {
	p := start(t, testEnv)
	var out bytes.Buffer
	p.hello(80, 24)
	ready := p.recv()
	out.Write(ready.raw)
	if ready.Kind != "session.ready" {
		t.Fatalf("first reply %s, want session.ready", ready.Kind)
	}
	checkFrame(t, ready, 80, 24)
	st := stateOf(t, ready)
	if st["now_ms"] != 1000.0 || st["columns"] != 80.0 || st["rows"] != 24.0 || st["cwd"] != "/app" || st["seed"] != "42" {
		t.Errorf("ready state %v", st)
	}
	env, _ := st["env"].(map[string]any)
	if env["TERMVERIFY_NETWORK"] != "deny" || env["TZ"] != "UTC0" || env["HOME"] != nil || len(env) != 7 {
		t.Errorf("delivered env %v", env)
	}

	steps := []struct {
		kind    string
		payload map[string]any
		check   func(st map[string]any, lines []string) bool
		columns int
		rows    int
	}{
		{"input.text", map[string]any{"text": "hello"}, func(st map[string]any, lines []string) bool {
			return st["text"] == "hello" && strings.HasPrefix(lines[1], "> hello ")
		}, 80, 24},
		{"input.key", map[string]any{"keys": []string{"Control", "c"}}, func(st map[string]any, lines []string) bool {
			k, _ := st["last_key"].([]any)
			return len(k) == 2 && k[0] == "Control" && strings.HasPrefix(lines[2], "key: Control+c ")
		}, 80, 24},
		{"input.resize", map[string]any{"columns": 100, "rows": 30}, func(st map[string]any, _ []string) bool {
			return st["columns"] == 100.0 && st["rows"] == 30.0
		}, 100, 30},
		{"input.clock", map[string]any{"at_ms": 1250}, func(st map[string]any, lines []string) bool {
			return st["now_ms"] == 1250.0 && strings.HasPrefix(lines[0], "t=1250ms ")
		}, 100, 30},
	}
	for _, s := range steps {
		p.send(s.kind, s.payload)
		m := p.recv()
		out.Write(m.raw)
		if m.Kind != "observation" {
			t.Fatalf("%s: reply %s, want observation", s.kind, m.Kind)
		}
		if !s.check(stateOf(t, m), checkFrame(t, m, s.columns, s.rows)) {
			t.Errorf("%s: observation %s", s.kind, m.raw)
		}
	}
	p.stop()
	for _, want := range []string{"observation", "run.finished"} {
		m := p.recv()
		out.Write(m.raw)
		if m.Kind != want {
			t.Fatalf("stop drain: %s, want %s", m.Kind, want)
		}
	}
	if code := p.eof(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	return out.Bytes()
}

func TestWellBehaved(t *testing.T) {
	first := wellBehaved(t)
	if !bytes.Contains(first, []byte(`"run.finished","payload":{"exit":{"kind":"code","value":0}}`)) {
		t.Errorf("run.finished does not claim exit code 0")
	}
	if again := wellBehaved(t); !bytes.Equal(first, again) {
		t.Error("two sessions with the same inputs differ")
	}
}

// TestExampleScript drives the subject with the bundled request and input
// script, translated to the wire the way the supervisor does.
func TestExampleScript(t *testing.T) {
	var req struct {
		RunID  string         `json:"run_id"`
		Config map[string]any `json:"config"`
	}
	data, err := os.ReadFile("../request.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	initial := int64(req.Config["clock"].(map[string]any)["initial_ms"].(float64))
	p := start(t, testEnv)
	p.send("session.hello", map[string]any{"run_id": req.RunID, "config": req.Config, "at_ms": initial})
	if m := p.recv(); m.Kind != "session.ready" {
		t.Fatalf("reply %s", m.Kind)
	}
	script, err := os.ReadFile("../inputs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	now := initial
	for i, line := range strings.Split(strings.TrimSuffix(string(script), "\n"), "\n") {
		var in struct {
			Kind    string         `json:"kind"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("inputs.jsonl line %d: %v", i+1, err)
		}
		kind, payload := in.Kind, in.Payload
		if kind == "input.clock_advanced" {
			now += int64(payload["delta_ms"].(float64))
			kind, payload = "input.clock", map[string]any{"at_ms": now}
		}
		p.send(kind, payload)
		if kind == "input.stop" {
			p.recv()
			if m := p.recv(); m.Kind != "run.finished" {
				t.Fatalf("after stop: %s", m.Kind)
			}
			if code := p.eof(); code != 0 {
				t.Fatalf("exit %d", code)
			}
			return
		}
		if m := p.recv(); m.Kind != "observation" {
			t.Fatalf("inputs.jsonl line %d: reply %s", i+1, m.Kind)
		}
	}
	t.Fatal("inputs.jsonl does not end with input.stop")
}

func TestModes(t *testing.T) {
	readyThenText := func(p *peer) {
		p.hello(20, 5)
		if m := p.recv(); m.Kind != "session.ready" {
			p.t.Fatalf("reply %s, want session.ready", m.Kind)
		}
		p.text("x")
	}
	tests := []struct {
		args []string
		run  func(*peer)
	}{
		{[]string{"silent"}, func(p *peer) { p.hello(20, 5); p.quiet() }},
		{[]string{"hang"}, func(p *peer) { readyThenText(p); p.quiet() }},
		{[]string{"deaf"}, func(p *peer) { p.unread() }},
		{[]string{"deaf-after-ready"}, func(p *peer) {
			p.hello(20, 5)
			p.recv()
			p.unread()
		}},
		{[]string{"crash"}, func(p *peer) {
			readyThenText(p)
			<-p.aborts
		}},
		{[]string{"exit-idle"}, func(p *peer) {
			readyThenText(p)
			if m := p.recv(); m.Kind != "observation" {
				p.t.Fatalf("reply %s", m.Kind)
			}
			if code := p.eof(); code != 0 {
				p.t.Fatalf("exit %d, want 0", code)
			}
		}},
		{[]string{"exit-mid-epoch", "5"}, func(p *peer) {
			readyThenText(p)
			if code := p.eof(); code != 5 {
				p.t.Fatalf("exit %d, want 5", code)
			}
		}},
		{[]string{"wrong-exit"}, func(p *peer) {
			readyThenText(p)
			p.recv()
			p.stop()
			p.recv()
			if m := p.recv(); !strings.Contains(string(m.raw), `"value":7`) {
				p.t.Fatalf("run.finished %s", m.raw)
			}
			if code := p.eof(); code != 0 {
				p.t.Fatalf("exit %d, want 0", code)
			}
		}},
		{[]string{"diagnostics", "101"}, func(p *peer) {
			readyThenText(p)
			for i := range 101 {
				if m := p.recv(); m.Kind != "diagnostic" {
					p.t.Fatalf("message %d: %s, want diagnostic", i, m.Kind)
				}
			}
			if m := p.recv(); m.Kind != "observation" {
				p.t.Fatalf("after diagnostics: %s", m.Kind)
			}
		}},
		{[]string{"diagnostics", "3", "hello"}, func(p *peer) {
			p.hello(20, 5)
			for _, want := range []string{"diagnostic", "diagnostic", "diagnostic", "session.ready"} {
				if m := p.recv(); m.Kind != want {
					p.t.Fatalf("%s, want %s", m.Kind, want)
				}
			}
		}},
		{[]string{"idle-message"}, func(p *peer) {
			p.hello(20, 5)
			p.recv()
			if m := p.recv(); m.Kind != "observation" {
				p.t.Fatalf("%s, want an idle observation", m.Kind)
			}
		}},
		{[]string{"second-ready"}, func(p *peer) {
			readyThenText(p)
			if m := p.recv(); m.Kind != "session.ready" {
				p.t.Fatalf("%s, want a second session.ready", m.Kind)
			}
		}},
		{[]string{"wrong-kind"}, func(p *peer) {
			readyThenText(p)
			if m := p.recv(); m.Kind != "input.text" {
				p.t.Fatalf("%s, want input.text (an adapter's kind)", m.Kind)
			}
		}},
		{[]string{"early-observation"}, func(p *peer) {
			p.hello(20, 5)
			for _, want := range []string{"observation", "session.ready"} {
				if m := p.recv(); m.Kind != want {
					p.t.Fatalf("%s, want %s", m.Kind, want)
				}
			}
		}},
		{[]string{"idle-diagnostic"}, func(p *peer) {
			readyThenText(p)
			for _, want := range []string{"observation", "diagnostic"} {
				if m := p.recv(); m.Kind != want {
					p.t.Fatalf("%s, want %s", m.Kind, want)
				}
			}
		}},
		{[]string{"after-finish"}, func(p *peer) {
			readyThenText(p)
			p.recv()
			p.stop()
			for _, want := range []string{"observation", "run.finished", "diagnostic"} {
				if m := p.recv(); m.Kind != want {
					p.t.Fatalf("%s, want %s", m.Kind, want)
				}
			}
		}},
		{[]string{"diagnostic-then-failed"}, func(p *peer) {
			p.hello(20, 5)
			for _, want := range []string{"diagnostic", "session.failed"} {
				if m := p.recv(); m.Kind != want {
					p.t.Fatalf("%s, want %s", m.Kind, want)
				}
			}
		}},
		{[]string{"exited-observation"}, func(p *peer) {
			readyThenText(p)
			o := observationOf(p.t, p.recv())
			if pr, _ := o["process"].(map[string]any); pr["state"] != "exited" {
				p.t.Fatalf("process %v", o["process"])
			}
		}},
		{[]string{"unsupported"}, func(p *peer) {
			p.hello(20, 5)
			m := p.recv()
			if m.Kind != "session.unsupported" || m.Payload["constraint"] != "terminal" || m.Payload["code"] != "constraint-unsupported" {
				p.t.Fatalf("%s", m.raw)
			}
			p.eof()
		}},
		{[]string{"failed"}, func(p *peer) {
			p.hello(20, 5)
			if m := p.recv(); m.Kind != "session.failed" {
				p.t.Fatalf("%s", m.raw)
			}
			if code := p.eof(); code != 1 {
				p.t.Fatalf("exit %d, want 1", code)
			}
		}},
		{[]string{"stderr"}, func(p *peer) {
			readyThenText(p)
			p.recv()
			if n := strings.Count(p.stderr.String(), "\n"); n != 6 {
				p.t.Fatalf("%d stderr lines, want 6", n)
			}
		}},
		{[]string{"flood"}, func(p *peer) {
			readyThenText(p)
			if line := <-p.lines; len(line) <= maxTestLine || bytes.Contains(line, []byte("\n")) {
				p.t.Fatalf("flood gave a %d-byte line", len(line))
			}
		}},
		{[]string{"flood-lines"}, func(p *peer) {
			readyThenText(p)
			for range 2 {
				m := p.recv()
				if n := len(m.raw) - 1; m.Kind != "observation" || n > maxLine || n < maxLine-6 {
					p.t.Fatalf("%s of %d bytes, want an observation of 4 MiB", m.Kind, n)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			tc.run(start(t, nil, tc.args...))
		})
	}
}

// TestMalformedModes checks each bad line is what its name says, in both
// positions.
func TestMalformedModes(t *testing.T) {
	checks := map[string]func(line []byte) bool{
		"bad-json":         func(l []byte) bool { return !json.Valid(l) },
		"oversized":        func(l []byte) bool { return len(l)-1 > maxLine && len(l)-1 < maxLine+2048 && json.Valid(l) },
		"duplicate-member": func(l []byte) bool { return bytes.Contains(l, []byte(`"state":{"text":"a","text":"b"}`)) },
		"lone-surrogate":   func(l []byte) bool { return bytes.Contains(l, []byte(`"state":{"text":"\ud800"}`)) },
		"big-int":          func(l []byte) bool { return bytes.Contains(l, []byte(`"state":{"n":9007199254740992}`)) },
	}
	for name, ok := range checks {
		for _, atHello := range []bool{false, true} {
			args := []string{name}
			if atHello {
				args = append(args, "hello")
			}
			t.Run(strings.Join(args, "_"), func(t *testing.T) {
				p := start(t, nil, args...)
				p.hello(20, 5)
				if !atHello {
					if m := p.recv(); m.Kind != "session.ready" {
						t.Fatalf("reply %s", m.Kind)
					}
					p.text("x")
				}
				line := <-p.lines
				if !ok(line) {
					t.Fatalf("line is not %s: %.300s", name, line)
				}
			})
		}
	}
}

// TestProcess runs the program (the test binary as main) for what only a real process shows:
// a death by SIGABRT, exit statuses, and a surviving setsid daemon.
func TestProcess(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := encode(envelope{Kind: "session.hello", Protocol: protocol,
		Payload: map[string]any{"run_id": "r", "at_ms": 0, "config": testConfig(10, 2)}})
	text, _ := encode(envelope{Kind: "input.text", Protocol: protocol, Payload: map[string]any{"text": "x"}})
	stop, _ := encode(envelope{Kind: "input.stop", Protocol: protocol, Payload: map[string]any{}})
	run := func(stdin []byte, args ...string) (*os.ProcessState, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), asMain+"=1")
		cmd.Stdin = bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		_ = cmd.Run()
		return cmd.ProcessState, stdout.String(), stderr.String()
	}
	script := bytes.Join([][]byte{hello, text, stop}, nil)

	t.Run("crash", func(t *testing.T) {
		ps, _, _ := run(script, "crash")
		ws := ps.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
			t.Fatalf("status %v, want death by SIGABRT", ps)
		}
	})
	t.Run("exit-mid-epoch", func(t *testing.T) {
		ps, out, _ := run(script, "exit-mid-epoch", "9")
		if ps.ExitCode() != 9 || strings.Count(out, "\n") != 1 {
			t.Fatalf("status %v, %d lines, want 9 after session.ready only", ps, strings.Count(out, "\n"))
		}
	})
	t.Run("wrong-exit", func(t *testing.T) {
		ps, out, _ := run(script, "wrong-exit")
		if ps.ExitCode() != 0 || !strings.Contains(out, `"exit":{"kind":"code","value":7}`) {
			t.Fatalf("status %v, output %s", ps, out)
		}
	})
	t.Run("daemon", func(t *testing.T) {
		ps, out, errOut := run(script, "daemon")
		if ps.ExitCode() != 0 || !strings.Contains(out, "run.finished") {
			t.Fatalf("status %v, output %s", ps, out)
		}
		_, rest, ok := strings.Cut(errOut, "daemon pid ")
		pid, err := strconv.Atoi(strings.TrimSpace(rest))
		if !ok || err != nil {
			t.Fatalf("no daemon pid on stderr: %q", errOut)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if sid, err := getsid(pid); err != nil || sid != pid {
			t.Fatalf("daemon %d: session %d, %v; want a session of its own", pid, sid, err)
		}
	})
}

// getsid reads the session id of a live process from /proc.
func getsid(pid int) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	_, after, _ := bytes.Cut(data, []byte(") "))
	fields := strings.Fields(string(after)) // state ppid pgrp session ...
	if len(fields) < 4 {
		return 0, errors.New("short /proc stat")
	}
	return strconv.Atoi(fields[3])
}
