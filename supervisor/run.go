package supervisor

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Result is how a run ended, as its transcript records it.
type Result struct {
	// Outcome is the terminal record's kind: run.finished, run.failed or
	// run.unsupported.
	Outcome string
	Exit    *transcript.Exit    // run.finished: the OS-observed exit
	Error   *transcript.Failure // run.failed: the recorded error
	Refusal *receipts.Refusal   // run.unsupported
	Records int                 // records written
	// Downgrades lists what --isolation auto took below the os tier.
	Downgrades []string
	// Sandboxes are the ids of the sandboxes started, failed starts
	// included (state directory and cgroup names), for correlating with
	// host logs and checking that none outlived the run; never in the
	// transcript. Run sets it even when it returns an error after a start.
	Sandboxes []string
}

// Succeeded reports whether the run finished and the subject exited 0.
func (r Result) Succeeded() bool {
	return r.Outcome == transcript.KindRunFinished && r.Exit != nil &&
		r.Exit.Kind == transcript.ExitCode && r.Exit.Code == 0
}

// Run runs one subject and records its transcript. It returns an error,
// with no transcript of this run in place, only when the request is
// unusable (*UsageError) or the host failed us (the transcript or the
// evidence could not be written: the evidence is written first, and the
// transcript's commit is the last step); every failure of the subject or
// of the sandbox is a recorded outcome in the Result. ctx cancelled with an *Interrupted cause
// (InterruptContext) ends the run with run.failed.
func Run(ctx context.Context, req Request) (Result, error) {
	p, err := newPlan(req)
	if err != nil {
		return Result{}, err
	}
	return p.run(ctx)
}

// run carries the plan out: the outputs, then launch, handshake and
// epochs (drive), the teardown with the ending's record (settle), and the
// commit.
func (p *plan) run(ctx context.Context) (Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, p.Deadlines.Run, errRunDeadline)
	defer cancel()
	ev := newEvidence(&p.Request)
	p.sweep(ev)
	o, err := p.openOutputs()
	if err != nil {
		return Result{}, err
	}
	defer o.close()
	if p.hooks.afterOutputsOpened != nil {
		p.hooks.afterOutputsOpened()
	}
	rec := newRecorder(o.out, p.RunID)
	if err := rec.start(p.Config, p.Subject); err != nil {
		return Result{}, &UsageError{Err: err}
	}
	st, err := p.adapter.open(p)
	if err != nil {
		return Result{}, err
	}
	defer st.close()
	ev.mark("prepare")

	box, end := p.drive(ctx, st, rec, ev)
	return p.settle(box, end, st, rec, ev, o)
}

// sweep removes what a supervisor that was SIGKILLed left behind: state
// and cgroups (its sandbox died with it). What it cannot remove is said,
// not fatal: the run needs none of it.
func (p *plan) sweep(ev *evidence) {
	rep, err := sandbox.Sweep(p.StateDir)
	ev.SweptStale = rep.Removed
	if err != nil {
		ev.SweepError = err.Error()
		p.Logf("sweep of stale sandboxes: %v", err)
	}
}

// outputs are the run's open destinations: the directories of the
// transcript and the evidence (nil when not written to a path) and the
// transcript's file.
type outputs struct {
	transcriptDir, evidenceDir *outDir
	out                        *output
}

