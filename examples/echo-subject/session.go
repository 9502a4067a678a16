package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const protocol = "termverify.control/v1"

// Options is everything Run takes from its process, so tests can run a
// subject in-process over pipes.
type Options struct {
	Args    []string // command-line arguments after the program name: [mode [N] [hello]]
	Environ []string // KEY=value pairs, as os.Environ returns them
	Dir     string   // the working directory, reported in the state
	Stdin   io.Reader
	Stdout  io.Writer // each message is one Write call: nothing is buffered
	Stderr  io.Writer

	Abort     func()       // crash mode: kill the process with SIGABRT
	Daemonize func() error // daemon mode: leave a setsid grandchild behind
}

// exitCode ends a session with the given process exit status.
type exitCode int

func (c exitCode) Error() string { return "exit status " + strconv.Itoa(int(c)) }

// Run speaks termverify.control/v1 on o.Stdin and o.Stdout until the
// session ends, and returns the process exit status. It returns early, with
// status 1, when ctx is done while a mode blocks forever.
func Run(ctx context.Context, o Options) int {
	name := ""
	if len(o.Args) > 0 {
		name = o.Args[0]
	}
	m, ok := modes[name]
	if !ok {
		fmt.Fprintf(o.Stderr, "echo-subject: unknown mode %q (see examples/README.md)\n", name)
		return 2
	}
	s := &session{ctx: ctx, opts: o, mode: m, in: bufio.NewReader(o.Stdin)}
	s.env = s.delivered()
	envJSON, err := encode(s.env)
	if err == nil {
		s.envJSON = envJSON[:len(envJSON)-1] // without the LF
		err = s.run()
	}
	if c, ok := errors.AsType[exitCode](err); ok {
		return int(c)
	}
	if err != nil {
		fmt.Fprintln(o.Stderr, "echo-subject:", err)
		return 1
	}
	return 0
}

// session is one run of the subject: the wire, the mode, and the state the
// observations report.
type session struct {
	ctx  context.Context
	opts Options
	mode mode
	in   *bufio.Reader

	runID      string
	columns    int
	rows       int
	nowMS      int64
	text       string
	lastKey    []string
	inputs     int
	seed       string
	draw       uint64
	event      event // the current epoch's event
	diagnostic int   // diagnostics sent so far, for unique messages

	env     map[string]string // the delivered environment, fixed for the run
	envJSON []byte            // env as encoding/json writes it
	out     []byte            // the line being written, reused
}

// run is the well-behaved session; each mode hook replaces one step.
func (s *session) run() error {
	if h := s.mode.start; h != nil {
		if err := h(s); err != nil {
			return err
		}
	}
	if err := s.handshake(); err != nil {
		return err
	}
	reply := (*session).ready
	if h := s.mode.hello; h != nil {
		reply = h
	}
	if err := reply(s); err != nil {
		return err
	}
	if h := s.mode.afterReady; h != nil {
		if err := h(s); err != nil {
			return err
		}
	}
	for epoch := 0; ; epoch++ {
		if epoch%16 == 0 {
			// A goroutine that only ever blocks in read(2) never passes
			// through the scheduler: once it has "run" for 10 ms, sysmon
			// takes its P at every 20 µs tick while it waits for input and
			// wakes another thread for it, which costs every epoch a futex
			// wakeup and a thread hop. Yielding now and then keeps sysmon
			// backed off.
			runtime.Gosched()
		}
		kind, err := s.input()
		if err == io.EOF {
			return nil // the adapter hung up: nothing left to answer
		}
		if err != nil {
			return s.fail("run.failed", err)
		}
		if h := s.mode.epoch; h != nil {
			if err := h(s); err != nil {
				return err
			}
		}
		switch {
		case kind == "input.stop" && s.mode.stop != nil:
			return s.mode.stop(s)
		case kind == "input.stop":
			return s.finish(0)
		case epoch == 0 && s.mode.first != nil:
			err = s.mode.first(s)
		default:
			err = s.observe()
		}
		if err != nil {
			return err
		}
	}
}

