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
	if err := req.prepare(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, req.Deadlines.Run, errRunDeadline)
	defer cancel()
	ev := newEvidence(&req)
	// A supervisor that was SIGKILLed leaves state and cgroups behind
	// (its sandbox died with it); the next run removes them first.
	// What it cannot remove is said, not fatal: the run needs none of it.
	rep, err := sandbox.Sweep(req.StateDir)
	ev.SweptStale = rep.Removed
	if err != nil {
		ev.SweepError = err.Error()
		req.Logf("sweep of stale sandboxes: %v", err)
	}

	// The output directories are opened once, now, without following a
	// symlink; the files are written relative to them (output.go).
	var transcriptDir, evidenceDir *outDir
	if req.TranscriptPath != "" {
		if transcriptDir, err = openOutDirIn("transcript", req.TranscriptPath, req.OutputDir); err != nil {
			return Result{}, &UsageError{Err: err}
		}
		defer transcriptDir.close()
	}
	if req.EvidencePath != "" {
		if evidenceDir, err = openOutDirIn("evidence", req.EvidencePath, req.OutputDir); err != nil {
			return Result{}, &UsageError{Err: err}
		}
		defer evidenceDir.close()
	}
	out, err := openOutput(transcriptDir, req.Transcript)
	if err != nil {
		return Result{}, err
	}
	defer out.discard()
	if req.afterOutputsOpened != nil {
		req.afterOutputsOpened()
	}
	rec := newRecorder(out, req.RunID)
	if err := rec.start(req.Config, req.Subject); err != nil {
		return Result{}, &UsageError{Err: err}
	}

	// A control subject speaks over three pipes; a PTY subject's terminal
	// is all three of its streams.
	var pipes *pipes
	var child stdio
	if !req.PTY {
		if pipes, err = openPipes(&req); err != nil {
			return Result{}, err
		}
		defer pipes.close()
		child = pipes.child()
	}
	ev.mark("prepare")

	l, box, end := launch(ctx, &req, child, rec, ev)
	if pipes != nil {
		// The subject has its own copies of its ends; ours would keep end
		// of stream from ever coming.
		pipes.closeChild()
	}
	if end == nil {
		rec.outcome = l.outcome
		c, cend := connect(ctx, &req, box, pipes, rec)
		if end = cend; end == nil {
			s := newSession(rec, box, c, &req)
			end = s.handshake(ctx)
			ev.mark("handshake")
			if end == nil {
				end = s.runEpochs(ctx, req.Inputs)
				ev.mark("epochs")
			}
			s.close()
		}
	}
	teardown(box, ev)
	if pipes != nil {
		pipes.drain.finish()
		ev.noteStderr(pipes.drain, req.StderrPath)
		if s := ev.Stderr; s.FileDropped > 0 && s.FileError == "" {
			req.Logf("the subject's stderr went past the --stderr limit of %d bytes: %d bytes dropped (the evidence records it)", s.FileLimit, s.FileDropped)
		}
	}

	res, err := rec.finish(end)
	if err != nil {
		return Result{Sandboxes: ev.sandboxes}, err
	}
	ev.mark("record")
	res.Downgrades, res.Sandboxes = ev.Downgrades, ev.sandboxes
	// The transcript's commit is the run's last step: every other output
	// is in place before it, so a transcript at its path means the whole
	// run succeeded, and an error from Run means this run put none there.
	if req.EvidencePath != "" {
		ev.finish(res.Outcome)
		if err := ev.write(evidenceDir); err != nil {
			return Result{Sandboxes: ev.sandboxes}, err
		}
	}
	if err := out.commit(); err != nil {
		return Result{Sandboxes: ev.sandboxes}, err
	}
	return res, nil
}

// connect is the session's conn for a started subject: control/v1 over
// its pipes, or its terminal in PTY mode. A terminal that cannot be
// driven ends the run (the receipts first, as every failed run states
// them) with its tree killed.
func connect(ctx context.Context, req *Request, box *sandbox.Sandbox, p *pipes, rec *recorder) (conn, *ending) {
	if !req.PTY {
		return newPipeConn(ctx, &p.io), nil
	}
	var marker []byte
	if req.ReadyMarker {
		marker = []byte(req.readyMarker)
	}
	if req.beforeTerminalDriven != nil {
		req.beforeTerminalDriven(box)
	}
	c, err := newPTYConn(box, req.Config.Terminal, req.Deadlines.Epoch, marker)
	if err == nil {
		return c, nil
	}
	_ = box.Kill()
	req.Logf("the subject's terminal cannot be driven: %v", err)
	if werr := rec.writeReceipts(); werr != nil {
		return nil, rec.fail(werr, phaseHandshake)
	}
	te := &terminalError{failure: FailureTerminal, err: err}
	return nil, te.ending(phaseHandshake, 0)
}

// teardown kills whatever still runs in the sandbox and removes every
// trace of it, after reading what the auditor's evidence needs.
func teardown(box *sandbox.Sandbox, ev *evidence) {
	if box == nil {
		return
	}
	_ = box.Kill()
	ev.noteSandbox(box)
	if err := box.Destroy(); err != nil {
		ev.TeardownError = err.Error()
	}
	ev.mark("teardown")
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

func openPipes(req *Request) (*pipes, error) {
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
