package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// stderrCaptureHalf is how much of the subject's stderr the evidence keeps
// at each end: the first and the last 32 KiB; what lies between is counted.
const stderrCaptureHalf = 32 << 10

// stderrGrace bounds the wait for the end of the subject's stderr after
// the teardown. Once every process of the sandbox is dead its write end is
// closed and the rest of the pipe (at most its buffer) is read in
// microseconds; only a process the teardown could not kill (isolation
// none without a cgroup) can hold it longer, and it is not waited for.
const stderrGrace = 2 * time.Second

// stderrDrain is the supervisor's side of the subject's stderr, which is
// a pipe: the subject never holds a host file. A goroutine reads it
// continuously (so the subject never waits on us for long) until the
// subject's end is closed, keeping a bounded capture for the evidence
// (head and tail) and copying it to the --stderr file up to its limit.
// Its results are read only after done is closed.
type stderrDrain struct {
	r     *os.File // our read end: non-blocking, in the runtime poller
	file  *os.File // the --stderr file, or nil
	limit int64    // the file's cap
	done  chan struct{}

	total       int64  // bytes the subject wrote
	head        []byte // the first stderrCaptureHalf bytes
	tail        tailRing
	fileBytes   int64 // written to the file
	fileDropped int64 // not written to the file: over the limit, or after a write error
	fileErr     error
	readErr     error
	abandoned   bool // the write end was still open stderrGrace after the teardown
}

// stderrPipe makes the subject's stderr pipe: the write end (blocking, for
// the subject) and our read end (non-blocking, so that the runtime poller
// takes it and a read parks the goroutine rather than a thread).
func stderrPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// NewFile sees O_NONBLOCK on the read end and registers it with the
	// poller; the write end stays a plain blocking File.
	return os.NewFile(uintptr(fds[0]), "stderr|0"), os.NewFile(uintptr(fds[1]), "stderr|1"), nil
}

// startStderrDrain starts draining r into the capture and file (may be
// nil). It owns r and file from now on.
func startStderrDrain(r, file *os.File, limit int64) *stderrDrain {
	d := &stderrDrain{r: r, file: file, limit: limit, done: make(chan struct{}),
		head: make([]byte, 0, stderrCaptureHalf), tail: tailRing{buf: make([]byte, stderrCaptureHalf)}}
	go d.run()
	return d
}

func (d *stderrDrain) run() {
	defer close(d.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := d.r.Read(buf)
		if n > 0 {
			d.consume(buf[:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				d.readErr = err
			}
			return
		}
	}
}

func (d *stderrDrain) consume(p []byte) {
	d.total += int64(len(p))
	if d.file != nil {
		w := min(int64(len(p)), max(d.limit-d.fileBytes, 0))
		if d.fileErr != nil {
			w = 0
		}
		if w > 0 {
			n, err := d.file.Write(p[:w])
			d.fileBytes += int64(n)
			if err != nil {
				// Go on draining: a full disk must not stall the subject.
				d.fileErr = err
				w = int64(n)
			}
		}
		d.fileDropped += int64(len(p)) - w
	}
	if room := stderrCaptureHalf - len(d.head); room > 0 {
		k := min(room, len(p))
		d.head = append(d.head, p[:k]...)
		p = p[k:]
	}
	d.tail.write(p)
}

// finish waits for the end of the stream, after the teardown. If a
// process outside the teardown's reach still holds the write end, the
// drain is stopped after stderrGrace and the evidence says so.
func (d *stderrDrain) finish() {
	t := time.NewTimer(stderrGrace)
	defer t.Stop()
	select {
	case <-d.done:
		return
	case <-t.C:
	}
	d.abandoned = true
	d.stop()
}

// stop ends the drain at once (an early return of Run: the subject never
// ran, or is being torn down) and waits for its goroutine.
func (d *stderrDrain) stop() {
	_ = d.r.SetReadDeadline(time.Now())
	<-d.done
}

// close stops the drain if needed and closes the pipe end and the file.
func (d *stderrDrain) close() {
	if d == nil {
		return
	}
	d.stop()
	_ = d.r.Close()
	if d.file != nil {
		_ = d.file.Close()
	}
}

// evidence is what the drain saw, for the evidence file. Call it after
// finish or stop.
func (d *stderrDrain) evidence(path string) *StderrEvidence {
	tail := d.tail.bytes()
	st := &StderrEvidence{
		Path: path, Bytes: d.total,
		Text: string([]rune(string(d.head))), // invalid UTF-8 becomes U+FFFD
		Tail: string([]rune(string(tail))),
	}
	st.Dropped = d.total - int64(len(d.head)) - int64(len(tail))
	st.Truncated = st.Dropped > 0
	note := fmt.Sprintf("%d bytes written to stderr", d.total)
	if st.Dropped > 0 {
		note += fmt.Sprintf("; the capture keeps the first %d and the last %d, %d bytes dropped", len(d.head), len(tail), st.Dropped)
	}
	if d.file != nil {
		st.FileBytes, st.FileLimit, st.FileDropped = d.fileBytes, d.limit, d.fileDropped
		switch {
		case d.fileErr != nil:
			st.FileError = d.fileErr.Error()
			note += fmt.Sprintf("; the stderr file holds the first %d (write error: %v), %d bytes dropped", d.fileBytes, d.fileErr, d.fileDropped)
		case d.fileDropped > 0:
			note += fmt.Sprintf("; the stderr file holds the first %d (its limit), %d bytes dropped", d.fileBytes, d.fileDropped)
		}
	}
	if d.readErr != nil {
		st.ReadError = d.readErr.Error()
		note += fmt.Sprintf("; reading stopped: %v", d.readErr)
	}
	if d.abandoned {
		note += fmt.Sprintf("; the stream was still open %v after the teardown (a process outside the sandbox's reach held it), reading stopped there", stderrGrace)
	}
	st.Note = note
	return st
}

// tailRing keeps the last len(buf) bytes written to it.
type tailRing struct {
	buf  []byte
	pos  int // where the next byte goes
	full bool
}

func (r *tailRing) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.pos, r.full = 0, true
		return
	}
	n := copy(r.buf[r.pos:], p)
	copy(r.buf, p[n:])
	if r.pos+len(p) >= len(r.buf) {
		r.full = true
	}
	r.pos = (r.pos + len(p)) % len(r.buf)
}

// bytes returns what the ring holds, oldest first.
func (r *tailRing) bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.pos]...)
	}
	return append(append([]byte(nil), r.buf[r.pos:]...), r.buf[:r.pos]...)
}
