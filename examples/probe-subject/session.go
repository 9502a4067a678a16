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
	"strings"
)

const protocol = "termverify.control/v1"

// Options is everything Run takes from its process, so tests can run the
// subject in-process over pipes.
type Options struct {
	Commands []string // probe commands to try during the handshake
	Environ  []string // KEY=value pairs, as os.Environ returns them
	Dir      string   // the working directory: relative paths start here
	Stdin    io.Reader
	Stdout   io.Writer // each message is one Write call: nothing is buffered
	Stderr   io.Writer
}

// Run speaks termverify.control/v1 on o.Stdin and o.Stdout until the
// session ends, and returns the process exit status.
func Run(ctx context.Context, o Options) int {
	s := &session{ctx: ctx, opts: o, in: bufio.NewReader(o.Stdin)}
	if err := s.run(); err != nil {
		fmt.Fprintln(o.Stderr, "probe-subject:", err)
		return 1
	}
	return 0
}

type session struct {
	ctx  context.Context
	opts Options
	in   *bufio.Reader

	columns, rows int
	nowMS         int64
	inputs        int
	startup       []result
	last          *result
}

// errBadInput ends the session after it was reported to the adapter.
var errBadInput = errors.New("bad input from the adapter")

func (s *session) run() error {
	kind, payload, err := s.read()
	if err != nil {
		return err
	}
	var h struct {
		AtMS   int64 `json:"at_ms"`
		Config struct {
			Terminal struct {
				Columns int `json:"columns"`
				Rows    int `json:"rows"`
			} `json:"terminal"`
		} `json:"config"`
	}
	if kind != "session.hello" || json.Unmarshal(payload, &h) != nil || h.Config.Terminal.Columns <= 0 || h.Config.Terminal.Rows <= 0 {
		return s.fail("session.failed", "expected a session.hello with a terminal size, got "+kind)
	}
	s.columns, s.rows, s.nowMS = h.Config.Terminal.Columns, h.Config.Terminal.Rows, h.AtMS
	for _, cmd := range s.opts.Commands { // before ready: the handshake's view of the sandbox
		s.startup = append(s.startup, s.try(cmd))
	}
	if err := s.send("session.ready", map[string]any{"observation": s.observation()}); err != nil {
		return err
	}
	for {
		kind, payload, err := s.read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var p struct {
			Text    string `json:"text"`
			Columns int    `json:"columns"`
			Rows    int    `json:"rows"`
			AtMS    int64  `json:"at_ms"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return s.fail("run.failed", kind+": "+err.Error())
		}
		s.inputs++
		switch kind {
		case "input.text":
			r := s.try(p.Text)
			s.last = &r
		case "input.resize":
			s.columns, s.rows = p.Columns, p.Rows
		case "input.clock":
			s.nowMS = p.AtMS
		case "input.key":
		case "input.stop":
			if err := s.send("observation", s.observation()); err != nil {
				return err
			}
			return s.send("run.finished", map[string]any{"exit": map[string]any{"kind": "code", "value": 0}})
		default:
			return s.fail("run.failed", "unexpected "+kind)
		}
		if err := s.send("observation", s.observation()); err != nil {
			return err
		}
	}
}

// observation reports the state; the surface is one log region, no frame.
func (s *session) observation() map[string]any {
	uid, gid := os.Getuid(), os.Getgid()
	var last any // null before the first text input
	if s.last != nil {
		last = s.last
	}
	startup := s.startup
	if startup == nil {
		startup = []result{}
	}
	return map[string]any{
		"events": []any{},
		"state": map[string]any{
			"columns": s.columns,
			"cwd":     s.opts.Dir,
			"entries": s.try("ls ."),
			"env":     s.delivered(),
			"gid":     gid,
			"inputs":  s.inputs,
			"last":    last,
			"now_ms":  s.nowMS,
			"pid1":    pid1(),
			"rows":    s.rows,
			"startup": startup,
			"uid":     uid,
		},
		"ui": map[string]any{
			"cursor": map[string]any{"column": 0, "row": 0, "visible": false},
			"focus":  "log",
			"mode":   nil,
			"regions": []any{map[string]any{
				"column": 0, "columns": s.columns, "id": "log", "role": "log", "row": 0, "rows": s.rows,
			}},
		},
	}
}

// delivered is the environment a sandbox delivers: upstream's TERMVERIFY_*
// variables and TZ, plus LANG and LC_* so a test can check they are absent.
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

func (s *session) read() (kind string, payload json.RawMessage, err error) {
	line, err := s.in.ReadBytes('\n')
	if err == io.EOF && len(line) == 0 {
		return "", nil, io.EOF
	}
	if err != nil && err != io.EOF {
		return "", nil, err
	}
	var env struct {
		Protocol string          `json:"protocol"`
		Kind     string          `json:"kind"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(line, &env); err != nil || env.Protocol != protocol || env.Payload == nil {
		return "", nil, fmt.Errorf("malformed message: %.80q", line)
	}
	return env.Kind, env.Payload, nil
}

// send writes one message as one line in a single Write: the transport is a
// pipe, so nothing may wait in a buffer. Members are in RFC 8785 order:
// encoding/json sorts map keys, and every key here is ASCII.
func (s *session) send(kind string, payload any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"kind": kind, "payload": payload, "protocol": protocol}); err != nil {
		return err
	}
	_, err := s.opts.Stdout.Write(b.Bytes())
	return err
}

// fail reports a bad adapter message as session.failed or run.failed.
func (s *session) fail(kind, message string) error {
	err := s.send(kind, map[string]any{"error": map[string]any{"code": "probe-subject-bad-input", "message": message}})
	return errors.Join(errBadInput, err)
}
