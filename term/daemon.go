package term

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/netpolicy"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/vt"
)

// Defaults of a Config left zero.
const (
	DefaultCols       = 80
	DefaultRows       = 24
	DefaultScrollback = 10000
)

// Environment of the program, set and never inherited: TERM names what
// the vt emulator implements, LANG makes the program's output UTF-8 (the
// values `run --pty` gives its subject, docs/PTY.md).
const (
	envTERM = "xterm-256color"
	envLANG = "C.UTF-8"
)

// Bounds of the daemon's own writes and of its stop.
const (
	// replyWait bounds one write of the emulator's query replies: a
	// program that does not read its terminal loses them rather than
	// stall the reader behind them.
	replyWait = time.Second
	// stopGrace is how long each of STOP's catchable signals is given
	// before the next, and the sandbox is killed after the last.
	stopGrace = 500 * time.Millisecond
	// maxPendingReplies bounds the query replies owed to a program that
	// does not take them.
	maxPendingReplies = 64 << 10
)

// Sentinels callers branch on.
var (
	// ErrExited: the program has ended, so the request (INPUT, KILL,
	// RESIZE) has nothing to act on.
	ErrExited = errors.New("process not running")
	// ErrInvalidSize: a terminal size outside 1..vt.MaxCols × 1..vt.MaxRows.
	ErrInvalidSize = errors.New("invalid size")
)

// Config is what Start needs: plain data.
type Config struct {
	Args []string // the program's argv; Args[0] is resolved inside the sandbox
	// Dir is the program's working directory, mapped read-write at its
	// own host path; "": the caller's.
	Dir string
	// Write and Read are more host directories the program sees at their
	// own paths, read-write and read-only.
	Write, Read []string
	// Allow is the network allow-list (host:port, TCP); empty: no
	// network at all.
	Allow []netpolicy.HostPort
	// Limits are the sandbox's; nil: sandbox.DefaultLimits().
	Limits *sandbox.Limits
	// Hide are host directories the program must not reach even where
	// they lie inside a mapped one (the daemon's own socket directory): it
	// sees an empty read-only directory there (sandbox.Spec.Masks).
	Hide []string
	// Owner is whom the program's files belong to: every mapped directory
	// is idmapped so that the program reads and writes there as Owner
	// (sandbox.Spec.BindOwner). nil: the caller (CallerOwner).
	Owner *sandbox.Owner
	// Env is the caller's environment; the program gets it less what
	// names host places (HOME, PWD, TMPDIR, XDG_RUNTIME_DIR,
	// SSH_AUTH_SOCK), with TERM, LANG, HOME, PWD and TMPDIR set. Its
	// TMPDIR, when it is the caller's own directory, is mapped read-write
	// at its path (layout).
	Env        []string
	Cols, Rows int    // the terminal's size; 0: DefaultCols × DefaultRows
	Scrollback int    // lines kept; 0: DefaultScrollback, negative: none
	StateDir   string // the sandbox's state directory; "": sandbox.DefaultStateDir()
	// PTYDump, if set, is a file that gets every byte the program
	// printed, raw. It appears, complete, when the daemon is closed
	// (written through internal/safeout: a daemon killed outright leaves
	// none).
	PTYDump string
	// DebugBuffer is how many unhandled sequences DEBUG returns at most;
	// 0: DefaultDebugBuffer.
	DebugBuffer int
	// Transcript, if set, is a host path that gets the session as a
	// termverify.transcript/v1 transcript in PTY mode's shape, the one
	// `run --pty` records (docs/TERM.md, "A session recorded"); "": no
	// recording.
	Transcript string
	// Isolation is os ("": the default) or auto (isolation.go).
	Isolation Isolation
	// OnDowngrade, if set, is told why when auto runs the program without
	// the sandbox, before it starts: the fixed words STATUS says, and the
	// namespace trial's error.
	OnDowngrade func(reason string, cause error)

	hooks hooks // this package's test seams
}

// hooks are the test seams of a daemon, each nil outside this package's
// tests.
type hooks struct {
	// afterRead runs in the reader with readMu held, after a read of the
	// master and before the emulator has its bytes: the point at which
	// the master is drained and the screen is not yet up to date.
	afterRead func(b []byte)
}

