package supervisor

import (
	"context"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// pipeIO is the session's side of the two protocol pipes: our write end of
// the subject's stdin and our read end of its stdout, both non-blocking,
// plus an eventfd that interrupts them.
//
// Reads and writes go straight to the system call on the session's
// goroutine; only when the pipe is not ready do they wait, in ppoll(2) on
// the pipe and the eventfd with the phase deadline as its timeout. This is
// the runtime poller's contract (a deadline, or an interruption, unblocks
// the call with os.ErrDeadlineExceeded) without its cost: parking the
// goroutine and waking it through epoll and a second thread costs a
// single-flight epoch several futex calls and more than its own work.
//
// The file descriptors belong to pipes, which closes them after the
// session is closed; pipeIO never closes them. Only interrupt may be called
// from another goroutine.
type pipeIO struct {
	in, out     int // raw fds: stdin's write end, stdout's read end
	wake        int // eventfd: readable once interrupt has run
	interrupted atomic.Bool
	deadline    time.Time // the phase's (bound); the zero Time is none
	fds         [2]unix.PollFd
	// replyDue is set once an input is written: the subject cannot have
	// answered it yet, so the next read waits before it reads instead of
	// spending a read(2) on EAGAIN: a single-flight epoch makes only
	// four system calls, so one wasted read is a large share of it.
	replyDue bool
}

// bound makes ctx's deadline (none, if it has none) the poll timeout of
// every later read and write; an interruption outlasts any deadline.
func (p *pipeIO) bound(ctx context.Context) { p.deadline, _ = ctx.Deadline() }

// interrupt makes every read and write in flight or to come fail with
// os.ErrDeadlineExceeded. It is safe to call from any goroutine while
// the eventfd is open.
func (p *pipeIO) interrupt() {
	p.interrupted.Store(true)
	one := [8]byte{1} // a host-endian 1 on every little-endian arch; any non-zero count wakes ppoll
	_, _ = unix.Write(p.wake, one[:])
}

// expired reports whether I/O must stop now.
func (p *pipeIO) expired() bool {
	return p.interrupted.Load() || (!p.deadline.IsZero() && !time.Now().Before(p.deadline))
}

// wait blocks until fd is ready for events, the deadline passes or the
// I/O is interrupted. It returns nil when the caller should check expired
// and retry its system call (fd ready, the timeout reached, or ppoll
// interrupted by a signal), os.ErrDeadlineExceeded when interrupted.
func (p *pipeIO) wait(fd int, events int16) error {
	var ts *unix.Timespec
	if !p.deadline.IsZero() {
		left := time.Until(p.deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := unix.NsecToTimespec(int64(left))
		ts = &t
	}
	p.fds = [2]unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(p.wake), Events: unix.POLLIN}}
	n, err := unix.Ppoll(p.fds[:], ts, nil)
	switch {
	case err == unix.EINTR:
		return nil
	case err != nil:
		return err
	case n > 0 && p.fds[1].Revents != 0:
		return os.ErrDeadlineExceeded
	}
	return nil // ready, or timed out: the caller's expired says which
}

// read reads from the subject's stdout: io.EOF at end of stream,
// os.ErrDeadlineExceeded (in an *os.PathError, as os.File gives it) at the
// deadline or once interrupted.
func (p *pipeIO) read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	// Right after an input the reply cannot be there yet: wait first.
	waitFirst := p.replyDue
	p.replyDue = false
	for ; ; waitFirst = false {
		if p.expired() {
			return 0, pathError("read", "|0", os.ErrDeadlineExceeded)
		}
		if !waitFirst {
			n, err := unix.Read(p.out, b)
			switch {
			case err == nil && n == 0:
				return 0, io.EOF
			case err == nil:
				return n, nil
			case err == unix.EINTR:
				continue
			case err != unix.EAGAIN:
				return 0, pathError("read", "|0", err)
			}
		}
		if err := p.wait(p.out, unix.POLLIN); err != nil {
			return 0, pathError("read", "|0", err)
		}
	}
}

// write writes all of b to the subject's stdin, waiting for room as
// needed until ctx's deadline; errors are as os.File.Write gives them
// (EPIPE once the subject closed its stdin).
func (p *pipeIO) write(ctx context.Context, b []byte) (int, error) {
	p.bound(ctx)
	done := 0
	for done < len(b) {
		if p.expired() {
			return done, pathError("write", "|1", os.ErrDeadlineExceeded)
		}
		n, err := unix.Write(p.in, b[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == nil || err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return done, pathError("write", "|1", err)
		}
		if err := p.wait(p.in, unix.POLLOUT); err != nil {
			return done, pathError("write", "|1", err)
		}
	}
	p.replyDue = len(b) > 0
	return done, nil
}

// readFirst makes the next read try the pipe before it waits, even right
// after a write: for a caller that did enough work since that write for
// the reply to be there already.
func (p *pipeIO) readFirst() { p.replyDue = false }

// pending reports whether the subject's stdout has bytes or its end of
// stream (POLLHUP) waiting, without blocking.
func (p *pipeIO) pending() bool {
	fds := [1]unix.PollFd{{Fd: int32(p.out), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds[:], 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// unreadInput reports whether bytes we wrote still sit in the subject's
// stdin pipe. FIONREAD works on either end of a Linux pipe.
func (p *pipeIO) unreadInput() bool {
	n, _ := unix.IoctlGetInt(p.in, unix.TIOCINQ) // FIONREAD
	return n > 0
}

func pathError(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// stdoutReader is the subject's stdout as the control Reader reads it.
type stdoutReader struct{ p *pipeIO }

func (r stdoutReader) Read(b []byte) (int, error) { return r.p.read(b) }
