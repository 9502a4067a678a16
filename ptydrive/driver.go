package ptydrive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/ptyinput"
	"github.com/termverify/termverify-sandbox/quiesce"
	"github.com/termverify/termverify-sandbox/vt"
)

// DefaultOutputBudget is how much of one epoch's output is kept when
// Config.OutputBudget is zero; the emulator still sees all of it.
const DefaultOutputBudget = 16 << 20

// readChunk is one read of the master.
const readChunk = 64 << 10

// pumpBudget and pumpTime bound one pump: a program whose output the emulator handles
// slower than it arrives (a flood of repaint sequences) never lets the
// master run dry, and the caller must still see its deadline.
const (
	pumpBudget = 1 << 20
	pumpTime   = 10 * time.Millisecond
)

// maxPendingReplies bounds the replies owed to a program that does not
// read them: past it new ones are dropped and counted (a query answered
// with a large clipboard amplifies a few bytes into kilobytes).
const maxPendingReplies = 64 << 10

// Event-driven evaluation: after output or a write the next evaluation
// comes at once; with nothing happening it backs off from minBackoff to
// maxBackoff, which bounds how late a program that went quiet without
// writing anything (a sleep, then a read) is noticed.
const (
	minBackoff = 250 * time.Microsecond
	maxBackoff = 20 * time.Millisecond
)

// ErrStoppedReading: a write to the program did not complete before the
// context ended: the program stopped reading its terminal.
var ErrStoppedReading = errors.New("the program stopped reading its terminal")

// Config is what New needs.
type Config struct {
	Cols, Rows int
	Scrollback int // lines kept by the emulator (vt.Config)
	// Tasks lists the processes whose state quiesce judges (a sandbox's
	// PID namespace: quiesce.TasksInPIDNamespace).
	Tasks func() ([]int, error)
	// OutputBudget bounds one epoch's output kept for the transcript
	// (DefaultOutputBudget when zero); beyond it bytes are counted, not
	// kept.
	OutputBudget int
	// EndOnOverflow makes Settle return (Settled.Overflow) as soon as
	// the epoch's output passes OutputBudget, for a caller that cannot
	// record such an epoch anyway: it ends a flood without waiting for
	// the flood to end.
	EndOnOverflow bool
	// Marker, when set, is a readiness marker the program prints when it
	// waits for input (SettleOnMarker): it is taken out of the output
	// wherever it appears, so the screen and the recorded output never
	// hold it.
	Marker []byte
}

// Driver drives one program on a pseudoterminal. It is not safe for
// concurrent use: one goroutine runs the epochs.
type Driver struct {
	fd      int      // our own non-blocking duplicate of the master
	slave   *os.File // kept by the caller, polled and queried by quiesce
	emu     *vt.Terminal
	judge   *quiesce.Judge
	endOver bool         // Config.EndOnOverflow
	marker  []byte       // Config.Marker
	held    []byte       // read bytes that may begin a marker, not shown yet
	markers int          // markers read since SettleOnMarker last returned on one
	out     OutputBuffer // this epoch's output, up to the budget
	replies []byte       // owed to the program, not yet written
	// RepliesDropped counts replies dropped because the program did not
	// take the ones before (maxPendingReplies), for a diagnostic.
	RepliesDropped int64
	buf            []byte
}

// New returns a Driver of master whose emulator has the size c gives.
// The terminal's own size is the caller's to set, before the program
// starts (the sandbox does, and checks it, before it releases the
// program): New never sets it, since by now the program may have set a
// size of its own, which it must keep and KernelSize reports. The
// Driver keeps its own duplicate of the master and puts it in
// non-blocking mode (again at each Settle and Write: the mode belongs to
// the description the caller's file shares); the caller keeps master and
// slave open while it runs and does not read the master itself.
func New(master, slave *os.File, c Config) (*Driver, error) {
	if c.Cols < 1 || c.Rows < 1 || c.Cols > vt.MaxCols || c.Rows > vt.MaxRows {
		return nil, fmt.Errorf("ptydrive: size %dx%d out of range", c.Cols, c.Rows)
	}
	// quiesce takes its descriptors first: os.File.Fd puts the file's
	// description back into blocking mode, which the duplicate shares.
	j, err := quiesce.New(master, slave, c.Tasks)
	if err != nil {
		return nil, err
	}
	fd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ptydrive: dup master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ptydrive: master non-blocking: %w", err)
	}
	return &Driver{
		fd: fd, slave: slave, judge: j, out: NewOutputBuffer(c.OutputBudget), endOver: c.EndOnOverflow,
		marker: bytes.Clone(c.Marker),
		emu:    vt.New(vt.Config{Cols: c.Cols, Rows: c.Rows, Scrollback: c.Scrollback}),
		buf:    make([]byte, readChunk),
	}, nil
}

