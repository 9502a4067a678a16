package quiesce

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
)

// term is a program on a pseudoterminal of its own, its output drained
// into a buffer as a PTY-mode supervisor would.
type term struct {
	t             testing.TB
	master, slave *os.File
	cmd           *exec.Cmd
	// mu is held by the reader from a read of the master until the
	// bytes are in out, as the daemon's readMu is: when the Judge has
	// found the master drained, output (which takes mu) waits for a
	// read in flight instead of missing its bytes.
	mu    sync.Mutex
	out   bytes.Buffer
	judge *Judge
}

// startTerm runs argv as the session leader of a new terminal.
func startTerm(t testing.TB, argv ...string) *term {
	t.Helper()
	m, s := ptytest.Open(t, 80, 24)
	cmd := ptytest.Start(t, s, ptytest.Env(t), argv...)
	tm := &term{t: t, master: m, slave: s, cmd: cmd}
	// os.File.Fd puts the master in blocking mode: the reader reads
	// only when a poll said it is readable (it is the only reader), and
	// polls with a timeout, so that it sees stop before the master is
	// closed (this cleanup runs before ptytest.Open's).
	fd := int(m.Fd())
	stop, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(pfd, 50); err == unix.EINTR || (err == nil && n == 0) {
				continue
			} else if err != nil {
				return
			}
			tm.mu.Lock()
			n, err := unix.Read(fd, buf)
			if n > 0 {
				tm.out.Write(buf[:n])
			}
			tm.mu.Unlock()
			if err != nil && err != unix.EINTR || n == 0 && err == nil {
				return // EIO: every slave is closed
			}
		}
	}()
	j, err := New(m, s, func() ([]int, error) { return ProcessTree(cmd.Process.Pid) })
	if err != nil {
		t.Fatal(err)
	}
	tm.judge = j
	return tm
}

func (tm *term) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