// hello is the session.hello payload, as far as this subject reads it.
type hello struct {
	RunID  string `json:"run_id"`
	AtMS   int64  `json:"at_ms"`
	Config struct {
		Seed     string `json:"seed"`
		Terminal struct {
			Columns int `json:"columns"`
			Rows    int `json:"rows"`
		} `json:"terminal"`
	} `json:"config"`
}

// handshake reads session.hello and takes the run's starting state from it.
// A bad hello is answered with session.failed.
func (s *session) handshake() error {
	var h hello
	kind, payload, err := s.read()
	if err == nil && kind != "session.hello" {
		err = fmt.Errorf("expected session.hello, got %s", kind)
	}
	if err == nil {
		err = json.Unmarshal(payload, &h)
	}
	if err == nil && (h.Config.Terminal.Columns <= 0 || h.Config.Terminal.Rows <= 0) {
		err = errors.New("session.hello: terminal size must be positive")
	}
	if err != nil {
		return s.fail("session.failed", err)
	}
	s.runID, s.nowMS = h.RunID, h.AtMS
	s.columns, s.rows = h.Config.Terminal.Columns, h.Config.Terminal.Rows
	// The seed is the delivered one (upstream's TERMVERIFY_SEED); the hello
	// config is the fallback for an adapter that does not deliver it.
	s.seed = s.getenv("TERMVERIFY_SEED")
	if s.seed == "" {
		s.seed = h.Config.Seed
	}
	seed, _ := strconv.ParseUint(s.seed, 10, 64)
	s.draw = rand.NewPCG(seed, 0).Uint64() % 1_000_000
	s.event = event{Type: "ready", Data: runIDData{RunID: s.runID}}
	return nil
}

// inputPayload is an input's payload, as far as this subject reads it.
type inputPayload struct {
	Text    *string  `json:"text"`
	Keys    []string `json:"keys"`
	Columns int      `json:"columns"`
	Rows    int      `json:"rows"`
	AtMS    *int64   `json:"at_ms"`
}

// input reads the next input and applies it to the state.
func (s *session) input() (kind string, err error) {
	kind, payload, err := s.read()
	if err != nil {
		return "", err
	}
	p, ok := fastPayload(payload)
	if !ok {
		// An unnamed struct, so that a decoding error reads as it always
		// has ("Go struct field .keys").
		var q struct {
			Text    *string  `json:"text"`
			Keys    []string `json:"keys"`
			Columns int      `json:"columns"`
			Rows    int      `json:"rows"`
			AtMS    *int64   `json:"at_ms"`
		}
		if err := json.Unmarshal(payload, &q); err != nil {
			return "", fmt.Errorf("%s: %w", kind, err)
		}
		p = inputPayload(q)
	}
	s.inputs++
	switch {
	case kind == "input.text" && p.Text != nil:
		s.text += *p.Text
		s.event = event{Type: "text", Data: textData{Text: *p.Text}}
	case kind == "input.key" && len(p.Keys) > 0:
		s.lastKey = p.Keys
		s.event = event{Type: "key", Data: keysData{Keys: p.Keys}}
	case kind == "input.resize" && p.Columns > 0 && p.Rows > 0:
		s.columns, s.rows = p.Columns, p.Rows
		s.event = event{Type: "resize", Data: sizeData{Columns: p.Columns, Rows: p.Rows}}
	case kind == "input.clock" && p.AtMS != nil:
		s.nowMS = *p.AtMS
		s.event = event{Type: "clock", Data: clockData{AtMS: s.nowMS}}
	case kind == "input.stop":
		s.event = event{Type: "stop", Data: inputsData{Inputs: s.inputs}}
	default:
		return "", fmt.Errorf("unexpected or malformed %s", kind)
	}
	return kind, nil
}