// Close releases the Driver's duplicate of the master.
func (d *Driver) Close() error { return unix.Close(d.fd) }

// Settled is how Settle ended.
type Settled struct {
	Quiet  bool // the programs wait for input
	Exited bool // exited was closed: the program is gone
	// Overflow: the epoch's output passed the budget (Config.EndOnOverflow).
	Overflow bool
	Why      string // quiesce's last word, for diagnostics
}

// Settle reads the program's output into the emulator, answers its
// queries, and returns when the programs wait for input (quiesce), when
// exited is closed (after the output left in the terminal is read), or
// when ctx ends (its error; the epoch deadline, which says what quiesce
// last saw).
func (d *Driver) Settle(ctx context.Context, exited <-chan struct{}) (Settled, error) {
	backoff := minBackoff
	return d.settle(ctx, exited, "not waiting for input", func(outputCame bool) (step, error) {
		if outputCame {
			backoff = minBackoff
		} else {
			backoff = min(2*backoff, maxBackoff)
		}
		if len(d.replies) > 0 {
			return step{wait: backoff, why: fmt.Sprintf("%d bytes of replies not yet taken by the program", len(d.replies))}, nil
		}
		v, err := d.judge.Evaluate()
		if err != nil {
			return step{}, err
		}
		if v.Quiet {
			return step{done: true, settled: Settled{Quiet: true, Why: v.Why}}, nil
		}
		wait := backoff
		if v.RetryAfter > 0 {
			wait = v.RetryAfter
		}
		return step{wait: wait, why: v.Why}, nil
	})
}

// SettleOnMarker is Settle for programs that announce readiness
// themselves (upstream's opt-in readiness marker, Config.Marker): it
// returns when the program has printed the marker since the last time
// it returned, when exited is closed, or when ctx ends. Quiesce is not
// consulted. The marker itself is taken out of the output: neither the
// emulator nor the epoch's output ever holds it.
func (d *Driver) SettleOnMarker(ctx context.Context, exited <-chan struct{}) (Settled, error) {
	if d.marker == nil {
		return Settled{}, errors.New("ptydrive: SettleOnMarker without Config.Marker")
	}
	return d.settle(ctx, exited, "no readiness marker", func(bool) (step, error) {
		if d.markers > 0 {
			d.markers = 0
			return step{done: true, settled: Settled{Quiet: true, Why: "the program printed its readiness marker"}}, nil
		}
		return step{wait: maxBackoff, why: "no readiness marker yet"}, nil
	})
}

// step is one look of a wait at whether the epoch is over: done with
// how it settled, or how long to wait for output before the next look and
// why it is not over (for the deadline's error).
type step struct {
	done    bool
	settled Settled
	wait    time.Duration
	why     string
}

// settle is the loop of both waits: read the output and answer queries,
// end on an overflow (EndOnOverflow), on the program's exit or on ctx,
// else ask check, and wait for output as long as it says (never past the
// deadline). check learns whether output came during the last wait.
func (d *Driver) settle(ctx context.Context, exited <-chan struct{}, notYet string, check func(outputCame bool) (step, error)) (Settled, error) {
	if err := d.nonblocking(); err != nil {
		return Settled{}, err
	}
	why, came := "", true
	for {
		if err := d.pump(); err != nil {
			return Settled{}, err
		}
		if d.endOver && d.out.Dropped() > 0 {
			return Settled{Overflow: true, Why: "the epoch's output passed its budget"}, nil
		}
		select {
		case <-exited:
			// Nothing writes any more: read everything left, which one
			// pump (bounded in bytes and time) may not have.
			for {
				if err := d.pump(); err != nil {
					return Settled{}, err
				}
				more, err := d.Pending()
				if err != nil || !more || ctx.Err() != nil || (d.endOver && d.out.Dropped() > 0) {
					break
				}
			}
			return Settled{Exited: true, Why: "the program exited"}, nil
		case <-ctx.Done():
			return Settled{Why: why}, fmt.Errorf("ptydrive: %s when the epoch ended (%s): %w", notYet, why, context.Cause(ctx))
		default:
		}
		st, err := check(came)
		if err != nil {
			return Settled{}, err
		}
		if st.done {
			return st.settled, nil
		}
		why = st.why
		wait := st.wait
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, max(time.Until(dl), 0))
		}
		if came, err = d.poll(unix.POLLIN, wait); err != nil {
			return Settled{}, err
		}
	}
}

