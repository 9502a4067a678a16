package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/ptyrecord"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/vt"
)

// ptyAdapter is PTY mode's adapter (run --pty, docs/PTY.md): the subject
// is an unmodified terminal program on a pseudoterminal the sandbox makes
// its own, which is all three of its standard streams; ptyConn drives it.
type ptyAdapter struct{}

func (ptyAdapter) mode() Mode { return ModePTY }

// check refuses a terminal larger than the emulator's, --stderr (the
// terminal is the program's stderr), and with the readiness marker a
// script whose typed text would echo it.
func (ptyAdapter) check(p *plan) error {
	t := p.Config.Terminal
	if t.Columns > vt.MaxCols || t.Rows > vt.MaxRows {
		return usagef("terminal %dx%d: PTY mode's terminal is at most %dx%d", t.Columns, t.Rows, vt.MaxCols, vt.MaxRows)
	}
	if p.StderrPath != "" {
		return usagef("--stderr: in PTY mode the terminal is the subject's stderr; what it writes there is in the observations")
	}
	if p.ReadyMarker {
		if err := checkNoMarker(p.Inputs); err != nil {
			return &UsageError{Err: err}
		}
	}
	return nil
}

// open makes nothing: the sandbox makes the terminal (sandboxSpec).
func (ptyAdapter) open(*plan) (streams, error) { return terminalStreams{}, nil }

// sandboxSpec asks for a terminal of the sandbox's own at the configured
// size, set and checked before the program is released, and sets TERM
// and LANG, never inherited (docs/PTY.md): what the emulator implements,
// and UTF-8 output; with the readiness marker, the variable naming it.
func (ptyAdapter) sandboxSpec(p *plan, env map[string]string, s *sandbox.Spec) {
	env["TERM"], env["LANG"] = ptyTERM, ptyLANG
	if p.marker != "" {
		env[envReadyMarker] = p.marker
	}
	t := p.Config.Terminal
	s.Terminal = &sandbox.TerminalSize{Cols: uint16(t.Columns), Rows: uint16(t.Rows)}
}

func (ptyAdapter) terminal(box *sandbox.Sandbox, a sandbox.Applied) receipts.Mechanism {
	return terminalMechanism(box.Console() != nil, a)
}

// connect drives the sandbox's terminal. A terminal that cannot be
// driven ends the run (the receipts first, as every failed run states
// them) with its tree killed.
func (ptyAdapter) connect(_ context.Context, p *plan, box *sandbox.Sandbox, _ streams, rec *recorder) (conn, *ending) {
	var marker []byte
	if p.marker != "" {
		marker = []byte(p.marker)
	}
	if p.hooks.beforeTerminalDriven != nil {
		p.hooks.beforeTerminalDriven(box)
	}
	c, err := newPTYConn(box, p.Config.Terminal, p.Deadlines.Epoch, marker)
	if err == nil {
		return c, nil
	}
	_ = box.Kill()
	p.Logf("the subject's terminal cannot be driven: %v", err)
	if werr := rec.writeReceipts(); werr != nil {
		return nil, rec.fail(werr, phaseHandshake)
	}
	te := &terminalError{failure: FailureTerminal, err: err}
	return nil, te.ending(phaseHandshake, 0)
}

// terminalStreams are a PTY subject's: the sandbox's terminal, nothing
// of ours.
type terminalStreams struct{}

func (terminalStreams) child() stdio            { return stdio{} }
func (terminalStreams) closeChild()             {}
func (terminalStreams) finish(*plan, *evidence) {}
func (terminalStreams) close()                  {}

// Environment of a PTY subject, set and never inherited: TERM names what
// the vt emulator implements (and what the tmux comparisons use as
// default-terminal); LANG makes the program's output UTF-8, which the
// frames and terminal.output events hold.
const (
	ptyTERM = "xterm-256color"
	ptyLANG = "C.UTF-8"
)

// terminalMechanism is what a started sandbox applied for the terminal
// in PTY mode (ptyrecord.TerminalMechanism).
func terminalMechanism(console bool, a sandbox.Applied) receipts.Mechanism {
	return ptyrecord.TerminalMechanism(console, a)
}

// readyPrefix starts upstream's readiness marker; the marker of a run is
// readyPrefix + a token + readySuffix.
const (
	readyPrefix = "<<termverify.ready:"
	readySuffix = ">>"
)

// envReadyMarker names the variable that gives a program the marker it
// prints when it waits for input (Request.ReadyMarker).
const envReadyMarker = "TERMVERIFY_READY_MARKER"

// newReadyMarker makes a run's marker with a random 128-bit token: only
// the program, which is given it, can print it — input echo cannot forge
// what the script's author does not know. The driver takes it out of the
// output, so transcripts never hold it and stay byte-identical from run
// to run.
func newReadyMarker() (string, error) {
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return "", fmt.Errorf("readiness marker: %w", err)
	}
	return readyPrefix + hex.EncodeToString(token[:]) + readySuffix, nil
}

// assumedTerminal is, before a start, the best the backend can give the
// terminal in PTY mode: only the os backend makes a terminal of the
// sandbox's own.
func assumedTerminal(backend sandbox.Isolation) receipts.Mechanism {
	if backend == sandbox.IsolationOS {
		return receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismPTY}
	}
	return receipts.Mechanism{Tier: receipts.None, Reason: "no sandbox: isolation none"}
}

// checkNoMarker refuses a script whose typed text could echo a readiness
// marker: one text holding its prefix, or the texts in order forming it
// (the line discipline echoes them one after another).
func checkNoMarker(in []input.Input) error {
	tail := ""
	for i, x := range in {
		t, ok := x.(input.Text)
		if !ok {
			continue
		}
		typed := tail + t.Text
		if strings.Contains(typed, readyPrefix) {
			return fmt.Errorf("input %d: with --ready-marker, the typed text would echo %q, the start of the readiness marker, and forge it", i+1, readyPrefix)
		}
		// Only the last bytes can still begin a marker.
		tail = typed[max(0, len(typed)-len(readyPrefix)+1):]
	}
	return nil
}