// read reads one message and checks its envelope. The payload is valid
// until the next read.
func (s *session) read() (kind string, payload []byte, err error) {
	line, err := s.readLine()
	if err == io.EOF && len(line) == 0 {
		return "", nil, io.EOF
	}
	if err != nil && err != io.EOF {
		return "", nil, err
	}
	if kind, payload, ok := splitMessage(line); ok {
		return kind, payload, nil
	}
	var env struct {
		Protocol string          `json:"protocol"`
		Kind     string          `json:"kind"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return "", nil, fmt.Errorf("malformed message: %w", err)
	}
	if env.Protocol != protocol || env.Payload == nil {
		return "", nil, fmt.Errorf("not a %s message", protocol)
	}
	return env.Kind, env.Payload, nil
}

// readLine is bufio.Reader.ReadBytes('\n') without a copy for a line that
// fits the buffer: the line is valid until the next read.
func (s *session) readLine() ([]byte, error) {
	line, err := s.in.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	long := bytes.Clone(line)
	for err == bufio.ErrBufferFull {
		line, err = s.in.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

// Wire shapes, with members declared in RFC 8785 order (sorted), so
// encoding/json writes them the way a canonical peer would.
type (
	envelope struct {
		Kind     string `json:"kind"`
		Payload  any    `json:"payload"`
		Protocol string `json:"protocol"`
	}
	observation struct {
		Events  []event  `json:"events"`
		Frame   *frame   `json:"frame,omitempty"`
		Process *process `json:"process,omitempty"`
		State   any      `json:"state"`
		UI      ui       `json:"ui"`
	}
	event struct {
		Data any    `json:"data"`
		Type string `json:"type"`
	}
	frame struct {
		Columns int      `json:"columns"`
		Lines   []string `json:"lines"`
		Rows    int      `json:"rows"`
	}
	process struct {
		Exit  *exitRecord `json:"exit,omitempty"`
		State string      `json:"state"`
	}
	exitRecord struct {
		Kind  string `json:"kind"`
		Value int    `json:"value"`
	}
	ui struct {
		Cursor  cursor   `json:"cursor"`
		Focus   *string  `json:"focus"`
		Mode    *string  `json:"mode"`
		Regions []region `json:"regions"`
	}
	cursor struct {
		Column  int  `json:"column"`
		Row     int  `json:"row"`
		Visible bool `json:"visible"`
	}
	region struct {
		Column  int    `json:"column"`
		Columns int    `json:"columns"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		Row     int    `json:"row"`
		Rows    int    `json:"rows"`
	}
	failure struct {
		Code    string `json:"code"`
		Details any    `json:"details,omitempty"`
		Message string `json:"message"`
	}

	// stateDoc is the observation's state; its members are in sorted
	// order, as encoding/json writes a map's.
	stateDoc struct {
		Columns int               `json:"columns"`
		Cwd     string            `json:"cwd"`
		Draw    uint64            `json:"draw"`
		Env     map[string]string `json:"env"`
		Inputs  int               `json:"inputs"`
		LastKey []string          `json:"last_key"` // null until the first key
		NowMS   int64             `json:"now_ms"`
		Rows    int               `json:"rows"`
		RunID   string            `json:"run_id"`
		Seed    string            `json:"seed"`
		Text    string            `json:"text"`

		envJSON []byte // Env as encoding/json writes it
	}

	// The data of each event type.
	runIDData struct {
		RunID string `json:"run_id"`
	}
	textData struct {
		Text string `json:"text"`
	}
	keysData struct {
		Keys []string `json:"keys"`
	}
	sizeData struct {
		Columns int `json:"columns"`
		Rows    int `json:"rows"`
	}
	clockData struct {
		AtMS int64 `json:"at_ms"`
	}
	inputsData struct {
		Inputs int `json:"inputs"`
	}
)

// send writes one message as one line in a single Write, so the adapter sees
// it at once: the transport is a pipe and nothing here buffers.
func (s *session) send(kind string, payload any) error {
	line, err := appendMessage(s.out[:0], kind, payload)
	if err != nil {
		return err
	}
	s.out = line
	return s.write(line)
}

func (s *session) write(line []byte) error {
	_, err := s.opts.Stdout.Write(line)
	return err
}

// encode is encoding/json without HTML escaping; maps come out with sorted
// keys, which for the ASCII keys used here is RFC 8785 order.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the LF
		return nil, err
	}
	return b.Bytes(), nil
}

// ready answers the hello with session.ready.
func (s *session) ready() error {
	return s.send("session.ready", map[string]any{"observation": s.observation()})
}

