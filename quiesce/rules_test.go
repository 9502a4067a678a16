package quiesce

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests of this file each pin one rule of the package comment with a
// program that breaks it alone: every other rule holds, so a Judge that
// lost the rule says quiet, and one that keeps it does not. Each has a
// control, the same program with the rule satisfied, that must be quiet:
// without it a test whose program failed to start would pass too.

// notQuiet evaluates n times, 5 ms apart, and fails at the first quiet
// verdict; it returns the last verdict.
func (tm *term) notQuiet(n int) Verdict {
	tm.t.Helper()
	var v Verdict
	for range n {
		var err error
		if v, err = tm.judge.Evaluate(); err != nil {
			tm.t.Fatalf("evaluate: %v", err)
		}
		if v.Quiet {
			tm.t.Fatalf("quiet (%s); output %q", v.Why, tm.output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return v
}

// TestUnreadInputIsNotQuiet (rule 4): a raw-mode program with VMIN 5
// waits in select on the terminal. Two bytes typed wake it but do not
// make the terminal readable (n_tty asks for VMIN bytes), so it waits in
// select again, everything else quiet, with the two bytes in the input
// queue: not quiet. Three more make five: it reads them, answers, and is
// quiet again. (A program blocked in read instead takes the bytes into
// its buffer as they come, which empties the queue: waiting for the rest
// is then rightly quiet, as a half line is in canonical mode.)
func TestUnreadInputIsNotQuiet(t *testing.T) {
	tm := startTerm(t, "python3", "-c", `import os, select, termios, tty
tty.setraw(0)
a = termios.tcgetattr(0)
a[6][termios.VMIN], a[6][termios.VTIME] = 5, 0
termios.tcsetattr(0, termios.TCSANOW, a)
os.write(1, b"ready\r\n")
while True:
    select.select([0], [], [])
    os.write(1, b"got " + os.read(0, 100) + b"\r\n")`)
	if out := tm.waitQuiet(quietLimit); !strings.Contains(out, "ready") {
		t.Fatalf("quiet before the program was ready: %q", out)
	}
	tm.write("ab")
	// The bytes are in the slave's queue (the poll runs the flip-buffer
	// work first, as rule 1 does), and stay there.
	deadline := time.Now().Add(quietLimit)
	for {
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(tm.slave.Fd()), Events: unix.POLLIN}}, 0)
		n, err := unix.IoctlGetInt(int(tm.slave.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes in the input queue, want the 2 typed", n)
		}
		time.Sleep(2 * time.Millisecond)
	}
	tm.notQuiet(60)
	tm.write("cde")
	if out := tm.waitQuiet(quietLimit); !strings.Contains(out, "got abcde") {
		t.Fatalf("quiet before the answer: %q", out)
	}
}

// TestTasksRanBetweenPassesIsNotQuiet (rule 5): the main thread of a
// program is blocked reading the terminal while another of its threads
// wakes every millisecond for a moment. A pass may well find that thread
// asleep, and everything else is quiet: only the second pass, seeing
// that it ran since the first, keeps the verdict from being quiet. The
// task list the Judge is given takes 10 ms, which makes sure the ticking
// thread runs between the passes (a test seam: the caller's function is
// called at the start of each pass); without the ticker the same program
// is quiet.
func TestTasksRanBetweenPassesIsNotQuiet(t *testing.T) {
	for _, c := range []struct {
		name  string
		tick  bool
		quiet bool
	}{
		{"reader alone", false, true},
		{"reader and a 1 ms ticker", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tick := "False"
			if c.tick {
				tick = "True"
			}
			tm := startTerm(t, "python3", "-c", `import os, threading, time
def tick():
    while True:
        time.sleep(0.001)
if `+tick+`:
    threading.Thread(target=tick, daemon=True).start()
print("ready", flush=True)
while True:
    print("got", os.read(0, 100).decode().strip(), flush=True)`)
			tm.waitOutput("ready", quietLimit)
			pid := tm.cmd.Process.Pid
			j, err := New(tm.master, tm.slave, func() ([]int, error) {
				time.Sleep(10 * time.Millisecond)
				return ProcessTree(pid)
			})
			if err != nil {
				t.Fatal(err)
			}
			tm.judge = j
			if c.quiet {
				tm.waitQuiet(quietLimit)
				return
			}
			// A Judge without rule 5 says quiet at once (the ticker is
			// asleep nearly all the time); give the program a moment to
			// block in read, then it must never be quiet.
			time.Sleep(50 * time.Millisecond)
			tm.notQuiet(30)
		})
	}
}

// TestBackgroundWaiterIsNotQuiet (rule 3): the program's foreground
// process sleeps (clock_nanosleep, not a wait for the terminal) while a
// child waits in select on the terminal. In the foreground process group
// the child's wait is the program's: quiet. In a process group of its
// own (a background job, which may poll the terminal without being
// stopped) it is not: no one the terminal's input goes to is waiting.
func TestBackgroundWaiterIsNotQuiet(t *testing.T) {
	for _, c := range []struct {
		group string
		quiet bool
	}{
		{"fg", true},
		{"bg", false},
	} {
		t.Run(c.group, func(t *testing.T) {
			tm := startTerm(t, "python3", "-c", `import os, select, sys, time
if os.fork() == 0:
    if sys.argv[1] == "bg":
        os.setpgid(0, 0)
    print("ready", flush=True)
    select.select([0], [], [])
    os._exit(0)
time.sleep(1000)`, c.group)
			tm.waitOutput("ready", quietLimit)
			if c.quiet {
				tm.waitQuiet(quietLimit)
				return
			}
			tm.notQuiet(60)
		})
	}
}
