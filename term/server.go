package term

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/interminai"
)

// Bounds of one connection.
const (
	// requestWait bounds how long a client may take to send its request
	// line: a half-written request holds its own goroutine, never another
	// client, and not forever.
	requestWait = 30 * time.Second
	// inputWait bounds INPUT: every byte is written, or the request fails
	// saying how many were.
	inputWait = 10 * time.Second
	// replyWait bounds writing a reply to a client that does not read.
	replyWrite = 10 * time.Second
	// stopWait bounds STOP's escalation (its signals' grace periods and
	// the kill).
	stopWait = 10 * time.Second
)

// Serve answers clients on sock until a STOP request (or ctx's end): one
// request per connection, each on its own goroutine. It owns d and sock:
// when it returns, the program and its whole sandbox have ended, the
// sandbox is destroyed, the socket closed (and an auto-generated one
// removed), and every connection's goroutine has returned. A STOP is
// answered only once all of that but the last step is done, so that a
// client that saw its reply finds nothing of the program left.
func Serve(ctx context.Context, d *Daemon, sock *Socket) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &server{d: d, sock: sock, closing: make(chan struct{}), stopped: make(chan struct{})}
	var conns sync.WaitGroup
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			conn, err := sock.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				// EMFILE and the like: the client is gone, the daemon
				// stays; a pause keeps a persistent error from spinning,
				// and a shutdown meanwhile ends the loop.
				select {
				case <-srv.closing:
					return
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			conns.Go(func() { srv.handle(ctx, conn) })
		}
	}()
	select {
	case <-ctx.Done():
		srv.shutdown(context.Background())
	case <-srv.stopped:
	}
	<-accepting
	cancel()
	conns.Wait()
	return srv.err
}

type server struct {
	d    *Daemon
	sock *Socket

	stopOnce sync.Once
	closing  chan struct{} // closed when shutdown begins
	stopped  chan struct{} // closed once shutdown is done
	err      error
}

// shutdown stops accepting (removing an auto-generated socket), ends the
// program and destroys its sandbox. Only the first call does anything;
// every call returns once it is done.
func (s *server) shutdown(ctx context.Context) {
	s.stopOnce.Do(func() {
		close(s.closing)
		sockErr := s.sock.Close()
		ctx, cancel := context.WithTimeout(ctx, stopWait)
		defer cancel()
		stopErr := s.d.Stop(ctx)
		s.err = errors.Join(sockErr, stopErr, s.d.Close())
		close(s.stopped)
	})
	<-s.stopped
}

// handle serves one connection: one request line, one reply line.
func (s *server) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(requestWait))
	req, err := interminai.ReadRequest(conn)
	if err != nil {
		if _, bad := errors.AsType[*interminai.Error](err); bad {
			s.send(conn, interminai.Fail(err))
		}
		// Otherwise the client is gone (or never finished its line):
		// there is no one to answer.
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	// A client that hangs up ends its request (a WAIT it no longer
	// waits for). Only a hangup does: a client that shut its sending side
	// down after its line (socat, nc -N) still waits for the reply.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		if hungUp(conn, served) {
			cancel()
		}
	})
	s.send(conn, s.serve(ctx, req))
	close(served)
	watch.Wait()
}

// hungUp waits until the client has closed its end of conn (POLLHUP: on
// a unix stream socket only a close of both directions, never a
// half-close, sets it) and reports true, or until done is closed.
func hungUp(conn net.Conn, done <-chan struct{}) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		<-done
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		<-done
		return false
	}
	for {
		var hup bool
		_ = rc.Control(func(fd uintptr) {
			pfd := []unix.PollFd{{Fd: int32(fd)}}
			if n, err := unix.Poll(pfd, 0); err == nil && n > 0 && pfd[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
				hup = true
			}
		})
		if hup {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(hangupPoll):
		}
	}
}

// hangupPoll is how often a request looks for its client's hangup.
const hangupPoll = 20 * time.Millisecond

// serve carries out one request and returns its reply.
func (s *server) serve(ctx context.Context, req interminai.Request) interminai.Reply {
	data, err := s.do(ctx, req)
	if err != nil {
		return interminai.Fail(replyError(err))
	}
	rep, err := interminai.OK(data)
	if err != nil {
		return interminai.Fail(err)
	}
	return rep
}

// do carries out one request and returns its reply's data: STOP, which
// ends this server with the daemon, here; every other request as the
// daemon does it (Daemon.Do).
func (s *server) do(ctx context.Context, req interminai.Request) (any, error) {
	if _, ok := req.(*interminai.Stop); ok {
		// The stop runs to its end, its grace periods included, whatever
		// the client that asked for it does meanwhile.
		s.shutdown(context.WithoutCancel(ctx))
		return interminai.StopData{Message: interminai.StopMessage}, nil
	}
	return s.d.Do(ctx, req)
}

// send writes the reply line; a client gone by then loses it, and nothing
// else does.
func (s *server) send(conn net.Conn, rep interminai.Reply) {
	_ = conn.SetWriteDeadline(time.Now().Add(replyWrite))
	line, err := interminai.EncodeReply(rep)
	if err != nil {
		// A reply the codec refuses (over the line bound: a whole
		// scrollback in colour can be) is not sent: the client gets why.
		if line, err = interminai.EncodeReply(interminai.Fail(fmt.Errorf("the reply cannot be sent (%v): ask for fewer lines with from and to", err))); err != nil {
			return
		}
	}
	_, _ = conn.Write(line)
}

// errWaitTimeout is the cause of a WAIT that reached its timeout_ms.
var errWaitTimeout = errors.New("WAIT timed out")

// replyText is an error reply's text, in the seed's words.
type replyText string

func (e replyText) Error() string { return string(e) }

// notBuilt is the error reply for a request the daemon does not serve yet.
func notBuilt(what string) error {
	return replyText(what + " is not supported by this daemon yet")
}

// replyError is err in the words of an error reply: the seed's where it
// has them.
func replyError(err error) error {
	switch {
	case errors.Is(err, ErrExited):
		return replyText("Process not running")
	case errors.Is(err, ErrInvalidSize):
		return replyText("Invalid size: " + err.Error())
	}
	return err
}