// Daemon is one program in a sandbox on an emulated terminal. Its methods
// are safe for concurrent use. Start returns it; the caller must call
// Close, even after Stop.
type Daemon struct {
	box     *sandbox.Sandbox // nil when the program could not be executed
	console *os.File         // the terminal's master; nil with box
	dump    *ptyDump         // Config.PTYDump; nil without one
	judge   *judge           // quiesce's view, for settled waits; nil when unavailable
	rec     *recorder        // Config.Transcript; nil without one
	raw     syscall.RawConn  // the console's, for the reader
	readMu  sync.Mutex       // held by the reader from a read to the emulator's having it
	hooks   hooks            // Config.hooks
	// isolation is the backend the program runs under; downgrade says
	// why it is none (auto found the os tier unavailable), and dir is
	// its working directory (isolation.go).
	isolation      sandbox.Isolation
	downgrade, dir string

	mu          sync.Mutex
	emu         *vt.Terminal
	activity    bool  // output since the last look (STATUS or WAIT with activity)
	diagSeen    int64 // unhandled sequences DEBUG's clear has forgotten
	debugBuffer int
	output      chan struct{} // closed and replaced at every output, for WAIT

	writeMu sync.Mutex // one writer at a time on the console, with its deadline
	replyMu sync.Mutex
	replies []byte        // owed to the program, written by the replier
	owed    chan struct{} // a token: replies are waiting

	repliesDropped int64 // replies dropped at maxPendingReplies

	exited  chan struct{} // closed once the program and its sandbox have ended
	status  int           // the exit status (128+signal), valid after exited
	exit    sandbox.Exit  // the sandbox's exit, valid after exited
	exitErr error         // why exit is unknown, valid after exited
	done    chan struct{} // closed by Close: the replier ends
	wg      sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Status is what STATUS reports.
type Status struct {
	Running  bool
	ExitCode int  // valid when !Running
	Activity bool // output since the last look; reported and cleared only when asked
	// Unobserved says, once the program has ended, why its end was not
	// observed (the sandbox's init died without reporting it, or the
	// wait failed): ExitCode is then a stand-in, not the program's
	// status. "" when the end was observed.
	Unobserved string
}

// Start starts cfg's program in an os-tier sandbox on a terminal of the
// sandbox's own, and begins reading it. A program that cannot be executed
// (ExecError: not found, not executable) is no error: the Daemon exists,
// already exited with the shell's status (127, 126), so that a client
// learns it from STATUS as from any program that ended. Any other failure
// of the sandbox is an error, and nothing is left running. On success the
// caller must call Close.
func Start(ctx context.Context, cfg Config) (*Daemon, error) {
	spec, err := cfg.spec()
	if err != nil {
		return nil, err
	}
	iso, downgrade, cause, err := cfg.decideIsolation()
	if err != nil {
		return nil, err
	}
	if iso == sandbox.IsolationNone {
		if spec, err = cfg.directSpec(spec, spec.Dir); err != nil {
			return nil, fmt.Errorf("isolation auto, without the sandbox (%s): %w", downgrade, err)
		}
		if cfg.OnDowngrade != nil {
			cfg.OnDowngrade(downgrade, cause)
		}
	}
	// Leftovers of a daemon that was killed go first; live sandboxes are
	// skipped by their owner's pid.
	_, _ = sandbox.Sweep(spec.StateDir)
	cols, rows := int(spec.Terminal.Cols), int(spec.Terminal.Rows)
	scroll := cfg.Scrollback
	switch {
	case scroll == 0:
		scroll = DefaultScrollback
	case scroll < 0:
		scroll = 0
	}
	d := &Daemon{
		emu:         vt.New(vt.Config{Cols: cols, Rows: rows, Scrollback: scroll}),
		debugBuffer: cmp.Or(max(cfg.DebugBuffer, 0), DefaultDebugBuffer),
		output:      make(chan struct{}),
		owed:        make(chan struct{}, 1),
		exited:      make(chan struct{}),
		done:        make(chan struct{}),
		isolation:   iso,
		downgrade:   downgrade,
		dir:         spec.Root,
		hooks:       cfg.hooks,
	}
	if cfg.PTYDump != "" {
		if d.dump, err = openDump(cfg.PTYDump, spec.Limits.FileBytes); err != nil {
			return nil, err
		}
	}
	if cfg.Transcript != "" {
		if d.rec, err = openRecord(cfg, &spec); err != nil {
			d.dump.discard()
			return nil, err
		}
		d.rec.d = d
		if iso == sandbox.IsolationNone {
			// Refused before the program runs on the host at all.
			err := d.rec.refuseDowngraded(spec)
			d.dump.discard()
			return nil, err
		}
	}
	fail := func(err error) (*Daemon, error) {
		d.dump.discard()
		if d.rec != nil {
			d.rec.discard()
		}
		return nil, err
	}
	box, err := sandbox.Start(ctx, spec)
	if err != nil {
		if ee, ok := errors.AsType[*sandbox.ExecError](err); ok {
			d.status = ee.Code
			if d.rec != nil {
				d.rec.notStarted(ee)
			}
			close(d.exited)
			return d, nil
		}
		if iso == sandbox.IsolationNone {
			return fail(fmt.Errorf("start the program without the sandbox (isolation auto: %s): %w", downgrade, err))
		}
		return fail(fmt.Errorf("start the sandbox: %w", explainOS(err)))
	}
	d.box, d.console = box, box.Console()
	if d.console != nil {
		d.raw, err = d.console.SyscallConn()
	}
	if d.console == nil || err != nil {
		_ = box.Destroy()
		return fail(errors.New("start the sandbox: it gave the program no terminal it can read"))
	}
	// Without a judge the daemon serves all but settled waits (a
	// rootless host may refuse what quiesce reads).
	d.judge, _ = newJudge(box, d.console)
	read := make(chan struct{})
	d.wg.Go(func() { d.read(); close(read) })
	d.wg.Go(d.reply)
	d.wg.Go(func() { d.wait(read) })
	if d.rec != nil {
		if err := d.rec.begin(spec); err != nil {
			d.Close()
			return nil, err
		}
		d.wg.Go(d.rec.watch)
	}
	return d, nil
}

// spec is the sandbox for cfg: the settings `run --pty` gives its subject
// (isolation os, the network denied, the default limits), with the host
// directories of its layout at their own paths.
func (cfg Config) spec() (sandbox.Spec, error) {
	if len(cfg.Args) == 0 {
		return sandbox.Spec{}, errors.New("no program to run")
	}
	cols, rows := cfg.Cols, cfg.Rows
	if cols == 0 && rows == 0 {
		cols, rows = DefaultCols, DefaultRows
	}
	if err := checkSize(cols, rows); err != nil {
		return sandbox.Spec{}, err
	}
	dir, err := workingDir(cfg.Dir)
	if err != nil {
		return sandbox.Spec{}, err
	}
	l, err := newLayout(dir, cfg.Write, cfg.Read, envValue(cfg.Env, "TMPDIR"))
	if err != nil {
		return sandbox.Spec{}, err
	}
	s := sandbox.Spec{
		Isolation: sandbox.IsolationOS,
		Args:      cfg.Args,
		Env:       l.environ(cfg.Env),
		Binds:     l.binds,
		Dir:       l.dir,
		Network:   netpolicy.Policy{Mode: netpolicy.Deny},
		Limits:    sandbox.DefaultLimits(),
		Terminal:  &sandbox.TerminalSize{Cols: uint16(cols), Rows: uint16(rows)},
		StateDir:  cfg.StateDir,
	}
	if len(cfg.Allow) > 0 {
		s.Network = netpolicy.Policy{Mode: netpolicy.AllowList, Allowed: cfg.Allow}
	}
	if cfg.Limits != nil {
		s.Limits = *cfg.Limits
	}
	for _, h := range cfg.Hide {
		h = filepath.Clean(h)
		for _, b := range s.Binds {
			if strings.HasPrefix(h, b.Source+"/") {
				s.Masks = append(s.Masks, h)
				break
			}
		}
	}
	s.BindOwner = cfg.Owner
	if s.BindOwner == nil {
		o := CallerOwner(cfg.Env)
		s.BindOwner = &o
	}
	return s, s.Validate()
}

func checkSize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > vt.MaxCols || rows > vt.MaxRows {
		return fmt.Errorf("%w: %dx%d (at most %dx%d)", ErrInvalidSize, cols, rows, vt.MaxCols, vt.MaxRows)
	}
	return nil
}