// Write writes b to the program, as its terminal's input, reading its
// output meanwhile (a program blocked writing cannot read). It returns
// ErrStoppedReading, wrapped with how much was written, when ctx ends
// first.
func (d *Driver) Write(ctx context.Context, b []byte) error {
	if err := d.nonblocking(); err != nil {
		return err
	}
	total := len(b)
	for len(b) > 0 {
		n, err := unix.Write(d.fd, b)
		if n > 0 {
			b = b[n:]
		}
		switch {
		case err == nil || err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return fmt.Errorf("ptydrive: write: %w", err)
		}
		if err := d.pump(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %d of %d bytes written: %w", ErrStoppedReading, total-len(b), total, context.Cause(ctx))
		}
		wait := maxBackoff
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, max(time.Until(dl), 0))
		}
		if _, err := d.poll(unix.POLLOUT|unix.POLLIN, wait); err != nil {
			return err
		}
	}
	return nil
}

// Modes returns the input modes the program has set, for ptyinput.
func (d *Driver) Modes() ptyinput.Modes { return ModesOf(d.emu) }

// Key sends one termverify.key/v1 chord as the terminal would in the
// program's current modes. An unencodable chord writes nothing.
func (d *Driver) Key(ctx context.Context, chord []string) error {
	b, err := ptyinput.EncodeKey(chord, d.Modes())
	if err != nil {
		return err
	}
	return d.Write(ctx, b)
}

// Text sends input text as its UTF-8 bytes, whatever the program's modes
// (ptyinput.EncodeText).
func (d *Driver) Text(ctx context.Context, text string) error {
	return d.Write(ctx, ptyinput.EncodeText(text))
}

// Mouse sends a mouse event as an SGR report, or returns an error
// wrapping ptyinput.ErrMouseNotEnabled, having written nothing.
func (d *Driver) Mouse(ctx context.Context, ev ptyinput.MouseEvent) error {
	b, err := ptyinput.EncodeMouse(ev, d.Modes())
	if err != nil {
		return err
	}
	return d.Write(ctx, b)
}

// Resize sets the terminal's size (TIOCSWINSZ, which sends SIGWINCH to
// the foreground process group) and the emulator's. changed is false for
// the size it already has: nothing is sent.
func (d *Driver) Resize(cols, rows int) (changed bool, err error) {
	if c, r := d.emu.Size(); c == cols && r == rows {
		return false, nil
	}
	if cols < 1 || rows < 1 || cols > vt.MaxCols || rows > vt.MaxRows {
		return false, fmt.Errorf("ptydrive: size %dx%d out of range", cols, rows)
	}
	if err := unix.IoctlSetWinsize(d.fd, unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}); err != nil {
		return false, fmt.Errorf("ptydrive: resize: %w", err)
	}
	d.emu.Resize(cols, rows)
	return true, nil
}

// SetClipboard sets what the program's OSC 52 queries are answered with.
func (d *Driver) SetClipboard(b []byte) { d.emu.SetClipboard(b) }

// Screen is what the terminal shows.
type Screen struct {
	Cols, Rows int
	Lines      []string // exactly Rows lines, trailing spaces dropped
	Cursor     vt.Cursor
	Alternate  bool
	Title      string
}

// Screen returns what the terminal shows now.
func (d *Driver) Screen() Screen { return ScreenOf(d.emu) }

// Emulator returns the emulator, for what Screen does not carry
// (attributes, diagnostics, scrollback). Do not write to it.
func (d *Driver) Emulator() *vt.Terminal { return d.emu }

// Output is one epoch's output.
type Output struct {
	Text    string // as UTF-8: each byte that is not part of valid UTF-8 is U+FFFD
	Invalid int    // how many bytes were replaced
	Dropped int64  // bytes beyond the budget, seen by the emulator but not kept
}

// TakeOutput returns the output since the last call and starts a new
// epoch. An incomplete UTF-8 sequence at the end is kept for the next
// epoch rather than replaced.
func (d *Driver) TakeOutput() Output { return d.takeOutput(false) }

// TakeFinalOutput is TakeOutput for the last epoch: an incomplete UTF-8
// sequence at the end is replaced and counted, since nothing follows.
func (d *Driver) TakeFinalOutput() Output { return d.takeOutput(true) }

