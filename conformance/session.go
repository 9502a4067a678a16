package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"
)

// Step is one step of a daemon session case: bytes sent on a named
// connection (opened at its first step), then, unless NoReply, the one
// reply line read from it, compared exactly with Reply, or only by its
// status when Status is set (a reply whose data depends on the host).
type Step struct {
	Conn     string `json:"conn"`
	Send     string `json:"send,omitempty"`
	SendFile string `json:"send_file,omitempty"` // a case file's bytes instead (decompressed if .gz)
	Reply    string `json:"reply,omitempty"`
	Status   string `json:"status,omitempty"`
	NoReply  bool   `json:"no_reply,omitempty"`
}

// A Daemon starts an interminai daemon serving program at socket and
// returns once the socket listens; stop ends whatever is left of it.
type Daemon interface {
	Start(ctx context.Context, socket string, program []string, dir string) (stop func(), err error)
}

// CommandDaemon is a daemon's command line (docs/CONFORMANCE.md):
//
//	ARGV... --socket S -- PROGRAM...
//
// run in dir; it must return exit 0 once S listens, the daemon running
// on in the background. Ours is `termverify-sandbox term start`.
type CommandDaemon struct {
	Argv []string
}

// Start runs the command.
func (d CommandDaemon) Start(ctx context.Context, socket string, program []string, dir string) (func(), error) {
	if len(d.Argv) == 0 {
		return nil, errors.New("daemon: empty command")
	}
	args := append(append([]string{}, d.Argv[1:]...), "--socket", socket, "--")
	cmd := outsideCommand(ctx, d.Argv[0], append(args, program...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &limited{w: &stderr, n: 16 << 10}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("daemon %s: %w: %s", d.Argv[0], err, strings.TrimSpace(stderr.String()))
	}
	return func() { stopDaemon(socket) }, nil
}

// stopDaemon sends STOP to a daemon that may still listen, and waits
// for its reply; a daemon already gone refuses the connection.
func stopDaemon(socket string) {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := c.Write([]byte(`{"type":"STOP"}` + "\n")); err == nil {
		_, _ = bufio.NewReader(c).ReadString('\n')
	}
}

// sessionWait bounds one step's reply.
const sessionWait = 20 * time.Second

// session runs a daemon session case and returns "" when every reply is
// the golden one, else the first that is not.
func session(ctx context.Context, c *Corpus, cs Case, opts Options) (string, error) {
	if opts.Work == nil {
		return "", errors.New("no work directory for the daemon's socket")
	}
	const name = "daemon.sock"
	socket := filepath.Join(opts.Work.Path(), name)
	// A daemon given its socket's path may leave the socket file when it
	// stops (ours removes only one it named itself): it is ours to remove.
	defer removeWork(opts.Work, name)
	stop, err := opts.Daemon.Start(ctx, socket, cs.Program, opts.Work.Path())
	if err != nil {
		return "", err
	}
	defer stop()
	conns := map[string]net.Conn{}
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	readers := map[string]*bufio.Reader{}
	for i, st := range cs.Steps {
		conn := conns[st.Conn]
		if conn == nil {
			var d net.Dialer
			if conn, err = d.DialContext(ctx, "unix", socket); err != nil {
				return fmt.Sprintf("step %d: connection %s: %v", i, st.Conn, err), nil
			}
			conns[st.Conn] = conn
			readers[st.Conn] = bufio.NewReaderSize(conn, 64<<10)
		}
		data := []byte(st.Send)
		if st.SendFile != "" {
			if data, err = c.ReadCase(Case{File: st.SendFile}); err != nil {
				return "", err
			}
		}
		_ = conn.SetDeadline(time.Now().Add(sessionWait))
		// A write error is no verdict: a daemon that refuses an
		// oversized frame stops reading it and may close; the reply it
		// wrote first is still there to read, and decides.
		_, _ = conn.Write(data)
		if st.NoReply {
			continue
		}
		line, err := readers[st.Conn].ReadString('\n')
		if err != nil {
			return fmt.Sprintf("step %d (%s): no reply: %v", i, st.Conn, err), nil
		}
		line = strings.TrimSuffix(line, "\n")
		if st.Status != "" {
			var r struct {
				Status string `json:"status"`
			}
			if json.Unmarshal([]byte(line), &r) != nil || r.Status != st.Status {
				return fmt.Sprintf("step %d (%s): reply %s, want status %s", i, st.Conn, short(&line), st.Status), nil
			}
			continue
		}
		if line != st.Reply {
			return fmt.Sprintf("step %d (%s): reply %s, want %s", i, st.Conn, short(&line), st.Reply), nil
		}
	}
	return "", nil
}
