package termmcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/ptyinput"
	"github.com/termverify/termverify-sandbox/term"
)

// Bounds of what a backend does on its own.
const (
	// inputWait bounds writing one input: a program that does not read
	// its terminal fails the call rather than hold it.
	inputWait = 10 * time.Second
	// stopWait bounds a stop's escalation (SIGTERM, SIGHUP, the kill).
	stopWait = 15 * time.Second
)

// backend is one session's terminal: a daemon of this process's own, or
// one at a socket. Both answer interminai's requests with its replies, so
// that a tool reads one shape whichever it is.
type backend interface {
	// call carries out req. An error reply comes back as an error.
	call(ctx context.Context, req interminai.Request) (interminai.Reply, error)
	// modes is the program's terminal modes, for encoding keys; ok is
	// false when the backend cannot know them (a daemon at a socket:
	// the protocol does not carry them).
	modes() (m ptyinput.Modes, ok bool)
	// keys types chords, whose bytes in the program's modes are
	// encoded (encodeKeys checked them all).
	keys(ctx context.Context, chords [][]string, encoded []byte) error
	// release lets go of the backend once the session is over; a local
	// daemon is stopped and closed first.
	release(ctx context.Context) error
}

// local is a daemon of this process's own.
type local struct{ d *term.Daemon }

func (l local) modes() (ptyinput.Modes, bool) { return l.d.Modes(), true }

// keys sends each chord through the daemon, which encodes it in the
// program's modes at that moment and, in a recorded session, records it
// as input.key.
func (l local) keys(ctx context.Context, chords [][]string, _ []byte) error {
	for _, chord := range chords {
		kctx, cancel := context.WithTimeout(ctx, inputWait)
		err := l.d.Key(kctx, chord)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

func (l local) release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, stopWait)
	defer cancel()
	return errors.Join(l.d.Stop(ctx), l.d.Close())
}

func (l local) call(ctx context.Context, req interminai.Request) (interminai.Reply, error) {
	data, err := l.do(ctx, req)
	if err != nil {
		return interminai.Reply{}, err
	}
	return interminai.OK(data)
}

// do is req carried out as the daemon's server carries it out
// (Daemon.Do), but STOP: the session stops the daemon, bounded, and the
// table closes it (release).
func (l local) do(ctx context.Context, req interminai.Request) (any, error) {
	if _, ok := req.(*interminai.Stop); ok {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopWait)
		defer cancel()
		if err := l.d.Stop(ctx); err != nil {
			return nil, err
		}
		return interminai.StopData{Message: interminai.StopMessage}, nil
	}
	return l.d.Do(ctx, req)
}

// remote is a daemon `term start` started, at its socket.
type remote struct{ socket string }

func (r remote) modes() (ptyinput.Modes, bool) { return ptyinput.Modes{}, false }

func (r remote) keys(ctx context.Context, _ [][]string, encoded []byte) error {
	_, err := r.call(ctx, &interminai.Input{Data: string(encoded)})
	return err
}

// release does nothing: the daemon is its starter's, and outlives the
// session unless terminal_stop stopped it.
func (r remote) release(context.Context) error { return nil }

func (r remote) call(ctx context.Context, req interminai.Request) (interminai.Reply, error) {
	rep, err := interminai.Call(ctx, r.socket, req)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ECONNREFUSED):
		return rep, fmt.Errorf("no daemon answers at %s any more (it was stopped, or died): terminal_stop this session, and terminal_attach a running one", r.socket)
	}
	return rep, err
}
