package main

import (
	"errors"
	"strconv"
	"strings"
)

// mode is one misbehaviour: hooks that replace one step of the
// well-behaved session in run. A nil hook keeps the normal step.
type mode struct {
	start      func(*session) error // before session.hello is read
	hello      func(*session) error // instead of the session.ready reply
	afterReady func(*session) error // just after the handshake reply
	epoch      func(*session) error // at the start of every epoch, stop included
	first      func(*session) error // instead of the first epoch's observation
	stop       func(*session) error // instead of the stop drain
}

// modes maps the first command-line argument to its misbehaviour; "" is the
// well-behaved subject. examples/README.md documents each one.
var modes = map[string]mode{
	"":                  {},
	"hang":              {first: (*session).drain},
	"silent":            {hello: (*session).drain},
	"deaf":              {start: (*session).sleep},
	"never-reads-hello": {start: (*session).sleep},
	"deaf-after-ready":  {afterReady: (*session).sleep},
	"flood":             {first: (*session).flood},
	"flood-lines":       {first: (*session).floodLines},
	"crash":             {first: func(s *session) error { s.opts.Abort(); return s.sleep() }},
	"exit-idle":         {first: func(s *session) error { return errors.Join(s.observe(), exitCode(0)) }},
	"exit-mid-epoch":    {first: func(s *session) error { return exitCode(s.number(3)) }},
	"wrong-exit":        {stop: func(s *session) error { return s.finish(7) }},
	"daemon":            {start: func(s *session) error { return s.opts.Daemonize() }},
	"idle-message":      {afterReady: (*session).observe},
	"second-ready":      {first: func(s *session) error { return errors.Join(s.ready(), s.observe()) }},
	"wrong-kind": {first: func(s *session) error {
		return errors.Join(s.send("input.text", map[string]any{"text": "the adapter's kind"}), s.observe())
	}},
	"early-observation": {hello: func(s *session) error { return errors.Join(s.observe(), s.ready()) }},
	// Traffic once an epoch is closed, in the same write as the message
	// that closed it (one write of under PIPE_BUF bytes, so the adapter
	// has it all before it writes the next input: no race).
	"idle-diagnostic": {first: func(s *session) error {
		return s.together(message{kind: "observation", payload: s.observation()}, message{kind: "diagnostic", payload: note("while idle")})
	}},
	"idle-bytes": {first: func(s *session) error {
		return s.together(message{kind: "observation", payload: s.observation()}, message{raw: `{"protocol":`})
	}},
	"after-finish": {stop: func(s *session) error {
		return errors.Join(s.finish(0), s.send("diagnostic", note("after run.finished")))
	}},
	"diagnostic-then-failed": {hello: func(s *session) error {
		return errors.Join(s.send("diagnostic", note("before refusing")), s.send("session.failed", map[string]any{"error": failure{
			Code: "echo-subject-failed", Message: "echo-subject (mode diagnostic-then-failed) refuses to start",
		}}), exitCode(1))
	}},
	"exited-observation": {first: func(s *session) error {
		o := s.observation()
		o.Process = &process{State: "exited", Exit: &exitRecord{Kind: "code", Value: 0}}
		return s.send("observation", o)
	}},
	"diagnostics": {
		hello: func(s *session) error { return errors.Join(s.diagnostics(true), s.ready()) },
		first: func(s *session) error { return errors.Join(s.diagnostics(false), s.observe()) },
	},
	"unsupported": {hello: func(s *session) error {
		return errors.Join(s.send("session.unsupported", map[string]any{
			"code": "constraint-unsupported", "constraint": "terminal",
			"message": "echo-subject (mode unsupported) refuses every terminal",
		}), exitCode(0))
	}},
	"failed": {hello: func(s *session) error {
		return errors.Join(s.send("session.failed", map[string]any{"error": failure{
			Code: "echo-subject-failed", Message: "echo-subject (mode failed) refuses to start",
		}}), exitCode(1))
	}},
	"stderr": {start: (*session).chatter, epoch: (*session).chatter},

	// Endings where upstream's record and ours are compared
	// (supervisor/parity_test.go).
	"hang-stop":         {stop: (*session).drain},
	"exit-in-handshake": {hello: func(s *session) error { return exitCode(s.number(5)) }},
	"run-failed": {first: func(s *session) error {
		return errors.Join(s.send("run.failed", map[string]any{"error": failure{
			Code: "echo-subject-gave-up", Message: "echo-subject (mode run-failed) gives up",
			Details: map[string]any{"inputs": s.inputs},
		}}), exitCode(s.number(4)))
	}},
	"finish-exit": {stop: func(s *session) error { return errors.Join(s.finish(s.number(3)), exitCode(s.number(3))) }},
	"drain-exited": {stop: func(s *session) error {
		o := s.observation()
		o.Process = &process{State: "exited", Exit: &exitRecord{Kind: "code", Value: 0}}
		return s.send("observation", o)
	}},
	"drain-diagnostic": {stop: func(s *session) error {
		return errors.Join(s.observe(), s.send("diagnostic", map[string]any{
			"code": "echo-subject-note", "message": "after the drain observation",
		}), s.send("run.finished", map[string]any{"exit": exitRecord{Kind: "code", Value: 0}}))
	}},

	// Malformed lines, sent in place of the first epoch's observation, or
	// of session.ready when the mode's last argument is "hello".
	"bad-json":         badLine(func(l string) string { return l[:len(l)/2] + "\n" }),
	"oversized":        badLine(func(l string) string { return padded(l, 1024) }),
	"duplicate-member": badLine(func(l string) string { return withState(l, `{"text":"a","text":"b"}`) }),
	"lone-surrogate":   badLine(func(l string) string { return withState(l, `{"text":"\ud800"}`) }),
	"big-int":          badLine(func(l string) string { return withState(l, `{"n":9007199254740992}`) }),
}