// openOutputs opens the output directories once, now, without following
// a symlink; the files are written relative to them (output.go).
func (p *plan) openOutputs() (*outputs, error) {
	o := &outputs{}
	var err error
	if p.TranscriptPath != "" {
		if o.transcriptDir, err = openOutDirIn("transcript", p.TranscriptPath, p.OutputDir); err != nil {
			return nil, &UsageError{Err: err}
		}
	}
	if p.EvidencePath != "" {
		if o.evidenceDir, err = openOutDirIn("evidence", p.EvidencePath, p.OutputDir); err != nil {
			o.close()
			return nil, &UsageError{Err: err}
		}
	}
	if o.out, err = openOutput(o.transcriptDir, p.Transcript); err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// close discards an uncommitted transcript and closes the directories.
func (o *outputs) close() {
	if o.out != nil {
		o.out.discard()
	}
	for _, d := range []*outDir{o.evidenceDir, o.transcriptDir} {
		if d != nil {
			d.close()
		}
	}
}

// drive launches the subject and runs its session, the handshake and the
// epochs, to the first ending. It returns the sandbox (nil if none was
// started), whose teardown is the caller's (settle): whatever runs in it
// still runs.
func (p *plan) drive(ctx context.Context, st streams, rec *recorder, ev *evidence) (*sandbox.Sandbox, *ending) {
	l, box, end := launch(ctx, p, st.child(), rec, ev)
	st.closeChild()
	if end != nil {
		return box, end
	}
	rec.outcome = l.outcome
	c, end := p.adapter.connect(ctx, p, box, st, rec)
	if end != nil {
		return box, end
	}
	s := newSession(rec, box, c, &p.Request)
	defer s.close()
	end = s.handshake(ctx)
	ev.mark("handshake")
	if end != nil {
		return box, end
	}
	end = s.runEpochs(ctx, p.Inputs)
	ev.mark("epochs")
	return box, end
}

// settle ends the run's sandbox and records the ending, side by side: the
// tree is killed first (nothing of the subject runs from then on), then
// the sandbox's removal (its cgroup, state and id claim: Destroy) runs
// while the stderr drain ends, the terminal record is written and the
// transcript, still unnamed, is fsynced. The transcript depends on none
// of the removal; the evidence does (the teardown error), so with an
// evidence file it is written once both are done, and the transcript is
// named last (commit), as before; without one, the transcript's commit
// runs beside the removal too. The removal is complete before settle
// returns, failed or not.
func (p *plan) settle(box *sandbox.Sandbox, end *ending, st streams, rec *recorder, ev *evidence, o *outputs) (Result, error) {
	removed := teardown(box, ev, p.hooks.beforeDestroy)
	st.finish(p, ev)
	res, err := rec.finish(end)
	switch {
	case err != nil:
	case p.EvidencePath == "":
		// Nothing written depends on the removal: the transcript is
		// committed beside it.
		res, err = p.commit(res, ev, o)
	default:
		err = o.out.sync()
	}
	if terr := <-removed; terr != nil {
		ev.TeardownError = terr.Error()
	}
	ev.mark("teardown")
	switch {
	case err != nil:
		return Result{Sandboxes: ev.sandboxes}, err
	case p.EvidencePath == "":
		return res, nil
	}
	return p.commit(res, ev, o)
}

// commit puts the outputs in place, the ending recorded (settle). The
// transcript's commit is the run's last step: every other output is in
// place before it, so a transcript at its path means the whole run
// succeeded, and an error from Run means this run put none there.
func (p *plan) commit(res Result, ev *evidence, o *outputs) (Result, error) {
	ev.mark("record")
	res.Downgrades, res.Sandboxes = ev.Downgrades, ev.sandboxes
	if p.EvidencePath != "" {
		ev.finish(res.Outcome)
		if err := ev.write(o.evidenceDir); err != nil {
			return Result{Sandboxes: ev.sandboxes}, err
		}
	}
	if err := o.out.commit(); err != nil {
		return Result{Sandboxes: ev.sandboxes}, err
	}
	return res, nil
}

// teardown kills whatever still runs in the sandbox, reads what the
// auditor's evidence needs, and starts removing every trace of it
// (beforeDestroy, a test seam, runs first); the
// channel gives Destroy's error once the removal is over (at once, nil,
// without a sandbox). Kill has returned when teardown does: the tree is
// dead (a direct runner's reaper reaped, its cgroup emptied).
func teardown(box *sandbox.Sandbox, ev *evidence, beforeDestroy func()) <-chan error {
	removed := make(chan error, 1)
	if box == nil {
		removed <- nil
		return removed
	}
	_ = box.Kill()
	ev.noteSandbox(box)
	go func() {
		if beforeDestroy != nil {
			beforeDestroy()
		}
		removed <- box.Destroy()
	}()
	return removed
}

// pipes are the subject's standard streams: three pipes. Our ends of the
// protocol pipes (stdin, stdout) are non-blocking and outside the runtime
// poller; the session does its I/O on them through pipeIO, with wake (an
// eventfd) to interrupt it. The subject's stderr is a pipe too, never a
// host file (a file would be the subject's to pread, pwrite or have
// chowned): drain reads it into the evidence's bounded capture and the
// --stderr file, which only the supervisor opens and writes.
// The Files own every descriptor: close closes them all.
type pipes struct {
	stdin, childIn   *os.File // we write stdin; the subject reads childIn
	stdout, childOut *os.File // the subject writes childOut; we read stdout
	childErr         *os.File // the subject writes its stderr; drain reads the other end
	drain            *stderrDrain
	wake             *os.File // the eventfd
	io               pipeIO
}

// openPipes makes a control subject's streams (a nil *pipes is never
// returned as streams: the interface would not be nil).
func openPipes(req *plan) (*pipes, error) {
	// The --stderr file first: a refused path starts nothing.
	var errFile *os.File
	if req.StderrPath != "" {
		var err error
		if errFile, err = openStderrFileIn(req.StderrPath, req.OutputDir); err != nil {
			return nil, &UsageError{Err: err}
		}
	}
	p := &pipes{}
	errR, errW, err := stderrPipe()
	if err != nil {
		if errFile != nil {
			_ = errFile.Close()
		}
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	p.childErr, p.drain = errW, startStderrDrain(errR, errFile, req.StderrLimit)
	if p.childIn, p.stdin, err = rawPipe(); err != nil {
		p.close()
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if p.stdout, p.childOut, err = rawPipe(); err != nil {
		p.close()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	// Blocking by default (a non-blocking eventfd would be handed to the
	// runtime poller); only a count overflow could ever block its write.
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("eventfd: %w", os.NewSyscallError("eventfd", err))
	}
	p.wake = os.NewFile(uintptr(wake), "eventfd")
	p.io = pipeIO{in: int(p.stdin.Fd()), out: int(p.stdout.Fd()), wake: wake}
	for _, fd := range []int{p.io.in, p.io.out} {
		if err := unix.SetNonblock(fd, true); err != nil {
			p.close()
			return nil, fmt.Errorf("pipe: %w", os.NewSyscallError("fcntl", err))
		}
	}
	return p, nil
}

// rawPipe is os.Pipe without the runtime poller: both ends blocking Files
// (the subject's end stays so; ours is made non-blocking by the caller,
// after the File is made, so that the File does not register it).
func rawPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// finish ends the stderr drain and notes what it captured.
func (p *pipes) finish(req *plan, ev *evidence) {
	p.drain.finish()
	ev.noteStderr(p.drain, req.StderrPath)
	if s := ev.Stderr; s.FileDropped > 0 && s.FileError == "" {
		req.Logf("the subject's stderr went past the --stderr limit of %d bytes: %d bytes dropped (the evidence records it)", s.FileLimit, s.FileDropped)
	}
}

func (p *pipes) child() stdio { return stdio{in: p.childIn, out: p.childOut, errOut: p.childErr} }

func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.childIn, p.childOut, p.childErr} {
		if f != nil {
			_ = f.Close()
		}
	}
	p.childIn, p.childOut, p.childErr = nil, nil, nil
}

func (p *pipes) close() {
	p.closeChild()
	p.drain.close()
	for _, f := range []*os.File{p.stdin, p.stdout, p.wake} {
		if f != nil {
			_ = f.Close()
		}
	}
}
