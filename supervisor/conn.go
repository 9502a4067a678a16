package supervisor

import (
	"context"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// proc is what a session needs of the running subject: its OS-observed
// end, and a way to kill its whole tree.
type proc interface {
	Wait() (sandbox.Exit, error)
	Kill() error
}

// conn is the adapter-specific part of a session: how an input reaches
// the subject and how what the subject says comes back, as the records
// the session keeps (said). pipeConn carries control/v1 lines over the subject's stdin
// and stdout; ptyConn (ptyconn.go) types inputs into the sandbox's
// terminal and answers with observations of its screen. The rest — the
// lifecycle and its phases, the deadlines, the recording, the OS exit and
// the ending — is the session's, shared by both.
//
// All calls happen on the session's goroutine, each given the context of
// the phase it belongs to. A call that would block returns
// os.ErrDeadlineExceeded at the context's deadline, or at once after the
// run is interrupted.
type conn interface {
	// deliver delivers in: prepared (protocolConn), or made now with the
	// manual clock at now (its value after in was recorded).
	deliver(ctx context.Context, in input.Input, now int64) error
	// next returns the subject's next message and the size of its wire
	// form (0 when it has none); io.EOF at the end of its stream.
	next(ctx context.Context) (m said, wireBytes int, err error)
	// arrived reports, without blocking, whether the subject sent anything
	// next has not returned yet: the idle check.
	arrived() bool
	// undelivered reports whether delivered bytes still wait unread by
	// the subject: at a deadline, the input never reached it.
	undelivered() bool
	// close ends the run context's hold on the conn.
	close()
}

// said is one message of the subject as the session records it, whatever
// the adapter: what conn.next returns. kind is its place in the
// lifecycle, as the control/v1 message it is or stands for (a PTY
// observation closes an epoch as a control/v1 observation does); the
// other fields are the records and facts of that kind, made at the
// adapter's edge: by pipeConn from the control/v1 line under upstream's
// recording rules (controlrecords.go), by ptyConn from the terminal's screen.
type said struct {
	kind control.Kind
	diag transcript.Diagnostic  // diagnostic: as recorded, its code included
	obs  transcript.Observation // session.ready, observation: as recorded
	// ownExit is an observation reporting the subject's own exit, which
	// only the adapter may observe: refused, never recorded (obs is empty).
	ownExit bool
	exit    *transcript.Exit    // run.finished: the exit the subject claims
	failure *transcript.Failure // session.failed, run.failed: the subject's error
	refusal *receipts.Refusal   // session.unsupported: the constraint it refuses
}

// protocolConn is a conn whose subject speaks a protocol with the
// adapter: it is told the session opens, and its inputs are wire lines
// that can be made before they are sent. A terminal program is not told
// it is tested, and its input's bytes depend on the modes it has set
// when they are sent, so ptyConn is no protocolConn.
type protocolConn interface {
	// hello opens the session (control/v1: session.hello).
	hello(ctx context.Context, runID string, cfg config.Config) error
	// prepare readies next's delivery while the subject works on the
	// current input; prepared reports the wire size of a prepared input
	// whose delivery does not depend on when it is recorded (sendFirst).
	prepare(next input.Input)
	prepared() (wireBytes int, ok bool)
	// recorded says that every message next returned is recorded and
	// dropped (its memory may be reused), and that the recording since the
	// last delivery is done: a reply to it may be waiting already.
	recorded()
}

// pipeConn is the control/v1 adapter's conn: one JSON line each way over
// the subject's stdin and stdout, read and written through pipeIO on the
// session's goroutine.
//
// Reading on the goroutine that decides is what makes the idle check
// exact: before each input, the bytes the Reader holds plus a zero-timeout
// poll of the pipe are everything the subject has sent, so a message there
// arrived while no epoch was open (ADAPTER-RULES.md, improvement 2).
type pipeConn struct {
	io    *pipeIO
	rd    *control.Reader
	ahead ahead // the next input's line (sendfirst.go)

	stopIO    func() bool
	ioStopped chan struct{} // closed once a started stopIO func is over
}

// newPipeConn makes a signal or the run deadline (ctx done) unblock
// whatever I/O is in flight, and fail every later I/O at once: no
// deadline set afterwards undoes an interruption. The caller must call
// close.
func newPipeConn(ctx context.Context, pio *pipeIO) *pipeConn {
	c := &pipeConn{io: pio, rd: control.NewReader(stdoutReader{pio}), ioStopped: make(chan struct{})}
	c.stopIO = context.AfterFunc(ctx, func() {
		defer close(c.ioStopped)
		pio.interrupt()
	})
	return c
}

// close stops the run context's hold on the I/O; once it returns, no
// goroutine uses the pipes or the eventfd.
func (c *pipeConn) close() {
	if !c.stopIO() {
		<-c.ioStopped // the context is done and the func was started
	}
}

func (c *pipeConn) hello(ctx context.Context, runID string, cfg config.Config) error {
	line, err := control.Encode(control.NewHello(runID, cfg))
	if err != nil {
		return err
	}
	_, err = c.io.write(ctx, line)
	return err
}

func (c *pipeConn) prepare(next input.Input) { c.ahead.encode(next) }

func (c *pipeConn) prepared() (int, bool) { return c.ahead.size() }

func (c *pipeConn) deliver(ctx context.Context, in input.Input, now int64) error {
	line, err := c.ahead.take(in, now)
	if err != nil {
		return err
	}
	_, err = c.io.write(ctx, line)
	return err
}

// next reads through the Reader, an io.Reader of pipeIO, which therefore
// takes ctx's deadline before the read rather than with each call. The
// message becomes the session's records here (saidOf): the rest of the
// session never sees control/v1's shapes.
func (c *pipeConn) next(ctx context.Context) (said, int, error) {
	c.io.bound(ctx)
	m, raw, err := c.rd.Next()
	if err != nil {
		return said{}, 0, err
	}
	return saidOf(m), len(raw), nil
}

// arrived: bytes the Reader holds, bytes in the pipe, or end of stream
// (POLLHUP).
func (c *pipeConn) arrived() bool { return c.rd.Buffered() > 0 || c.io.pending() }

func (c *pipeConn) undelivered() bool { return c.io.unreadInput() }

// recorded recycles the Reader's memory: nothing decoded before is used
// after this point. An input sent before it was recorded has had the
// recording's time to be answered, more often than not: the next read
// tries the pipe before it waits.
func (c *pipeConn) recorded() {
	c.rd.Recycle()
	c.io.readFirst()
}
