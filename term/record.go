package term

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/ptyrecord"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// A recorded session (Config.Transcript, docs/TERM.md "A session
// recorded") is a termverify.transcript/v1 transcript in PTY mode's
// shape, the one `run --pty` writes, so that `replay --pty` re-runs it.
const (
	// RecordRunID is every recorded session's run id: fixed, so that two
	// sessions of a deterministic program with the same inputs are
	// byte-identical.
	RecordRunID = "term-session"
	// RecordRootID is the config's filesystem root_id: the session's
	// working directory, which a replay maps with --root work=DIR.
	RecordRootID = "work"
	// recordEpoch bounds one epoch, from its input to the program's
	// next wait for input: run --pty's default --epoch-timeout.
	recordEpoch = 10 * time.Second
	// recordHangupGrace is how long a recorded STOP gives the program
	// after its hangup, run --pty's grace for input.stop.
	recordHangupGrace = 2 * time.Second
	// recordOutputBudget is one epoch's output kept, as run --pty keeps
	// it: the longest string a record holds, and one byte to know that
	// it was passed.
	recordOutputBudget = canon.MaxStringBytes + 1
)

// Diagnostic codes of a recorded session, beside PTY mode's own.
const (
	// DiagSignal: a KILL request sent a signal; v1 has no input for a
	// signal, so a replay does not send it.
	DiagSignal = "term-signal-sent"
	// DiagInputIncomplete: an input was recorded and not all of it
	// reached the program (it stopped reading, or ended).
	DiagInputIncomplete = "term-input-incomplete"
)

// recorder writes a daemon's session as it happens: run.started and the
// receipts at Start, one epoch per recorded request (INPUT, a key,
// RESIZE, STOP), each closed by an observation of the screen when the
// program next waits for input, and the terminal record when the program
// ends. The transcript is an unnamed file until Close commits it.
//
// Lock order: seq, then wmu, then the daemon's readMu, then its mu.
type recorder struct {
	d   *Daemon
	dir *safeout.Dir
	f   *safeout.File

	seq sync.Mutex // one recorded request at a time
	// closed is closed once the open epoch is closed (its observation
	// recorded, or the transcript ended); replaced when an epoch opens.
	// Written under seq, read under seq or by the epoch's own closer.
	closed chan struct{}

	wmu     sync.Mutex // the Writer, and what follows
	w       *transcript.Writer
	cfg     config.Config    // the session's run config
	outcome receipts.Outcome // the receipts negotiated at begin
	err     error            // the first record that could not be written
	signals []string         // signals sent while no epoch was open, said in the next
	// sizeSaid is the size the program set that a diagnostic already
	// reported; replies the replies dropped already reported.
	sizeSaid [2]int
	replies  int64

	// Under the daemon's mu (its reader fills them).
	out     ptydrive.OutputBuffer
	open    bool // an epoch is open: output belongs to it
	idleOut bool // output came while no epoch was open
}

// recordConfig is the run config of a session, from its start flags:
// what run --pty's request would say for the same program. Seed, clock,
// locale and timezone are the defaults a request would give (seed 0, the
// manual clock at 0, C, UTC), delivered as run --pty delivers them.
func recordConfig(cols, rows int, allow []config.HostPort) config.Config {
	c := config.Config{
		Seed:       "0",
		Clock:      config.Clock{Mode: config.ClockManual},
		Locale:     "C",
		Timezone:   receipts.TimezoneUTC,
		Terminal:   config.Terminal{Columns: int64(cols), Rows: int64(rows), Capabilities: []string{}},
		Filesystem: config.Filesystem{Mode: config.FilesystemSandbox, RootID: RecordRootID},
		Network:    config.Network{Mode: config.NetworkDeny},
	}
	if len(allow) > 0 {
		c.Network = config.Network{Mode: config.NetworkAllowList, Allowed: allow}
	}
	return c
}

