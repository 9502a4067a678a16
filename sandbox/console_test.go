package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConsole: Spec.Terminal gives the subject a pty of the sandbox's own
// devpts (never one of the caller's), owned by the subject's uid, sized as
// asked, as stdin, stdout, stderr and controlling terminal; the master
// relays both ways and reads EIO once the sandbox is gone.
func TestConsole(t *testing.T) {
	f := newFixture(t)
	spec := f.spec("/bin/sh", "-c", `tty; test -t 0 && test -t 1 && test -t 2 && echo all-terminals
stat -c "owner %u" "$(tty)"
echo "size $(stty size)"; ls -1 /dev/pts
echo ready; read line; echo "got $line"; exit 3`)
	spec.Terminal = &TerminalSize{Rows: 33, Cols: 101}
	sb, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	m := sb.Console()
	if m == nil {
		t.Fatal("no console with Spec.Terminal set")
	}
	// The size was checked before the subject ran (it prints its size
	// below, and could have changed it since).
	if !slices.Contains(sb.Applied().Mechanisms, MechanismCheck{Name: MechanismTerminalSize, Applied: true, Reason: "ok"}) {
		t.Errorf("no verified %s mechanism: %+v", MechanismTerminalSize, sb.Applied().Mechanisms)
	}
	timer := time.AfterFunc(60*time.Second, func() { _ = sb.Kill() })
	defer timer.Stop()

	shown := readConsole(m)
	shown.await(t, "ready")
	if _, err := m.Write([]byte("hello\n")); err != nil {
		t.Fatalf("write to the console: %v", err)
	}
	ex, err := sb.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	// Everything in the sandbox is gone: the rest of the output, then EIO.
	if err := <-shown.done; !errors.Is(err, os.ErrClosed) && !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("console read ended with %v, want EIO", err)
	}
	out := shown.String()
	if ex.Code != 3 {
		t.Errorf("exit %+v, want code 3; the console showed %q", ex, out)
	}
	owner := "owner " + strconv.Itoa(sb.Evidence().UID) // the sandbox's own uid
	for _, want := range []string{"all-terminals", owner, "size 33 101", "got hello", "\r\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the console showed %q, want it to contain %q", out, want)
		}
	}
	// The sandbox's own devpts instance numbers from 0 and shows only its
	// own ptys (and ptmx).
	if !regexp.MustCompile(`(?m)^/dev/pts/0\r$`).MatchString(out) || !regexp.MustCompile(`(?m)^0\r\nptmx\r$`).MatchString(out) {
		t.Errorf("the subject's terminal is not pts 0 of a devpts of its own: %q", out)
	}
}

// TestConsoleSpec: a terminal is all three stdio, so it cannot be given
// together with them.
func TestConsoleSpec(t *testing.T) {
	f := newFixture(t)
	spec := f.spec("/bin/true")
	spec.Terminal = &TerminalSize{Rows: 24, Cols: 80}
	spec.Stdout = os.Stdout
	sb, err := Start(context.Background(), spec)
	if err == nil {
		_ = sb.Destroy()
	}
	if !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("Terminal with Stdout: %v, want ErrInvalidSpec", err)
	}
	if c := sb.Console(); c != nil {
		t.Errorf("console %v after a failed start", c)
	}
}

// TestConsolePtyLimit: a subject cannot take more than maxPtys ptys from
// the host's shared pool; without the limit one subject can open
// thousands and the next sandbox's terminal fails with ENOSPC.
func TestConsolePtyLimit(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("/usr/bin/python3 (the subject that opens ptys) not installed: %v", err)
	}
	f := newFixture(t)
	spec := f.spec("/usr/bin/python3", "-c", `import os
n = 0
try:
    while n < 1000:
        os.openpty()
        n += 1
except OSError:
    pass
open("count", "w").write(str(n))`)
	spec.Terminal = &TerminalSize{Rows: 24, Cols: 80}
	sb, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer func() {
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
	}()
	timer := time.AfterFunc(60*time.Second, func() { _ = sb.Kill() })
	defer timer.Stop()
	if _, err := sb.Wait(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.root + "/count")
	if err != nil {
		t.Fatalf("the subject wrote no count: %v", err)
	}
	n, err := strconv.Atoi(string(data))
	if err != nil || n < 1 || n >= maxPtys {
		t.Errorf("the subject opened %q ptys, want between 1 and %d (its own terminal is one of %d)", data, maxPtys-1, maxPtys)
	}
}

// consoleText is what a sandbox's console shows, read as it comes by a
// goroutine of its own until the master's read fails (done has the
// error).
type consoleText struct {
	mu    sync.Mutex
	shown bytes.Buffer
	more  chan struct{} // a read arrived; closed at the end
	done  chan error
}

func readConsole(m *os.File) *consoleText {
	c := &consoleText{more: make(chan struct{}, 1), done: make(chan error, 1)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			c.mu.Lock()
			c.shown.Write(b[:n])
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
			if err != nil {
				c.done <- err
				close(c.more)
				return
			}
		}
	}()
	return c
}

func (c *consoleText) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shown.String()
}

// await waits until the console has shown want, failing the test if it
// ends first.
func (c *consoleText) await(t *testing.T, want string) {
	t.Helper()
	for !strings.Contains(c.String(), want) {
		if _, ok := <-c.more; !ok {
			t.Fatalf("the console ended before %q: %q", want, c.String())
		}
	}
}
