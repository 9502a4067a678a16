package supervisor

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"runtime"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// plan is a run as Run carries it out, made once from the Request by
// newPlan and never written after: the request's values checked and with
// their defaults (roots absolute, deadlines, the input script with its
// stop, the subject's adapter and platform), the run's readiness marker,
// and the adapter its mode picks. The Request is a copy (its Roots map
// too): the caller's is never written.
type plan struct {
	Request
	adapter adapter
	marker  string // the readiness marker given to the program; "" for none
}

// adapter is what a run's mode decides: the input kinds the subject can
// be given and the refusals particular to the mode, the subject's
// standard streams, its part of the sandbox spec, the mechanism of the
// terminal receipt, and the session's conn. controlAdapter (control/v1
// over pipes) and ptyAdapter (ptyadapter.go) are the two.
type adapter interface {
	mode() Mode
	// check refuses what the mode cannot run, before anything is made.
	check(p *plan) error
	// open makes the subject's standard streams.
	open(p *plan) (streams, error)
	// sandboxSpec adds the mode's part to the spec (env is its
	// environment, made a list after).
	sandboxSpec(p *plan, env map[string]string, s *sandbox.Spec)
	// terminal is the terminal receipt's mechanism for a started sandbox.
	terminal(box *sandbox.Sandbox, a sandbox.Applied) receipts.Mechanism
	// connect makes the session's conn for a started subject, or ends the
	// run (the receipts first, its tree killed).
	connect(ctx context.Context, p *plan, box *sandbox.Sandbox, st streams, rec *recorder) (conn, *ending)
}

// streams are the subject's side and ours of its standard streams.
type streams interface {
	// child is the subject's side, handed to the sandbox.
	child() stdio
	// closeChild closes our copies of the subject's side once it has its
	// own: ours would keep end of stream from ever coming.
	closeChild()
	// finish records, after the teardown, what the streams carried
	// besides the session (the subject's stderr).
	finish(p *plan, ev *evidence)
	close()
}

// hooks are the test seams of a run, each nil outside this package's
// tests.
type hooks struct {
	// afterOutputsOpened runs once the output destinations are open and
	// before the subject starts: the point at which a hostile subject or
	// local user could swap their directories.
	afterOutputsOpened func()
	// beforeTerminalDriven runs in PTY mode once the sandbox released the
	// program and before its terminal is driven: the point at which a
	// program may already have set its own size.
	beforeTerminalDriven func(*sandbox.Sandbox)
	// startSandbox replaces sandbox.Start, so that a start failure of any
	// kind can be produced deterministically.
	startSandbox func(context.Context, sandbox.Spec) (*sandbox.Sandbox, error)
	// applied replaces a started sandbox's Applied, so that a mechanism
	// the sandbox reports unapplied can be produced on a real sandbox and
	// the receipts made from it checked.
	applied func(*sandbox.Sandbox) sandbox.Applied
	// beforeDestroy runs in the teardown's goroutine after the kill and
	// before Destroy, so that a slow removal can be produced and Run
	// held to waiting for it.
	beforeDestroy func()
}

// newPlan checks the request and fills its defaults. Every refusal here
// happens before a file is created or a process started.
func newPlan(req Request) (*plan, error) {
	p := &plan{Request: req, adapter: controlAdapter{}}
	if req.Mode() == ModePTY {
		p.adapter = ptyAdapter{}
	}
	r := &p.Request
	if !config.ValidIdentifier(r.RunID) || len(r.RunID) > transcript.MaxRunIDBytes {
		return nil, usagef("run id %q: want [a-z0-9._-]+, at most %d bytes", r.RunID, transcript.MaxRunIDBytes)
	}
	if len(r.Args) == 0 || r.Args[0] == "" {
		return nil, usagef("no subject command given")
	}
	if r.TranscriptPath == "" && r.Transcript == nil {
		return nil, usagef("no transcript destination given")
	}
	switch r.Isolation {
	case "":
		r.Isolation = receipts.IsolationAuto
	case receipts.IsolationOS, receipts.IsolationAuto, receipts.IsolationNone:
	default:
		return nil, usagef("isolation %q: want os, auto or none", r.Isolation)
	}
	r.Roots = maps.Clone(r.Roots)
	for id, dir := range r.Roots {
		if !config.ValidIdentifier(id) {
			return nil, usagef("root %s=%s: %q is not a root id ([a-z0-9._-]+)", id, dir, id)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, usagef("root %s=%s: %v", id, dir, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, usagef("root %s=%s: %v", id, dir, err)
		}
		if !fi.IsDir() {
			return nil, usagef("root %s=%s: not a directory", id, dir)
		}
		r.Roots[id] = abs
	}
	r.Deadlines = r.Deadlines.withDefaults()
	switch {
	case r.StderrLimit < 0:
		return nil, usagef("stderr limit %d: want a positive byte count, or 0 for the default %d", r.StderrLimit, DefaultStderrLimit)
	case r.StderrLimit == 0:
		r.StderrLimit = DefaultStderrLimit
	}
	r.Subject.Adapter = transcript.Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion}
	if r.Subject.Platform == nil {
		r.Subject.Platform = &transcript.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	}
	if err := p.adapter.check(p); err != nil {
		return nil, err
	}
	if r.ReadyMarker {
		m, err := newReadyMarker()
		if err != nil {
			return nil, err
		}
		p.marker = m
	}
	inputs, err := checkScript(r.Inputs, !r.Replay, p.adapter.mode().InputKinds())
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	r.Inputs = inputs
	if r.Logf == nil {
		r.Logf = func(string, ...any) {}
	}
	return p, nil
}

// controlAdapter is the termverify.control/v1 adapter: JSON lines over
// three pipes (pipeConn).
type controlAdapter struct{}

func (controlAdapter) mode() Mode { return ModeControl }

func (controlAdapter) check(p *plan) error {
	if p.ReadyMarker {
		return usagef("--ready-marker needs --pty: it is how a terminal program says it waits for input")
	}
	return nil
}

func (controlAdapter) open(p *plan) (streams, error) {
	ps, err := openPipes(p)
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// sandboxSpec: the pipes are all a control subject is given.
func (controlAdapter) sandboxSpec(*plan, map[string]string, *sandbox.Spec) {}

// terminal: a control subject has no terminal, and no terminal receipt
// is negotiated for it.
func (controlAdapter) terminal(*sandbox.Sandbox, sandbox.Applied) receipts.Mechanism {
	return receipts.Mechanism{}
}

func (controlAdapter) connect(ctx context.Context, _ *plan, _ *sandbox.Sandbox, st streams, _ *recorder) (conn, *ending) {
	return newPipeConn(ctx, &st.(*pipes).io), nil
}