// recordSubject names the program as the transcript's subject: its
// command's base name (as an identifier), this tool as the adapter.
func recordSubject(args []string) transcript.Subject {
	id := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, filepath.Base(args[0]))
	sel := func(id string) transcript.Selector { return transcript.Selector{ID: id, Version: "1"} }
	return transcript.Subject{
		Application: transcript.Application{ID: cmp.Or(strings.Trim(id, "."), "program"), Version: "unknown", Build: "unknown"},
		Fixture:     sel("term-session"),
		Adapter:     transcript.Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion},
		Normalizer:  sel("termverify.identity"),
		StateSchema: sel("termverify.terminal"),
		Platform:    &transcript.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH},
	}
}

// negotiation is the receipts request of a session: run --pty's, with the
// mechanisms given.
func negotiation(c config.Config, dir string, fs, nw, term receipts.Mechanism) receipts.Request {
	return receipts.Request{
		Seed: c.Seed, ClockInitialMS: c.Clock.InitialMS, Locale: c.Locale, Timezone: c.Timezone,
		RootID: RecordRootID, RootMapped: true, RootDir: dir,
		NetworkMode: c.Network.Mode, Isolation: receipts.IsolationOS,
		Filesystem: fs, Network: nw, PTY: true, Terminal: term,
	}
}

// openRecord opens the transcript file (unnamed until commit) and writes
// run.started. It also gives spec the variables the delivered receipts
// promise (TERMVERIFY_SEED, …, TZ), as run --pty gives them.
func openRecord(cfg Config, spec *sandbox.Spec) (*recorder, error) {
	var allow []config.HostPort
	for _, hp := range cfg.Allow {
		allow = append(allow, config.HostPort{Host: hp.Host, Port: int64(hp.Port)})
	}
	slices.SortFunc(allow, func(a, b config.HostPort) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
	})
	allow = slices.Compact(allow)
	c := recordConfig(int(spec.Terminal.Cols), int(spec.Terminal.Rows), allow)
	assumed := receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismMountNS}
	out := receipts.Negotiate(negotiation(c, spec.Dir, assumed, assumed, receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismPTY}))
	env := out.Env
	env[receipts.EnvFSRoot] = spec.Dir
	env[receipts.EnvNetwork] = c.Network.Mode
	spec.Env = setEnv(spec.Env, env)

	dirPath, name, err := safeout.SplitFile(cfg.Transcript)
	if err != nil {
		return nil, fmt.Errorf("--transcript %s: %w", cfg.Transcript, err)
	}
	dir, err := safeout.OpenDir(dirPath)
	if err != nil {
		return nil, fmt.Errorf("--transcript %s: %w", cfg.Transcript, err)
	}
	f, err := dir.Create(name, 0o644)
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("--transcript %s: %w", cfg.Transcript, err)
	}
	r := &recorder{dir: dir, f: f, w: transcript.NewWriter(f, RecordRunID), closed: make(chan struct{}), cfg: c,
		out: ptydrive.NewOutputBuffer(recordOutputBudget), open: true}
	if err := r.w.Start(c, recordSubject(cfg.Args)); err != nil {
		r.discard()
		return nil, fmt.Errorf("--transcript %s: record run.started: %w", cfg.Transcript, err)
	}
	return r, nil
}

// setEnv is env with each of set's variables set, replacing any value it
// had.
func setEnv(env []string, set map[string]string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(e string) bool {
		k, _, _ := strings.Cut(e, "=")
		_, ok := set[k]
		return ok
	})
	return append(out, receipts.EnvList(set)...)
}

// begin records what the started sandbox applied, the seven receipts as
// run --pty negotiates them, and starts the readiness epoch: the screen
// at the program's first wait for input. A negotiation that refuses (a
// mechanism the sandbox did not verify) ends the transcript
// run.unsupported and is returned: the session is not started.
func (r *recorder) begin(spec sandbox.Spec) error {
	d := r.d
	if d.isolation == sandbox.IsolationNone {
		// Start refuses first (refuseDowngraded); never negotiate a
		// host pty as run --pty's terminal.
		return errors.New("the session cannot be recorded without the sandbox")
	}
	a := d.box.Applied()
	fs, nw := ptyrecord.Mechanisms(a.Filesystem, a.Network, r.cfg.Network.Mode)
	if err := r.negotiate(spec, fs, nw, ptyrecord.TerminalMechanism(d.console != nil, a)); err != nil {
		return err
	}
	go r.closeEpoch(r.closed, false)
	return nil
}

