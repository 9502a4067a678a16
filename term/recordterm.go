package term

import (
	"cmp"
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

// The daemon's side of a recorded session (record.go): what an epoch's
// close asks of the terminal, and keys, which MCP's terminal_input sends
// and a recording records as input.key.

// masterReadable reports whether output waits on the master, unread.
func (d *Daemon) masterReadable() bool {
	r := false
	_ = d.raw.Control(func(fd uintptr) { r = pollReadable(int(fd)) })
	return r
}

// pollReadable reports, without waiting, whether fd has something to read
// (or has hung up: the read then says how).
func pollReadable(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0 && pfd[0].Revents != 0
	}
}

// dropped is how many bytes of replies were dropped at
// maxPendingReplies.
func (d *Daemon) dropped() int64 {
	d.replyMu.Lock()
	defer d.replyMu.Unlock()
	return d.repliesDropped
}

// kernelSize is the terminal's size as the kernel has it (TIOCGWINSZ),
// which the program can set on its side.
func (d *Daemon) kernelSize() (cols, rows int, err error) {
	var ws *unix.Winsize
	cerr := d.raw.Control(func(fd uintptr) { ws, err = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) })
	if err = cmp.Or(cerr, err); err != nil {
		return 0, 0, fmt.Errorf("get the terminal's size: %w", err)
	}
	return int(ws.Col), int(ws.Row), nil
}

// repliesOwed reports whether query replies wait to be written.
func (d *Daemon) repliesOwed() bool {
	d.replyMu.Lock()
	defer d.replyMu.Unlock()
	return len(d.replies) > 0
}

// Key sends one termverify.key/v1 chord, encoded as a terminal would
// send it in the program's current modes (ptyinput), by ctx's deadline.
// An unencodable chord writes nothing. A recorded session records it as
// input.key.
func (d *Daemon) Key(ctx context.Context, chord []string) error {
	if d.Exited() {
		return ErrExited
	}
	deadline, _ := ctx.Deadline()
	if d.rec != nil {
		return d.rec.key(ctx, chord, deadline)
	}
	b, err := d.encodeKey(chord)
	if err != nil {
		return err
	}
	return d.write(b, deadline)
}

// encodeKey is chord's bytes in the program's current modes.
func (d *Daemon) encodeKey(chord []string) ([]byte, error) {
	d.mu.Lock()
	m := ptydrive.ModesOf(d.emu)
	d.mu.Unlock()
	b, err := ptyinput.EncodeKey(chord, m)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", chord, err)
	}
	return b, nil
}