// observe closes the current epoch with the state's observation.
func (s *session) observe() error { return s.send("observation", s.observation()) }

// finish is the stop drain: a final observation, then run.finished claiming
// exit code claim. The session then ends with exit status 0.
func (s *session) finish(claim int) error {
	if err := s.observe(); err != nil {
		return err
	}
	return s.send("run.finished", map[string]any{"exit": exitRecord{Kind: "code", Value: claim}})
}

// fail reports err as session.failed (during the handshake) or run.failed
// and ends the session with status 1.
func (s *session) fail(kind string, err error) error {
	msg := failure{Code: "echo-subject-bad-input", Message: err.Error()}
	if serr := s.send(kind, map[string]any{"error": msg}); serr != nil {
		return serr
	}
	return exitCode(1)
}

// observation renders the current state.
func (s *session) observation() observation {
	focus, mode := "input", "insert"
	regions := []region{{ID: "status", Role: "status", Columns: s.columns, Rows: 1}}
	cur := cursor{Column: min(2+utf8.RuneCountInString(s.text), s.columns-1), Row: 1, Visible: true}
	if s.rows > 1 {
		regions = append(regions, region{ID: "input", Role: "textbox", Row: 1, Columns: s.columns, Rows: s.rows - 1})
	} else {
		focus, cur.Row = "status", 0
	}
	return observation{
		Events: []event{s.event},
		Frame:  s.frame(),
		State:  s.state(),
		UI:     ui{Cursor: cur, Focus: &focus, Mode: &mode, Regions: regions},
	}
}

func (s *session) state() *stateDoc {
	return &stateDoc{
		Columns: s.columns,
		Cwd:     s.opts.Dir,
		Draw:    s.draw,
		Env:     s.env,
		Inputs:  s.inputs,
		LastKey: s.lastKey,
		NowMS:   s.nowMS,
		Rows:    s.rows,
		RunID:   s.runID,
		Seed:    s.seed,
		Text:    s.text,
		envJSON: s.envJSON,
	}
}

// frame draws the state on a rows × columns surface; columns count runes.
func (s *session) frame() *frame {
	content := []string{
		"t=" + strconv.FormatInt(s.nowMS, 10) + "ms " + strconv.Itoa(s.columns) + "x" + strconv.Itoa(s.rows) + " echo-subject",
		"> " + s.text,
		"key: " + strings.Join(s.lastKey, "+"),
	}
	lines := make([]string, s.rows)
	for i := range lines {
		if i < len(content) {
			lines[i] = content[i]
		}
		lines[i] = fit(lines[i], s.columns)
	}
	return &frame{Columns: s.columns, Lines: lines, Rows: s.rows}
}

// fit cuts or pads text to exactly n runes, drawing control characters as
// '?' so a line never carries terminal control.
func fit(text string, n int) string {
	r := []rune(text)
	if len(r) > n {
		r = r[:n]
	}
	for i, c := range r {
		if c < 0x20 || c == 0x7f {
			r[i] = '?'
		}
	}
	return string(r) + strings.Repeat(" ", n-len(r))
}

// delivered is the part of the environment a sandbox delivers: upstream's
// TERMVERIFY_* variables and TZ, plus LANG and LC_* so a test can check they
// are absent.
func (s *session) delivered() map[string]string {
	env := map[string]string{}
	for _, kv := range s.opts.Environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TERMVERIFY_") || strings.HasPrefix(k, "LC_") || k == "TZ" || k == "LANG" {
			env[k] = v
		}
	}
	return env
}

func (s *session) getenv(key string) string {
	v := ""
	for _, kv := range s.opts.Environ { // the last one wins, as in getenv(3)
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// sleep blocks until ctx is done, reading nothing: forever in a real
// process. The ticker keeps the Go runtime from calling it a deadlock.
func (s *session) sleep() error {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-t.C:
		}
	}
}

// drain reads and discards stdin, answering nothing, then sleeps.
func (s *session) drain() error {
	_, _ = io.Copy(io.Discard, s.in)
	return s.sleep()
}
