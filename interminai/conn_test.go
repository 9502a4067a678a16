package interminai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// serve listens on a socket in t.TempDir() and answers each connection
// with handle, one goroutine per connection, all waited for at cleanup.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // the listener closed at cleanup
			}
			wg.Go(func() {
				defer conn.Close()
				handle(conn)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return path
}

// echoDaemon answers each request as a daemon would from ReadRequest and
// WriteReply: an error reply for a bad line, otherwise KILL's reply for a
// KILL and STOP's for everything else.
func echoDaemon(t *testing.T) func(net.Conn) {
	return func(conn net.Conn) {
		req, err := ReadRequest(conn)
		var rep Reply
		switch e, bad := errors.AsType[*Error](err); {
		case bad:
			rep = Fail(e)
		case err != nil:
			return // the client is gone: no one to answer
		default:
			var data any = StopData{Message: StopMessage}
			if k, ok := req.(*Kill); ok {
				data = KillData{SignalSent: SignalName(k.Signal)}
			}
			if rep, err = OK(data); err != nil {
				t.Error(err)
				return
			}
		}
		if err := WriteReply(conn, rep); err != nil {
			t.Errorf("WriteReply: %v", err)
		}
	}
}

func TestCall(t *testing.T) {
	path := serve(t, echoDaemon(t))
	rep, err := Call(t.Context(), path, &Kill{Signal: syscall.SIGINT})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	var kd KillData
	if err := rep.DecodeData(&kd); err != nil || kd.SignalSent != "SIGINT" {
		t.Fatalf("KILL reply %s: %+v, %v", rep.Data, kd, err)
	}
	rep, err = Call(t.Context(), path, &Stop{})
	var sd StopData
	if err != nil || rep.DecodeData(&sd) != nil || sd.Message != StopMessage {
		t.Fatalf("STOP reply %+v, %v", rep, err)
	}
}

// TestCallErrorReply checks that a daemon's error reply reaches the
// client as a *RemoteError carrying the daemon's words.
func TestCallErrorReply(t *testing.T) {
	path := serve(t, func(conn net.Conn) {
		if _, err := ReadRequest(conn); err != nil {
			t.Error(err)
		}
		_ = WriteReply(conn, Fail(errors.New("Process not running")))
	})
	rep, err := Call(t.Context(), path, &Input{Data: "x"})
	re, ok := errors.AsType[*RemoteError](err)
	if !ok || re.Message != "Process not running" || rep.Status != StatusError {
		t.Fatalf("Call = %+v, %v; want a RemoteError", rep, err)
	}
}

// TestCallNoSocket: a missing socket is the OS's ENOENT, which the CLI
// reports as "No such file".
func TestCallNoSocket(t *testing.T) {
	_, err := Call(t.Context(), filepath.Join(t.TempDir(), "absent.sock"), &Stop{})
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("Call = %v, want ENOENT", err)
	}
}

// TestCallContext: a WAIT that never ends is ended by the context, with
// its cause, and Call does not half-close the connection while it waits.
// The daemon cancels the context itself once it has looked, so the test
// does not depend on timing.
func TestCallContext(t *testing.T) {
	cause := errors.New("the agent gave up")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	sawEOF := make(chan bool, 1)
	path := serve(t, func(conn net.Conn) {
		if _, err := ReadRequest(conn); err != nil {
			t.Error(err)
			return
		}
		// Hold the WAIT; a half-close from the client would read as EOF
		// here, where a waiting client gives a timeout.
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := conn.Read(make([]byte, 1))
		sawEOF <- errors.Is(err, io.EOF)
		cancel(cause)
		// Then hold the connection until the client gives up and closes it.
		_ = conn.SetReadDeadline(time.Time{})
		_, _ = io.Copy(io.Discard, conn)
	})
	_, err := Call(ctx, path, &Wait{})
	if !errors.Is(err, cause) {
		t.Fatalf("Call = %v, want the context's cause", err)
	}
	if <-sawEOF {
		t.Fatal("the daemon saw EOF while the WAIT was pending: Call half-closed")
	}
}