// refuseDowngraded records, before anything starts, why a session under
// isolation auto's downgrade cannot be recorded: its host pty, on the
// host's devpts (docs/TERM.md), is not the sandbox's own terminal that
// run --pty's os receipt names, whatever its size, and nothing confines
// its files or network. The transcript ends run.unsupported, is
// committed, and the error is the start's: the program never runs.
func (r *recorder) refuseDowngraded(spec sandbox.Spec) error {
	none := sandbox.Confinement{Reason: "isolation-none"}
	fs, nw := ptyrecord.Mechanisms(none, none, r.cfg.Network.Mode)
	term := receipts.Mechanism{Tier: receipts.None, Reason: "isolation auto would run the program without the sandbox, on a host pty"}
	err := r.negotiate(spec, fs, nw, term)
	if err == nil {
		err = errors.New("the session cannot be recorded without the sandbox")
	}
	if cerr := r.commit(); cerr != nil {
		return fmt.Errorf("%w (and %v)", err, cerr)
	}
	return err
}

// negotiate writes the seven receipts as run --pty negotiates them from
// the mechanisms given; a refusal ends the transcript run.unsupported and
// is returned.
func (r *recorder) negotiate(spec sandbox.Spec, fs, nw, term receipts.Mechanism) error {
	out := receipts.Negotiate(negotiation(r.cfg, spec.Dir, fs, nw, term))
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.outcome = out
	for _, rc := range out.Receipts {
		if rc.Status == receipts.Unsupported {
			r.write(func(w *transcript.Writer) error { return w.Unsupported(rc.Constraint, rc.Reason) })
			break
		}
		r.write(func(w *transcript.Writer) error { return ptyrecord.WriteApplied(w, rc) })
	}
	if ref := out.Refusal; ref != nil {
		r.write(func(w *transcript.Writer) error { return w.EndUnsupported(ref.Code, ref.Message) })
		close(r.closed)
		return fmt.Errorf("the session cannot be recorded as run --pty would record it: %s", ref.Message)
	}
	return nil
}

// notStarted records a program that could not be executed: the start
// failed, as run --pty records a spawn that failed.
func (r *recorder) notStarted(ee *sandbox.ExecError) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	d := canon.ObjectValue(canon.M("failure", canon.StringValue("spawn-failed")), canon.M("phase", canon.StringValue("spawn")),
		canon.M("during", canon.StringValue("spawn")), canon.M("status", canon.IntValue(int64(ee.Code))))
	r.write(func(w *transcript.Writer) error {
		return w.Fail(transcript.Failure{Code: transcript.CodeAdapterStartFailed, Message: "the subject could not be started: " + ee.Msg, Details: &d})
	})
	close(r.closed)
}

// write writes one record under wmu. A budget the transcript reaches
// ends it with run.failed, and so does a record its rules refuse (a
// failed recording still leaves a valid transcript); the session goes
// on, unrecorded. Any other error (the file's) is the recording's error,
// and Close reports it.
func (r *recorder) write(rec func(*transcript.Writer) error) {
	if r.w.Ended() || r.err != nil {
		return
	}
	err := rec(r.w)
	if errors.Is(err, transcript.ErrBudget) {
		err = r.w.FailBudget(err)
	} else if te, ok := errors.AsType[*transcript.Error](err); ok {
		d := canon.ObjectValue(canon.M("failure", canon.StringValue("transcript")), canon.M("rule", canon.StringValue(te.Rule)))
		err = r.w.Fail(transcript.Failure{Code: transcript.CodeAdapterRuntimeFailed, Details: &d,
			Message: "a record of the session was refused by the transcript's rules: " + te.Error()})
	}
	if err != nil {
		r.err = err
	}
}

// ended reports whether the transcript has its terminal record (or
// cannot get one); wmu is held.
func (r *recorder) ended() bool { return r.w.Ended() || r.err != nil }

