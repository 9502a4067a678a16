package interminai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// ReadRequest reads and decodes the one request line of a connection. An
// *Error means the client sent a bad line and is owed an error reply
// (Fail(err)); any other error is the transport's (the client went away,
// a deadline the caller set on r fired), and there is no one to answer.
// It may read past the newline; a connection carries one request, so
// nothing after it is meant for anyone.
func ReadRequest(r io.Reader) (Request, error) {
	line, err := readLine(r, MaxLine, "Invalid request")
	if err != nil {
		return nil, err
	}
	return Decode(line)
}

// WriteReply encodes rep and writes it as one line in one Write, so a
// client never reads half of it unless the connection breaks.
func WriteReply(w io.Writer, rep Reply) error {
	line, err := EncodeReply(rep)
	if err != nil {
		return err
	}
	if _, err := w.Write(line); err != nil {
		return fmt.Errorf("write reply: %w", err)
	}
	return nil
}

// Call sends req to the daemon at socketPath and returns its reply. A
// {"status":"error"} reply comes back with a *RemoteError carrying the
// daemon's message. Call does not half-close its side after the request:
// a daemon holding a WAIT may take the end of the connection for the
// client's death. The wait is bounded by ctx only, since WAIT may rightly
// block until the program exits; cancelling ctx ends it with ctx's cause.
func Call(ctx context.Context, socketPath string, req Request) (Reply, error) {
	line, err := EncodeRequest(req)
	if err != nil {
		return Reply{}, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return Reply{}, fmt.Errorf("connect %s: %w", socketPath, err)
	}
	defer conn.Close()
	// A blocked read ignores ctx; an expired deadline unblocks it.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(line); err != nil {
		return Reply{}, callErr(ctx, "send request to "+socketPath, err)
	}
	replyLine, err := readLine(conn, MaxLine, "invalid reply")
	if err != nil {
		return Reply{}, callErr(ctx, "read reply from "+socketPath, err)
	}
	rep, err := DecodeReply(replyLine)
	if err != nil {
		return Reply{}, fmt.Errorf("read reply from %s: %w", socketPath, err)
	}
	if rep.Status == StatusError {
		return rep, &RemoteError{Message: rep.Error}
	}
	return rep, nil
}

// callErr names ctx's cause when the context ended the call, because the
// deadline error the I/O returns would hide why.
func callErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, context.Cause(ctx))
	}
	return fmt.Errorf("%s: %w", op, err)
}