func (tm *term) write(s string) {
	tm.t.Helper()
	if _, err := tm.master.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

// waitQuiet evaluates until quiet (a test may poll; the supervisor
// evaluates on events) and returns the output at that moment.
func (tm *term) waitQuiet(limit time.Duration) string {
	tm.t.Helper()
	deadline := time.Now().Add(limit)
	var last Verdict
	for time.Now().Before(deadline) {
		v, err := tm.judge.Evaluate()
		if err != nil {
			tm.t.Fatalf("evaluate: %v", err)
		}
		if v.Quiet {
			return tm.output()
		}
		last = v
		time.Sleep(2 * time.Millisecond)
	}
	tm.t.Fatalf("not quiet after %v: %s\noutput: %q", limit, last.Why, tm.output())
	return ""
}

// neverQuiet asserts no evaluation is quiet for d.
func (tm *term) neverQuiet(d time.Duration) {
	tm.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		v, err := tm.judge.Evaluate()
		if err != nil {
			tm.t.Fatalf("evaluate: %v", err)
		}
		if v.Quiet {
			tm.t.Fatalf("quiet too early (%s); output %q", v.Why, tm.output())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quietLimit bounds a wait for quiet: generous, since a loaded 2-core CI
// machine can take seconds to start python.
const quietLimit = 20 * time.Second

// step is one input and what must be on the screen's byte stream when
// the epoch closes: a verdict before the program answered (during a
// sleep, say) fails.
type step struct {
	input, want string
}

func TestEpochs(t *testing.T) {
	cases := []struct {
		name  string
		argv  []string
		ready string // output before the first quiet point
		steps []step
	}{
		{"cat", []string{"cat"}, "", []step{{"hello\r", "hello\r\nhello\r\n"}}},
		{"sh sleep then read", []string{"sh", "-c", "read x; sleep 0.4; echo done-$x; read y"}, "",
			[]step{{"go\r", "done-go"}}},
		{"python input", []string{"python3", "-c", "input(); print('ok', flush=True); input()"}, "",
			[]step{{"x\r", "ok"}}},
		{"python select tick", []string{"python3", "-c", `import select, sys
while True:
    r, _, _ = select.select([sys.stdin], [], [], 0.05)
    if r:
        print(sys.stdin.readline().strip() + "!", flush=True)`}, "", []step{{"tick\r", "tick!"}}},
		{"python asyncio epoll", []string{"python3", "-c", `import asyncio, sys
loop = asyncio.new_event_loop()
loop.add_reader(sys.stdin, lambda: print("got", sys.stdin.readline().strip(), flush=True))
loop.run_forever()`}, "", []step{{"ev\r", "got ev"}}},
		{"vim", []string{"vim", "-n", "-u", "NONE", "-N", "-i", "NONE"}, "~", []step{
			{"ihello-vim", "hello-vim"},
			{"\x1b:echo 6*7\r", "42"},
		}},
		{"less", []string{"sh", "-c", "seq 1 200 | less"}, "23", []step{
			{" ", "46"},
			{"/150\r", "150"},
		}},
		{"bash", []string{"bash", "--norc", "--noprofile", "-i"}, "$ ", []step{
			{"echo hi-$((6*7))\r", "hi-42"},
			{"sleep 0.3; echo slept\r", "slept"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm := startTerm(t, c.argv...)
			if out := tm.waitQuiet(quietLimit); !strings.Contains(out, c.ready) {
				t.Fatalf("quiet before the program was ready: %q", out)
			}
			for _, s := range c.steps {
				tm.write(s.input)
				if out := tm.waitQuiet(quietLimit); !strings.Contains(out, s.want) {
					t.Fatalf("after %q: quiet before %q was written; output %q", s.input, s.want, out)
				}
			}
		})
	}
}

// TestBusyIsNeverQuiet: a CPU loop in the foreground never waits for
// input.
func TestBusyIsNeverQuiet(t *testing.T) {
	tm := startTerm(t, "sh", "-c", "read x; while :; do :; done")
	tm.waitQuiet(quietLimit)
	tm.write("go\r")
	tm.neverQuiet(400 * time.Millisecond)
}

// TestHalfLineIsQuiet: in canonical mode a line without its Enter is
// input the program cannot read yet: waiting for the rest is quiet.
func TestHalfLineIsQuiet(t *testing.T) {
	tm := startTerm(t, "cat")
	tm.waitQuiet(quietLimit)
	tm.write("half")
	if out := tm.waitQuiet(quietLimit); !strings.Contains(out, "half") {
		t.Fatalf("quiet before the echo: %q", out)
	}
}

// TestShortTimeoutRetry: a wait with a short timeout is "not yet, retry
// after it"; the same wait seen again after it fired is periodic.
func TestShortTimeoutRetry(t *testing.T) {
	tm := startTerm(t, "python3", "-c", `import select, sys
while True:
    select.select([sys.stdin], [], [], 0.2)`)
	deadline := time.Now().Add(5 * time.Second)
	var sawRetry bool
	for time.Now().Before(deadline) {
		v, err := tm.judge.Evaluate()
		if err != nil {
			t.Fatal(err)
		}
		if v.RetryAfter > 0 {
			// Rule 6's "not yet" names the timeout; another "not yet"
			// may carry the evaluation's own cost (a loaded machine),
			// and so may this one, when it cost more than the timeout.
			if strings.Contains(v.Why, "timeout") {
				sawRetry = true
				if v.RetryAfter < 200*time.Millisecond {
					t.Errorf("retry after %v, want the 200ms timeout", v.RetryAfter)
				}
			}
			time.Sleep(v.RetryAfter + 20*time.Millisecond)
			continue
		}
		if v.Quiet {
			if !sawRetry || !strings.Contains(v.Why, "periodic") {
				t.Fatalf("quiet without the periodic rule: %+v (retry seen %v)", v, sawRetry)
			}
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("never quiet")
}

func TestParseSyscall(t *testing.T) {
	cases := []struct {
		in      string
		call    []uint64
		running bool
	}{
		{"running\n", nil, true},
		{"-1 0x7ffc 0x4000\n", nil, false},
		{"0 0x3 0x7ffd0000 0x1 0x0 0x0 0x0 0x7ffd 0x4000\n", []uint64{0, 3, 0x7ffd0000, 1, 0, 0, 0}, false},
		{"7 0x10 0x2 0xffffffff 0x0 0x0 0x0 0x1 0x2", []uint64{7, 0x10, 2, 0xffffffff, 0, 0, 0}, false},
		{"garbage", nil, false},
	}
	for _, c := range cases {
		call, running := parseSyscall(c.in)
		if running != c.running || !slices.Equal(call, c.call) {
			t.Errorf("parseSyscall(%q) = %v %v, want %v %v", c.in, call, running, c.call, c.running)
		}
	}
	if got := msTimeout(0xffffffff); got >= 0 {
		t.Errorf("poll timeout -1 read as %v", got)
	}
	if got := msTimeout(50); got != 50*time.Millisecond {
		t.Errorf("poll timeout 50 read as %v", got)
	}
}