// TestCallBadReplies: a daemon that closes without a reply, or sends one
// over the limit or malformed, is an *Error, never a hang or a panic.
func TestCallBadReplies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(io.Writer)
		rule  string
	}{
		{"closed without a reply", func(io.Writer) {}, RuleUnterminated},
		{"reply without newline", func(w io.Writer) { io.WriteString(w, `{"status":"ok"}`) }, RuleUnterminated},
		{"reply not JSON", func(w io.Writer) { io.WriteString(w, "ok\n") }, RuleSyntax},
		{"reply without status", func(w io.Writer) { io.WriteString(w, "{}\n") }, RuleReply},
		{"reply over the limit", func(w io.Writer) {
			chunk := bytes.Repeat([]byte("a"), 1<<20)
			for range MaxLine/len(chunk) + 2 {
				if _, err := w.Write(chunk); err != nil {
					return // the client stopped reading at the limit
				}
			}
		}, RuleTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := serve(t, func(conn net.Conn) {
				if _, err := ReadRequest(conn); err != nil {
					t.Error(err)
				}
				tc.reply(conn)
			})
			_, err := Call(t.Context(), path, &Status{})
			e, ok := errors.AsType[*Error](err)
			if !ok || e.Rule != tc.rule {
				t.Fatalf("Call = %v, want rule %s", err, tc.rule)
			}
		})
	}
}

// TestServeGarbage: the daemon's half answers a garbage line with the
// error reply and the client reads it, over a real socket.
func TestServeGarbage(t *testing.T) {
	path := serve(t, echoDaemon(t))
	for _, tc := range []struct {
		line, want string
	}{
		{"garbage\n", `"status":"error"`},
		{`{"type":"NOPE"}` + "\n", `"error":"Unknown command: NOPE"`},
		{`{"data":1}` + "\n", `"error":"Invalid request: missing 'type' field"`},
		{`{"type":"KILL","data":{"signal":"9"}}` + "\n", `"signal_sent":"SIGKILL"`},
	} {
		conn, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, tc.line); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil || !strings.Contains(string(got), tc.want) || !strings.HasSuffix(string(got), "}\n") {
			t.Errorf("reply to %q = %q, %v; want one line with %s", tc.line, got, err, tc.want)
		}
	}
}

// socketpair is a connected pair of unix stream sockets.
func socketpair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f) // dups fd
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns[0], conns[1]
}

// TestReadRequestSocketpair reads requests from a client end that writes
// whole, half-written and no lines, over a socketpair.
func TestReadRequestSocketpair(t *testing.T) {
	for _, tc := range []struct {
		name, sent string
		want       Request
		rule       string
	}{
		{name: "one request", sent: `{"type":"RESIZE","data":{"cols":100,"rows":30}}` + "\n", want: &Resize{Size: Size{Cols: 100, Rows: 30}}},
		{name: "bytes after the newline are not read as a request", sent: `{"type":"STOP"}` + "\n" + "garbage", want: &Stop{}},
		{name: "half-written", sent: `{"type":"INP`, rule: RuleUnterminated},
		{name: "whole object without newline", sent: `{"type":"STOP"}`, rule: RuleUnterminated},
		{name: "nothing", sent: ``, rule: RuleUnterminated},
		{name: "garbage line", sent: "\x00\x01\n", rule: RuleSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := socketpair(t)
			var wg sync.WaitGroup
			wg.Go(func() {
				io.WriteString(client, tc.sent)
				client.Close() // the client dies here
			})
			defer wg.Wait()
			_ = server.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := ReadRequest(server)
			if tc.rule != "" {
				e, ok := errors.AsType[*Error](err)
				if !ok || e.Rule != tc.rule {
					t.Fatalf("ReadRequest = %v, %v; want rule %s", got, err, tc.rule)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ReadRequest = %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
}

// TestReadRequestTransportError: a read that fails for the transport (a
// deadline) is not an *Error, so the daemon knows not to answer.
func TestReadRequestTransportError(t *testing.T) {
	_, server := socketpair(t)
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := ReadRequest(server)
	if _, bad := errors.AsType[*Error](err); bad || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadRequest = %v, want the deadline and no *Error", err)
	}
}
