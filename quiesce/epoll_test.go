package quiesce

import (
	"strings"
	"testing"
	"time"
)

// waitOutput waits until the program has written want (its setup done).
func (tm *term) waitOutput(want string, limit time.Duration) {
	tm.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if strings.Contains(tm.output(), want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tm.t.Fatalf("no %q after %v; output %q", want, limit, tm.output())
}

// TestEpollNumberReusedByTTY: the program registers a pipe in epoll, then
// dup2()s the terminal over the pipe's number (a dup keeps the pipe, and
// so its registration, alive). fdinfo's tfd: is now a number that is the
// terminal, but the epoll instance watches only the pipe: the program
// does not wait for the terminal, and no epoch may close on it.
func TestEpollNumberReusedByTTY(t *testing.T) {
	tm := startTerm(t, "python3", "-c", `import os, select
r, w = os.pipe()
keep = os.dup(r)
e = select.epoll()
e.register(r, select.EPOLLIN)
os.dup2(0, r)
print("ready", flush=True)
e.poll()`)
	tm.waitOutput("ready", quietLimit)
	tm.neverQuiet(500 * time.Millisecond)
}

// TestEpollTTYNumberReused: the reverse. The program registers a
// duplicate of the terminal, then dup2()s /dev/null over that number
// (fd 0 keeps the terminal's file, and the registration, alive): the
// epoll instance still watches the terminal, and the program waits for
// it.
func TestEpollTTYNumberReused(t *testing.T) {
	for _, c := range []struct{ name, open string }{
		{"slave", "os.dup(0)"},
		{"/dev/tty", `os.open("/dev/tty", os.O_RDONLY)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm := startTerm(t, "python3", "-c", `import os, select, sys
t = `+c.open+`
keep = os.dup(t)
e = select.epoll()
e.register(t, select.EPOLLIN)
n = os.open("/dev/null", os.O_RDONLY)
os.dup2(n, t)
print("ready", flush=True)
while True:
    e.poll()
    print("got", os.read(keep, 100).decode().strip(), flush=True)`)
			if out := tm.waitQuiet(quietLimit); !strings.Contains(out, "ready") {
				t.Fatalf("quiet before the program was ready: %q", out)
			}
			tm.write("ev\r")
			if out := tm.waitQuiet(quietLimit); !strings.Contains(out, "got ev") {
				t.Fatalf("quiet before the answer: %q", out)
			}
		})
	}
}

// TestEpollDevTTY: /dev/tty opened by path, registered in epoll, is the
// terminal while the slave is the controlling terminal (its inode is not
// the slave's: the identity check must know it).
func TestEpollDevTTY(t *testing.T) {
	tm := startTerm(t, "python3", "-c", `import os, select
t = os.open("/dev/tty", os.O_RDONLY)
e = select.epoll()
e.register(t, select.EPOLLIN)
print("ready", flush=True)
while True:
    e.poll()
    print("got", os.read(t, 100).decode().strip(), flush=True)`)
	if out := tm.waitQuiet(quietLimit); !strings.Contains(out, "ready") {
		t.Fatalf("quiet before the program was ready: %q", out)
	}
	tm.write("ev\r")
	if out := tm.waitQuiet(quietLimit); !strings.Contains(out, "got ev") {
		t.Fatalf("quiet before the answer: %q", out)
	}
}

func TestParseEpollLine(t *testing.T) {
	cases := []struct {
		line string
		ok   bool
		want epollItem
	}{
		{"tfd:        3 events:       19 data:                3  pos:0 ino:4413b2 sdev:f", true,
			epollItem{fd: 3, events: 0x19, id: fileID{0x4413b2, devNum{0, 15}}, hasID: true}},
		// A device with a major: the kernel's dev_t, 12 bits over 20.
		{"tfd:       10 events:       1 data: 0  pos:0 ino:2a sdev:800003", true,
			epollItem{fd: 10, events: 1, id: fileID{0x2a, devNum{8, 3}}, hasID: true}},
		// An older kernel: no identity, the number is all there is.
		{"tfd:        5 events:       1 data:                0", true, epollItem{fd: 5, events: 1}},
		{"tfd:        5 events:       1 data: 0  pos:0 ino:zz sdev:f", true, epollItem{fd: 5, events: 1}},
		{"pos:\t0", false, epollItem{}},
		{"tfd: x events: 1", false, epollItem{}},
	}
	for _, c := range cases {
		got, ok := parseEpollLine(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("parseEpollLine(%q) = %+v %v, want %+v %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