// shown takes output the reader gave the emulator; the daemon's mu is
// held.
func (r *recorder) shown(b []byte) {
	r.out.Add(b)
	if !r.open {
		r.idleOut = true
	}
}

// errEpochOpen: a recorded request came while the last one's epoch is
// still open and its context ended first.
var errEpochOpen = errors.New("the program has not waited for input since the last recorded input, whose epoch is still open (a recorded session takes one input at a time): WAIT settled, then send it again")

// act records one input and carries it out, once the epoch before has
// closed: prepare (under the recording's order, so that a key is encoded
// in the program's modes of now) returns what to send and whether the
// epoch closes at once (a resize to the size the terminal has, as run
// --pty closes it), or an error, with nothing recorded or sent. A
// transcript that has ended (the program exited, or the recording
// failed) records nothing more: the session goes on unrecorded.
func (r *recorder) act(ctx context.Context, in input.Input, prepare func() (send func() error, atOnce bool, err error)) error {
	r.seq.Lock()
	defer r.seq.Unlock()
	select {
	case <-r.closed:
	case <-ctx.Done():
		return fmt.Errorf("%w (%w)", errEpochOpen, context.Cause(ctx))
	}
	send, atOnce, err := prepare()
	if err != nil {
		return err
	}
	r.wmu.Lock()
	if r.ended() || r.d.Exited() {
		r.wmu.Unlock()
		return send()
	}
	r.d.mu.Lock()
	r.open = true
	r.d.mu.Unlock()
	r.write(func(w *transcript.Writer) error { return w.Input(in) })
	r.sayPendingSignals()
	r.wmu.Unlock()
	err = send()
	if err != nil && !errors.Is(err, ErrExited) {
		r.wmu.Lock()
		r.write(func(w *transcript.Writer) error {
			return w.Diagnostic(transcript.Diagnostic{Code: DiagInputIncomplete, Message: "the input was not all written to the terminal: " + err.Error()})
		})
		r.wmu.Unlock()
	}
	r.closed = make(chan struct{})
	go r.closeEpoch(r.closed, atOnce)
	return err
}

// sayPendingSignals records, in the epoch just opened, the signals sent
// while none was; wmu is held.
func (r *recorder) sayPendingSignals() {
	for _, s := range r.signals {
		r.write(func(w *transcript.Writer) error { return w.Diagnostic(signalDiagnostic(s, true)) })
	}
	r.signals = nil
}

func signalDiagnostic(sig string, before bool) transcript.Diagnostic {
	when := "during this epoch"
	if before {
		when = "while no epoch was open, before this epoch's input"
	}
	d := canon.ObjectValue(canon.M("signal", canon.StringValue(sig)))
	return transcript.Diagnostic{Code: DiagSignal, Details: &d,
		Message: "KILL sent SIG" + sig + " to the program " + when + "; transcript/v1 has no input for a signal, so a replay does not send it"}
}

// signal records a KILL: in the open epoch, or in the next one.
func (r *recorder) signal(sig unix.Signal) {
	name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.d.mu.Lock()
	open := r.open
	r.d.mu.Unlock()
	if open {
		r.write(func(w *transcript.Writer) error { return w.Diagnostic(signalDiagnostic(name, false)) })
		return
	}
	r.signals = append(r.signals, name)
}

// closeEpoch closes the open epoch, and then closes done: with the
// observation of the screen when the program next waits for input (the
// readiness one first), with its exit when it ends first, or with
// run.failed at the epoch deadline, as run --pty does. atOnce closes it
// without waiting (a resize to the same size with no idle output).
func (r *recorder) closeEpoch(done chan struct{}, atOnce bool) {
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), recordEpoch)
	defer cancel()
	d := r.d
	for {
		if atOnce {
			atOnce = false
			if r.snapshot(false) {
				return
			}
		}
		st, err := d.Settle(ctx)
		switch {
		case errors.Is(err, ErrNoJudge):
			r.unjudged()
			return
		case err != nil && !d.Exited():
			r.notWaiting(err)
			return
		case err != nil || !st.Running:
			r.exited(false)
			return
		}
		if r.snapshot(true) {
			return
		}
	}
}