func (d *Driver) takeOutput(final bool) Output {
	if final && len(d.held) > 0 {
		// Held back as a possible start of a marker that never came.
		d.show(d.held)
		d.held = nil
	}
	return d.out.Take(final)
}

// pump reads what the master has (up to pumpBudget, so that the caller
// gets back to its deadline) into the emulator and the epoch's output,
// then writes what replies it can.
func (d *Driver) pump() error {
	start := time.Now()
	for read := 0; read < pumpBudget && time.Since(start) < pumpTime; {
		n, err := unix.Read(d.fd, d.buf)
		if n > 0 {
			read += n
			chunk := d.buf[:n]
			if d.marker != nil {
				chunk = d.strip(chunk)
			}
			d.show(chunk)
			continue
		}
		if err == unix.EINTR {
			continue
		}
		if err == nil || err == unix.EAGAIN || err == unix.EIO {
			// EOF or EIO: every slave descriptor is closed; EAGAIN: drained.
			break
		}
		return fmt.Errorf("ptydrive: read: %w", err)
	}
	for len(d.replies) > 0 {
		n, err := unix.Write(d.fd, d.replies)
		if n > 0 {
			d.replies = d.replies[n:]
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			return fmt.Errorf("ptydrive: write replies: %w", err)
		}
	}
	return nil
}

// show hands output to the emulator and to the epoch's output (up to the
// budget), and queues the emulator's replies.
func (d *Driver) show(chunk []byte) {
	d.emu.Write(chunk)
	d.out.Add(chunk)
	if r := d.emu.Replies(); len(d.replies)+len(r) <= maxPendingReplies {
		d.replies = append(d.replies, r...)
	} else {
		d.RepliesDropped += int64(len(r))
	}
}

// strip takes the readiness marker (Config.Marker) out of what was read,
// counting each one, and holds back a tail that could still begin one
// until the next read; it returns what the terminal shows.
func (d *Driver) strip(b []byte) []byte {
	buf := make([]byte, 0, len(d.held)+len(b))
	buf = append(append(buf, d.held...), b...)
	d.held = d.held[:0]
	for {
		i := bytes.Index(buf, d.marker)
		if i < 0 {
			break
		}
		d.markers++
		buf = append(buf[:i], buf[i+len(d.marker):]...)
	}
	for k := min(len(d.marker)-1, len(buf)); k > 0; k-- {
		if bytes.HasPrefix(d.marker, buf[len(buf)-k:]) {
			d.held = append(d.held, buf[len(buf)-k:]...)
			buf = buf[:len(buf)-k]
			break
		}
	}
	return buf
}

// nonblocking puts the master's description (shared with the caller's
// file) in non-blocking mode again: a caller's os.File.Fd call clears it,
// and a blocking read would hang the epoch past its deadline.
func (d *Driver) nonblocking() error {
	if err := unix.SetNonblock(d.fd, true); err != nil {
		return fmt.Errorf("ptydrive: master non-blocking: %w", err)
	}
	return nil
}

// poll waits up to d for events on the master; ready says whether any
// came.
func (d *Driver) poll(events int16, wait time.Duration) (bool, error) {
	if len(d.replies) > 0 {
		events |= unix.POLLOUT
	}
	ts := unix.NsecToTimespec(int64(max(wait, 0)))
	pfd := []unix.PollFd{{Fd: int32(d.fd), Events: events}}
	n, err := unix.Ppoll(pfd, &ts, nil)
	if err != nil && err != unix.EINTR {
		return false, fmt.Errorf("ptydrive: poll: %w", err)
	}
	return n > 0, nil
}

// Pending reports, without reading anything, whether output waits in the
// terminal: what the program wrote while no epoch was open (a background
// job, a clock), which the next epoch reads.
func (d *Driver) Pending() (bool, error) {
	pfd := []unix.PollFd{{Fd: int32(d.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("ptydrive: poll: %w", err)
		}
		return n > 0 && pfd[0].Revents&unix.POLLIN != 0, nil
	}
}

// KernelSize is the terminal's size as the kernel has it (TIOCGWINSZ),
// which the program can change on its side; the emulator keeps the size
// New was given and Resize set.
func (d *Driver) KernelSize() (cols, rows int, err error) {
	ws, err := unix.IoctlGetWinsize(d.fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, fmt.Errorf("ptydrive: get size: %w", err)
	}
	return int(ws.Col), int(ws.Row), nil
}
