package term

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"time"
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

// The data members of the replies, spelled as seed 002 spells them.
type (
	cursorData struct {
		Row int `json:"row"`
		Col int `json:"col"`
	}
	sizeData struct {
		Rows int `json:"rows"`
		Cols int `json:"cols"`
	}
	outputData struct {
		Screen              string     `json:"screen"`
		Cursor              cursorData `json:"cursor"`
		Size                sizeData   `json:"size"`
		From                int        `json:"from"`
		To                  int        `json:"to"`
		ScrollbackAvailable int        `json:"scrollback_available"`
		ScrollbackCapacity  int        `json:"scrollback_capacity"`
	}
	statusData struct {
		Running  bool  `json:"running"`
		ExitCode *int  `json:"exit_code,omitempty"`
		Activity *bool `json:"activity,omitempty"`
	}
	waitData struct {
		ExitCode *int  `json:"exit_code,omitempty"`
		Activity *bool `json:"activity,omitempty"`
		Exited   *bool `json:"exited,omitempty"`
	}
	killData struct {
		SignalSent string `json:"signal_sent"`
	}
	messageData struct {
		Message string `json:"message"`
	}
	resizeData struct {
		Size sizeData `json:"size"`
	}
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
	srv := &server{d: d, sock: sock, stopped: make(chan struct{})}
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
				// stays; a pause keeps a persistent error from spinning.
				time.Sleep(10 * time.Millisecond)
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
	stopped  chan struct{} // closed once shutdown is done
	err      error
}

// shutdown stops accepting (removing an auto-generated socket), ends the
// program and destroys its sandbox. Only the first call does anything;
// every call returns once it is done.
func (s *server) shutdown(ctx context.Context) {
	s.stopOnce.Do(func() {
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
	line, err := readLine(conn)
	if err != nil {
		s.send(conn, nil, err)
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	req, err := decodeRequest(line)
	if err != nil {
		s.send(conn, nil, err)
		return
	}
	// A client that hangs up ends its request (a WAIT it no longer
	// waits for); it sends nothing after its line, so any read's end is
	// the hangup.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var watch sync.WaitGroup
	watch.Go(func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		cancel()
	})
	data, err := s.serve(ctx, req)
	s.send(conn, data, err)
	// Ends the hangup watcher's read.
	_ = conn.SetReadDeadline(time.Now())
	watch.Wait()
}

// serve carries out one request and returns its reply's data.
func (s *server) serve(ctx context.Context, req request) (any, error) {
	d := s.d
	switch req.Type {
	case typeInput:
		ictx, cancel := context.WithTimeout(ctx, inputWait)
		defer cancel()
		return nil, d.Input(ictx, []byte(req.Data))
	case typeOutput:
		sc := d.Output(req.Range, req.ANSI)
		return outputData{
			Screen: sc.Text,
			Cursor: cursorData{Row: sc.Row, Col: sc.Col},
			Size:   sizeData{Rows: sc.Rows, Cols: sc.Cols},
			From:   sc.From, To: sc.To,
			ScrollbackAvailable: sc.Scrollback, ScrollbackCapacity: sc.ScrollbackN,
		}, nil
	case typeStatus:
		st := d.Status(req.Activity)
		out := statusData{Running: st.Running}
		if !st.Running {
			out.ExitCode = &st.ExitCode
		}
		if req.Activity {
			out.Activity = &st.Activity
		}
		return out, nil
	case typeWait:
		st, err := d.Wait(ctx, req.Activity)
		if err != nil {
			return nil, err
		}
		var out waitData
		exited := !st.Running
		if exited {
			out.ExitCode = &st.ExitCode
		}
		if req.Activity {
			out.Activity, out.Exited = &st.Activity, &exited
		}
		return out, nil
	case typeKill:
		if err := d.Signal(req.Signal); err != nil {
			return nil, err
		}
		return killData{SignalSent: SignalName(req.Signal)}, nil
	case typeResize:
		if err := d.Resize(req.Cols, req.Rows); err != nil {
			return nil, err
		}
		return resizeData{Size: sizeData{Rows: req.Rows, Cols: req.Cols}}, nil
	case typeStop:
		s.shutdown(ctx)
		return messageData{Message: "Shutting down"}, nil
	}
	return nil, &requestError{msg: "Unknown command: " + req.Type}
}

// send writes the reply line; a client gone by then loses it, and nothing
// else does.
func (s *server) send(conn net.Conn, data any, err error) {
	rep := reply{Status: "ok", Data: data}
	if err != nil {
		rep = reply{Status: "error", Error: errorText(err)}
	}
	b, merr := json.Marshal(rep)
	if merr != nil {
		b, _ = json.Marshal(reply{Status: "error", Error: "encode the reply: " + merr.Error()})
	}
	_ = conn.SetWriteDeadline(time.Now().Add(replyWrite))
	_, _ = conn.Write(append(b, '\n'))
}

// errorText is an error reply's text: the seed's words where it has them.
func errorText(err error) string {
	switch {
	case errors.Is(err, ErrExited):
		return "Process not running"
	case errors.Is(err, ErrInvalidSize):
		return "Invalid size: " + err.Error()
	}
	return err.Error()
}