// snapshot records the epoch's observation if the reader has shown all
// the program wrote and no reply waits to be taken (quiet: the program
// was found waiting for input); false means settle again.
func (r *recorder) snapshot(quiet bool) bool {
	d := r.d
	r.wmu.Lock()
	defer r.wmu.Unlock()
	d.readMu.Lock()
	defer d.readMu.Unlock()
	if quiet && !d.caughtUp() {
		return false
	}
	d.mu.Lock()
	if !quiet && r.idleOut {
		// Output from while no epoch was open: the epoch must read it.
		d.mu.Unlock()
		return false
	}
	out := r.out.Take(false)
	scr := ptydrive.ScreenOf(d.emu)
	idle := r.idleOut
	r.open, r.idleOut = false, false
	d.mu.Unlock()
	r.observe(scr, out, idle, nil)
	return true
}

// terminalNotes are the diagnostics of an epoch's close that run --pty
// also gives: replies dropped since the last, and a size the program set
// on its terminal (said once per size); wmu is held.
func (r *recorder) terminalNotes(ec, er int) {
	if n := r.d.dropped(); n > r.replies {
		r.write(func(w *transcript.Writer) error { return w.Diagnostic(ptyrecord.RepliesDropped(n - r.replies)) })
		r.replies = n
	}
	if cols, rows, err := r.d.kernelSize(); err == nil && (cols != ec || rows != er) && r.sizeSaid != [2]int{cols, rows} {
		r.sizeSaid = [2]int{cols, rows}
		r.write(func(w *transcript.Writer) error { return w.Diagnostic(ptyrecord.SizeChanged(cols, rows, ec, er)) })
	}
}

// observe records an epoch's closing diagnostics and observation (with
// exit, the program's end); wmu is held.
func (r *recorder) observe(scr ptydrive.Screen, out ptydrive.Output, idle bool, exit *transcript.Exit) {
	if out.Dropped > 0 {
		r.write(func(*transcript.Writer) error {
			return &transcript.BudgetError{Limit: transcript.LimitValues,
				Detail: fmt.Sprintf("one epoch's terminal output is more than %d bytes, the longest string a record holds", canon.MaxStringBytes)}
		})
		return
	}
	if idle {
		r.write(func(w *transcript.Writer) error { return w.Diagnostic(ptyrecord.IdleOutput()) })
	}
	if out.Invalid > 0 {
		r.write(func(w *transcript.Writer) error { return w.Diagnostic(ptyrecord.InvalidOutput(out.Invalid)) })
	}
	r.terminalNotes(scr.Cols, scr.Rows)
	o := ptyrecord.Observation(scr, out.Text)
	if exit != nil {
		o.Process = &transcript.Process{Exited: true, Exit: *exit}
	}
	r.write(func(w *transcript.Writer) error { return w.Observe(o) })
}

// notWaiting ends the transcript at the epoch deadline: what quiesce
// last saw, then run.failed, as run --pty ends a run whose program never
// waits for input again. The session goes on, unrecorded.
func (r *recorder) notWaiting(err error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.write(func(w *transcript.Writer) error {
		return w.Diagnostic(transcript.Diagnostic{Code: ptyrecord.DiagNotWaiting,
			Message: "the program was not waiting for input when the deadline came: " + err.Error()})
	})
	code := transcript.CodeAdapterRuntimeFailed
	phase := "epoch"
	if !r.observedOnce() {
		code, phase = transcript.CodeAdapterStartFailed, "handshake"
	}
	details := canon.ObjectValue(canon.M("failure", canon.StringValue(phase+"-deadline")), canon.M("phase", canon.StringValue(phase)),
		canon.M("deadline_ms", canon.IntValue(recordEpoch.Milliseconds())))
	r.write(func(w *transcript.Writer) error {
		return w.Fail(transcript.Failure{Code: code, Details: &details,
			Message: fmt.Sprintf("the %s deadline (%v) expired: the program did not wait for input again", phase, recordEpoch)})
	})
}