// message is one line for together: a message, or raw bytes as they are.
type message struct {
	kind    string
	payload any
	raw     string
}

// together writes the messages in one write.
func (s *session) together(ms ...message) error {
	var b []byte
	for _, m := range ms {
		if m.raw != "" {
			b = append(b, m.raw...)
			continue
		}
		var err error
		if b, err = appendMessage(b, m.kind, m.payload); err != nil {
			return err
		}
	}
	return s.write(b)
}

// note is an echo-subject-note diagnostic's payload.
func note(text string) map[string]any {
	return map[string]any{"code": "echo-subject-note", "message": text}
}

// maxLine is the v1 ceiling on a message line, LF excluded.
const maxLine = 4 << 20

// number is the mode's numeric argument (exit-mid-epoch N, diagnostics N).
func (s *session) number(def int) int {
	if len(s.opts.Args) > 1 {
		if n, err := strconv.Atoi(s.opts.Args[1]); err == nil {
			return n
		}
	}
	return def
}

// atHello reports whether the mode's last argument moves it to the handshake.
func (s *session) atHello() bool {
	return len(s.opts.Args) > 1 && s.opts.Args[len(s.opts.Args)-1] == "hello"
}

// diagnostics sends the mode's N diagnostics (default 101, one over the v1
// ceiling) if they belong to this position.
func (s *session) diagnostics(atHello bool) error {
	if atHello != s.atHello() {
		return nil
	}
	for range s.number(101) {
		s.diagnostic++
		err := s.send("diagnostic", map[string]any{
			"code": "echo-subject-note", "message": "diagnostic " + strconv.Itoa(s.diagnostic),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// badLine makes a malformed-message mode: corrupt turns a valid line (the
// observation or session.ready the subject would send) into the bad one.
func badLine(corrupt func(line string) string) mode {
	send := func(s *session, kind string, payload any) error {
		line, err := encode(envelope{Kind: kind, Payload: payload, Protocol: protocol})
		if err != nil {
			return err
		}
		return s.write([]byte(corrupt(string(line))))
	}
	return mode{
		hello: func(s *session) error {
			if !s.atHello() {
				return s.ready()
			}
			return send(s, "session.ready", map[string]any{"observation": s.observation()})
		},
		first: func(s *session) error {
			if s.atHello() {
				return s.observe()
			}
			return send(s, "observation", s.observation())
		},
	}
}

// withState replaces the state member of a line this subject encoded (its
// state is an object and its last member "text" is a JSON string without
// escaped quotes, followed by the "ui" member) with raw JSON text.
func withState(line, state string) string {
	i := strings.Index(line, `"state":{`)
	j := strings.Index(line, `},"ui":`)
	return line[:i] + `"state":` + state + line[j+1:]
}

// padded replaces the state of a line this subject encoded with a string of
// \u0001 escapes, making the line (LF excluded) exactly maxLine+over bytes,
// give or take five. Each escape is six bytes for one decoded byte, so the
// line reaches 4 MiB while every string budget (1 MiB each, 2 MiB per
// message) still holds: only the line ceiling is at stake.
func padded(line string, over int) string {
	base := len(withState(line, `""`)) - 1 // LF excluded
	n := (maxLine + over - base) / 6
	return withState(line, `"`+strings.Repeat(`\u0001`, n)+`"`)
}

// flood writes one endless line, no LF ever, as fast as the pipe takes it.
func (s *session) flood() error {
	if err := s.write([]byte(`{"protocol":"termverify.control/v1","kind":"observation","payload":{"state":"`)); err != nil {
		return err
	}
	chunk := []byte(strings.Repeat("a", 64<<10))
	for s.ctx.Err() == nil {
		if err := s.write(chunk); err != nil {
			return err
		}
	}
	return s.ctx.Err()
}

// floodLines writes valid observations of the largest size v1 allows, without
// end: the first closes the epoch, every later one is traffic while idle.
func (s *session) floodLines() error {
	line, err := encode(envelope{Kind: "observation", Payload: s.observation(), Protocol: protocol})
	if err != nil {
		return err
	}
	big := []byte(padded(string(line), 0))
	for s.ctx.Err() == nil {
		if err := s.write(big); err != nil {
			return err
		}
	}
	return s.ctx.Err()
}

// chatter writes a few lines to stderr, which carries no protocol meaning.
func (s *session) chatter() error {
	for i := range 3 {
		if _, err := s.opts.Stderr.Write([]byte("echo-subject: stderr line " + strconv.Itoa(i) + " after " + strconv.Itoa(s.inputs) + " inputs\n")); err != nil {
			return err
		}
	}
	return nil
}