// envValue is the value of key in env ("" when unset).
func envValue(env []string, key string) string {
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// read feeds the emulator everything the program prints, until the
// terminal reports that every process on it has gone (EIO). It never
// waits for a client: that is what keeps the program from blocking on a
// full terminal.
//
// Each read and its hand-over to the emulator happen under readMu, so
// that one who holds it, and finds the master drained, knows the screen
// has everything the program wrote (a recorded epoch's close).
func (d *Daemon) read() {
	buf := make([]byte, 64<<10)
	var end error
	for end == nil {
		err := d.raw.Read(func(fd uintptr) bool {
			// Only a readable master is read: the read then never waits
			// with readMu held, even were the master's description put
			// back in blocking mode (os.File.Fd does that).
			if !pollReadable(int(fd)) {
				return false // wait until readable
			}
			d.readMu.Lock()
			defer d.readMu.Unlock()
			n, err := unix.Read(int(fd), buf)
			switch {
			case err == unix.EAGAIN:
				return false // wait until readable
			case err == unix.EINTR:
				return true
			case n > 0:
				if d.hooks.afterRead != nil {
					d.hooks.afterRead(buf[:n])
				}
				d.dump.write(buf[:n])
				d.show(buf[:n])
			case err != nil:
				end = err
			default:
				end = io.EOF
			}
			return true
		})
		if err != nil {
			end = err
		}
	}
}

// show hands output to the emulator, raises the activity flag, wakes the
// waiters, and queues the emulator's replies for the replier.
func (d *Daemon) show(b []byte) {
	d.mu.Lock()
	d.emu.Write(b)
	if d.rec != nil {
		d.rec.shown(b)
	}
	r := d.emu.Replies()
	d.activity = true
	close(d.output)
	d.output = make(chan struct{})
	d.mu.Unlock()
	if len(r) == 0 {
		return
	}
	d.replyMu.Lock()
	if len(d.replies)+len(r) <= maxPendingReplies {
		d.replies = append(d.replies, r...)
	} else {
		d.repliesDropped += int64(len(r))
	}
	d.replyMu.Unlock()
	select {
	case d.owed <- struct{}{}:
	default:
	}
}

// reply writes the emulator's answers to the program's queries (DSR, DA)
// whether or not a client is looking, off the reader's goroutine so that
// a program that does not read its terminal cannot stall its output.
func (d *Daemon) reply() {
	for {
		select {
		case <-d.done:
			return
		case <-d.exited:
			return
		case <-d.owed:
		}
		d.replyMu.Lock()
		r := d.replies
		d.replies = nil
		d.replyMu.Unlock()
		// Dropped when the program does not take them in time, as a
		// terminal whose user is gone would.
		_ = d.write(r, time.Now().Add(replyWait))
	}
}

// wait records the program's end: the sandbox's real exit, once the
// reader has taken everything the program printed.
func (d *Daemon) wait(read <-chan struct{}) {
	exit, err := d.box.Wait()
	// The master reads EIO only once no slave is open: ours too.
	d.judge.close()
	<-read
	d.exit, d.exitErr = exit, err
	if err != nil {
		d.status = 128 + int(unix.SIGKILL)
	} else {
		d.status = exit.ShellStatus()
	}
	close(d.exited)
}

// write writes all of b to the terminal by deadline.
func (d *Daemon) write(b []byte, deadline time.Time) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if err := d.console.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("write to the terminal: %w", err)
	}
	n, err := d.console.Write(b)
	if err != nil {
		return fmt.Errorf("write to the terminal: %d of %d bytes written: %w", n, len(b), err)
	}
	return nil
}