// unjudged ends the transcript of a program whose terminal quiesce
// cannot judge: no epoch can be closed.
func (r *recorder) unjudged() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	code := transcript.CodeAdapterRuntimeFailed
	if !r.observedOnce() {
		code = transcript.CodeAdapterStartFailed
	}
	details := canon.ObjectValue(canon.M("failure", canon.StringValue("terminal-failed")))
	r.write(func(w *transcript.Writer) error {
		return w.Fail(transcript.Failure{Code: code, Details: &details,
			Message: "quiesce cannot judge the program's terminal, so no epoch can be closed: " + ErrNoJudge.Error()})
	})
}

// observedOnce reports whether the readiness observation was written:
// the records are run.started, seven receipts and then it.
func (r *recorder) observedOnce() bool { return r.w.Records() > 8 }

// exited records the program's end, which has happened (the reader has
// shown everything): in an open epoch its last screen with the exit,
// then run.finished; while idle only run.finished, as run --pty does.
// killed adds the diagnostic of a STOP that had to kill.
func (r *recorder) exited(killed bool) {
	d := r.d
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.ended() {
		return
	}
	// An init that died without reporting (not killed by us) leaves an
	// exit the sandbox made up: not observed, as run --pty records it.
	if why := d.unobserved(); why != "" {
		details := canon.ObjectValue(canon.M("failure", canon.StringValue("exit-unknown")))
		r.write(func(w *transcript.Writer) error {
			return w.Fail(transcript.Failure{Code: transcript.CodeAdapterRuntimeFailed, Details: &details,
				Message: "the program's end could not be observed: " + why})
		})
		return
	}
	exit := ptyrecord.Exit(d.exit)
	d.mu.Lock()
	open := r.open
	out := r.out.Take(true)
	scr := ptydrive.ScreenOf(d.emu)
	idle := r.idleOut
	r.open, r.idleOut = false, false
	d.mu.Unlock()
	if open {
		if killed {
			r.write(func(w *transcript.Writer) error {
				return w.Diagnostic(transcript.Diagnostic{Code: ptyrecord.DiagStopGraceKilled,
					Message: fmt.Sprintf("the program did not end within %v of the hangup; its tree was killed", recordHangupGrace)})
			})
		}
		r.observe(scr, out, idle, &exit)
	}
	r.write(func(w *transcript.Writer) error { return w.Finish(exit) })
}

// stop is STOP recorded: input.stop, then what run --pty's input.stop
// does (the hangup: SIGHUP, then SIGCONT for a stopped job) with its
// grace period, then SIGTERM and the kill as an unrecorded STOP ends
// things; the epoch closes with the program's last screen and its exit.
func (r *recorder) stop(ctx context.Context) error {
	r.seq.Lock()
	defer r.seq.Unlock()
	select {
	case <-r.closed:
	case <-ctx.Done():
		// Not worth refusing a STOP for: its epoch is taken as closed
		// by the end it brings (run --pty would have failed at the
		// deadline; the transcript says the program was not waiting).
	}
	steps := []stopStep{{[]unix.Signal{unix.SIGHUP, unix.SIGCONT}, recordHangupGrace}, {[]unix.Signal{unix.SIGTERM}, stopGrace}}
	r.wmu.Lock()
	record := !r.ended() && !r.d.Exited()
	if record {
		select {
		case <-r.closed:
			r.d.mu.Lock()
			r.open = true
			r.d.mu.Unlock()
			r.write(func(w *transcript.Writer) error { return w.Input(input.Stop{}) })
			r.sayPendingSignals()
		default:
			r.write(func(w *transcript.Writer) error {
				return w.Diagnostic(transcript.Diagnostic{Code: ptyrecord.DiagNotWaiting,
					Message: "STOP came while the program had not waited for input since the last input"})
			})
		}
	}
	r.wmu.Unlock()
	killed, err := r.d.stop(ctx, steps)
	if err != nil {
		return err
	}
	<-r.closed // the epoch's closer sees the end
	if record {
		r.exited(killed)
	}
	return nil
}

// watch records an end while no epoch is open (or one the open epoch's
// closer already recorded): the program died between inputs.
func (r *recorder) watch() {
	<-r.d.exited
	r.seq.Lock()
	defer r.seq.Unlock()
	<-r.closed
	r.exited(false)
}

// commit ends the recording once the daemon has: a transcript still
// without its terminal record (the daemon ended around an open epoch)
// gets run.failed, then the file is put in place whole.
func (r *recorder) commit() error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if !r.w.Ended() && r.err == nil {
		r.write(func(w *transcript.Writer) error {
			return w.Fail(transcript.Failure{Code: transcript.CodeAdapterRuntimeFailed, Message: "the session ended before its end could be recorded"})
		})
	}
	defer r.dir.Close()
	werr := r.w.Close()
	if r.err != nil || werr != nil {
		r.f.Discard()
		return fmt.Errorf("--transcript %s: the session could not be recorded: %w", r.f.Path(), cmp.Or(r.err, werr))
	}
	if err := r.f.Commit(); err != nil {
		return fmt.Errorf("--transcript %s: %w", r.f.Path(), err)
	}
	return nil
}

func (r *recorder) discard() {
	r.f.Discard()
	r.dir.Close()
}

// input is INPUT recorded: the bytes, exactly as written, as an
// input.text (the kind that replays to the same bytes: run --pty writes
// a text's UTF-8 as it stands). Bytes that are not UTF-8 have no such
// record and are refused, nothing written.
func (r *recorder) input(ctx context.Context, b []byte, deadline time.Time) error {
	return r.act(ctx, input.Text{Text: string(b)}, func() (func() error, bool, error) {
		if !utf8.Valid(b) {
			return nil, false, errors.New("the input is not UTF-8, which a recorded session cannot record as it was written (transcript/v1 holds text): nothing was written")
		}
		return func() error { return r.d.write(b, deadline) }, false, nil
	})
}

// key is a key chord recorded as input.key, encoded in the program's
// modes when it is sent, as run --pty encodes it.
func (r *recorder) key(ctx context.Context, chord []string, deadline time.Time) error {
	return r.act(ctx, input.Key{Keys: chord}, func() (func() error, bool, error) {
		b, err := r.d.encodeKey(chord)
		if err != nil {
			return nil, false, err
		}
		return func() error { return r.d.write(b, deadline) }, false, nil
	})
}

// resize is RESIZE recorded as input.resize. A resize to the size the
// terminal has closes its epoch at once, as run --pty does (unless output
// from while no epoch was open waits: the epoch reads it first).
func (r *recorder) resize(cols, rows int) error {
	ctx, cancel := context.WithTimeout(context.Background(), recordEpoch)
	defer cancel()
	return r.act(ctx, input.Resize{Columns: int64(cols), Rows: int64(rows)}, func() (func() error, bool, error) {
		r.d.mu.Lock()
		c, rw := r.d.emu.Size()
		r.d.mu.Unlock()
		same := c == cols && rw == rows
		return func() error {
			if !same {
				// The kernel has our size again: a size the program
				// sets after this is news.
				r.wmu.Lock()
				r.sizeSaid = [2]int{}
				r.wmu.Unlock()
			}
			return r.d.resize(cols, rows)
		}, same, nil
	})
}

// delivered is RECEIPTS' word for a constraint the recorded session
// delivers by spawn-env (seed, clock, locale, timezone), as its
// transcript's receipt says; ok is false for the others, and on nil (no
// recording).
func (r *recorder) delivered(c receipts.Constraint) (interminai.ReceiptData, bool) {
	if r == nil {
		return interminai.ReceiptData{}, false
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	for _, rc := range r.outcome.Receipts {
		if rc.Constraint == c && rc.Tier == receipts.Delivered && rc.Delivery != nil {
			return interminai.ReceiptData{Constraint: string(c), Status: string(receipts.Applied), Tier: string(receipts.Delivered),
				Mechanism: "spawn-env " + strings.Join(receipts.EnvList(rc.Delivery.Env), ",")}, true
		}
	}
	return interminai.ReceiptData{}, false
}