// Input writes every byte of b to the program's terminal, as typed, by
// ctx's deadline (which should have one: a program that does not read
// would hold the write forever).
func (d *Daemon) Input(ctx context.Context, b []byte) error {
	if d.Exited() {
		return ErrExited
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Time{}
	}
	if d.rec != nil {
		return d.rec.input(ctx, b, deadline)
	}
	return d.write(b, deadline)
}

// Exited reports whether the program and its sandbox have ended.
func (d *Daemon) Exited() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// Done is closed once the program and its sandbox have ended.
func (d *Daemon) Done() <-chan struct{} { return d.exited }

// ExitCode is the program's exit status, 128+signal for a signal's death;
// ok is false while it runs.
func (d *Daemon) ExitCode() (code int, ok bool) {
	if !d.Exited() {
		return 0, false
	}
	return d.status, true
}

// unobserved says why the program's end, which has happened, was not
// observed: the sandbox's init died without reporting it (not killed by
// us: Kill's own end is known), or the sandbox's wait failed. "" when the
// exit is the program's.
func (d *Daemon) unobserved() string {
	switch {
	case d.exitErr != nil:
		return d.exitErr.Error()
	case d.exit.InitLost && !d.exit.Killed:
		return "the sandbox's init ended without reporting it"
	}
	return ""
}

// Status reports whether the program runs and how it ended; with
// activity it also reports, and clears, the activity flag.
func (d *Daemon) Status(activity bool) Status {
	code, ended := d.ExitCode()
	s := Status{Running: !ended, ExitCode: code}
	if ended {
		s.Unobserved = d.unobserved()
	}
	if activity {
		d.mu.Lock()
		s.Activity, d.activity = d.activity, false
		d.mu.Unlock()
	}
	return s
}

// Wait blocks until the program has ended, or with activity until it
// prints as well (returning at once when output is pending, and clearing
// the flag it reports). It returns ctx's error when ctx ends first (a
// client gone), leaving the flag as it was.
func (d *Daemon) Wait(ctx context.Context, activity bool) (Status, error) {
	for {
		d.mu.Lock()
		if activity && d.activity {
			d.activity = false
			d.mu.Unlock()
			s := d.Status(false)
			s.Activity = true
			return s, nil
		}
		output := d.output
		d.mu.Unlock()
		if !activity {
			output = nil
		}
		select {
		case <-d.exited:
			return d.Status(activity), nil
		case <-output:
		case <-ctx.Done():
			return Status{}, context.Cause(ctx)
		}
	}
}

// ErrUncatchable: SIGSTOP cannot be forwarded by the sandbox's init; sent
// to it, it would stop the init itself and every later signal with it.
var ErrUncatchable = errors.New("SIGSTOP cannot be forwarded to the program: send SIGTSTP, which the program may stop on")

// Signal sends sig to the program (through the sandbox's init, which
// forwards it; SIGKILL kills the whole sandbox). SIGSTOP is refused
// (ErrUncatchable).
func (d *Daemon) Signal(sig unix.Signal) error {
	if sig == unix.SIGSTOP {
		return ErrUncatchable
	}
	if d.Exited() || d.box == nil {
		return ErrExited
	}
	if err := d.box.Signal(sig); err != nil {
		return fmt.Errorf("signal %d: %w", sig, err)
	}
	if d.rec != nil {
		d.rec.signal(sig)
	}
	return nil
}

// Resize sets the size of the program's terminal (the kernel sends it
// SIGWINCH) and of the emulated screen.
func (d *Daemon) Resize(cols, rows int) error {
	if err := checkSize(cols, rows); err != nil {
		return err
	}
	if d.Exited() || d.box == nil {
		return ErrExited
	}
	if d.rec != nil {
		return d.rec.resize(cols, rows)
	}
	return d.resize(cols, rows)
}

func (d *Daemon) resize(cols, rows int) error {
	// The screen first: what the program draws for its new size, read
	// right after the SIGWINCH, must land on a screen of that size.
	d.mu.Lock()
	d.emu.Resize(cols, rows)
	d.mu.Unlock()
	if err := d.box.ResizeConsole(sandbox.TerminalSize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		return fmt.Errorf("resize the terminal: %w", err)
	}
	return nil
}

// Stop ends the program: SIGTERM, then SIGHUP (what a terminal's hangup
// sends), each given stopGrace, then the whole sandbox is killed. It
// returns once everything in the sandbox has ended, or ctx is done.
//
// A recorded session's STOP hangs up first, as run --pty's input.stop
// does (record.go).
func (d *Daemon) Stop(ctx context.Context) error {
	if d.rec != nil {
		return d.rec.stop(ctx)
	}
	_, err := d.stop(ctx, []stopStep{{[]unix.Signal{unix.SIGTERM}, stopGrace}, {[]unix.Signal{unix.SIGHUP}, stopGrace}})
	return err
}

// stopStep is signals sent together, then the grace period given them.
type stopStep struct {
	signals []unix.Signal
	grace   time.Duration
}

// stop sends each step's signals, waiting its grace period for the end,
// then kills the sandbox; killed says whether it came to that.
func (d *Daemon) stop(ctx context.Context, steps []stopStep) (killed bool, err error) {
	for _, st := range steps {
		if d.Exited() {
			return false, nil
		}
		for _, sig := range st.signals {
			_ = d.box.Signal(sig)
		}
		select {
		case <-d.exited:
			return false, nil
		case <-time.After(st.grace):
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
	if d.box != nil {
		_ = d.box.Kill()
	}
	select {
	case <-d.exited:
		return true, nil
	case <-ctx.Done():
		return true, context.Cause(ctx)
	}
}

// Close destroys the sandbox (killing whatever still runs in it) and
// waits for the daemon's goroutines. It is idempotent.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		close(d.done)
		if d.box != nil {
			// Killed and waited for before Destroy closes the console,
			// which the reader must have read to its end first
			// (sandbox.Console).
			_ = d.box.Kill()
			<-d.exited
			d.closeErr = d.box.Destroy()
			d.wg.Wait()
		}
		d.closeErr = errors.Join(d.closeErr, d.dump.commit())
		if d.rec != nil {
			d.closeErr = errors.Join(d.closeErr, d.rec.commit())
		}
	})
	return d.closeErr
}
