package ptydrive

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/quiesce"
)

// epochLimit is an epoch's deadline in the tests: generous, since a
// loaded 2-core CI machine can take seconds to start python or vim.
const epochLimit = 20 * time.Second

// prog is a program on a terminal of its own, with its Driver.
type prog struct {
	t      *testing.T
	d      *Driver
	cmd    *exec.Cmd
	exited chan struct{}
}

func start(t *testing.T, cols, rows int, argv ...string) *prog {
	t.Helper()
	m, s := ptytest.Open(t, cols, rows)
	// Open sets the terminal's size before the program starts, as the
	// sandbox does in PTY mode; New leaves it alone.
	var pid int
	d, err := New(m, s, Config{Cols: cols, Rows: rows, Tasks: func() ([]int, error) { return quiesce.ProcessTree(pid) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	cmd := ptytest.Start(t, s, ptytest.Env(t), argv...)
	pid = cmd.Process.Pid
	p := &prog{t: t, d: d, cmd: cmd, exited: make(chan struct{})}
	go func() {
		// The program alone: the test's own slave descriptor stays open.
		_, _ = cmd.Process.Wait()
		close(p.exited)
	}()
	return p
}

// settle ends an epoch: it must be quiet (or the program exited, when
// exit is true).
func (p *prog) settle(exit bool) Output {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), epochLimit)
	defer cancel()
	s, err := p.d.Settle(ctx, p.exited)
	if err != nil {
		p.t.Fatalf("settle: %v\nscreen:\n%s", err, strings.Join(p.d.Screen().Lines, "\n"))
	}
	if s.Exited != exit {
		p.t.Fatalf("settled %+v, want exited %v\nscreen:\n%s", s, exit, strings.Join(p.d.Screen().Lines, "\n"))
	}
	return p.d.TakeOutput()
}

func (p *prog) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), epochLimit)
	p.t.Cleanup(cancel)
	return ctx
}

func (p *prog) text(s string) {
	p.t.Helper()
	if err := p.d.Text(p.ctx(), s); err != nil {
		p.t.Fatal(err)
	}
}

func (p *prog) key(chord ...string) {
	p.t.Helper()
	if err := p.d.Key(p.ctx(), chord); err != nil {
		p.t.Fatal(err)
	}
}

func (p *prog) wantLine(row int, want string) {
	p.t.Helper()
	lines := p.d.Screen().Lines
	if lines[row] != want {
		p.t.Fatalf("line %d = %q, want %q\nscreen:\n%s", row, lines[row], want, strings.Join(lines, "\n"))
	}
}

// TestCatEpochs: each epoch's output and screen hold the program's
// answer, never less.
func TestCatEpochs(t *testing.T) {
	p := start(t, 40, 5, "cat")
	p.settle(false)
	p.text("hello\n")
	if out := p.settle(false); out.Text != "hello\r\nhello\r\n" {
		t.Fatalf("output %q", out.Text)
	}
	p.wantLine(0, "hello")
	p.wantLine(1, "hello")
	if got := len(p.d.Screen().Lines); got != 5 {
		t.Fatalf("%d lines, want 5", got)
	}
	p.key("Control", "d")
	p.settle(true)
}

// TestKeypadMode: after a curses program enables keypad mode (smkx sets
// DECCKM), ArrowUp is sent as ESC O A, which curses decodes as KEY_UP.
func TestKeypadMode(t *testing.T) {
	p := start(t, 40, 6, "python3", "-c", `import curses
def main(s):
    s.keypad(True)
    s.addstr(0, 0, "ready")
    while True:
        k = s.getch()
        s.addstr(1, 0, "key %-20s" % curses.keyname(k).decode())
        s.refresh()
        if k == ord("q"):
            return
curses.wrapper(main)`)
	p.settle(false)
	p.wantLine(0, "ready")
	if !p.d.Modes().AppCursor {
		t.Fatal("keypad(True) did not set DECCKM in the emulator")
	}
	p.key("ArrowUp")
	p.settle(false)
	p.wantLine(1, "key KEY_UP")
	p.key("Shift", "ArrowLeft")
	p.settle(false)
	p.wantLine(1, "key KEY_SLEFT")
	p.text("q")
	p.settle(true)
}

// TestQueryReplies: a program that asks for the cursor position and
// waits for the answer gets it from the emulator, in the same epoch.
func TestQueryReplies(t *testing.T) {
	p := start(t, 40, 5, "python3", "-c", `import os, sys, termios, tty
tty.setraw(0)
os.write(1, b"ab\x1b[6n")
r = b""
while not r.endswith(b"R"):
    r += os.read(0, 1)
termios.tcsetattr(0, termios.TCSANOW, termios.tcgetattr(0))
os.write(1, b"\r\ngot " + r[1:] + b"\r\n")
os.read(0, 1)`)
	p.settle(false)
	p.wantLine(1, "got [1;3R")
	p.text("x")
	p.settle(true)
}

// TestVimEditsAFile: insert, Escape, :wq — the file holds the text.
func TestVimEditsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.txt")
	p := start(t, 60, 10, "vim", "-n", "-u", "NONE", "-N", "-i", "NONE", "--noplugin", file)
	p.settle(false)
	p.text("ihello vim")
	p.settle(false)
	p.wantLine(0, "hello vim")
	p.key("Escape")
	p.settle(false)
	// The command typed, then Enter pressed; ":wq\r" as one text is the
	// same bytes (input.text is typed byte for byte, never pasted).
	p.text(":wq")
	p.key("Enter")
	p.settle(true)
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "hello vim\n" {
		t.Fatalf("file %q (%v)", b, err)
	}
}

// TestFloodIsBounded: output beyond the budget is counted, not kept, and
// the epoch still ends when the program does.
func TestFloodIsBounded(t *testing.T) {
	m, s := ptytest.Open(t, 80, 24)
	var pid int
	d, err := New(m, s, Config{Cols: 80, Rows: 24, OutputBudget: 1 << 20, Tasks: func() ([]int, error) { return quiesce.ProcessTree(pid) }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cmd := ptytest.Start(t, s, ptytest.Env(t), "sh", "-c", "head -c 8000000 /dev/zero | tr '\\0' x; echo; echo end")
	pid = cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _, _ = cmd.Process.Wait(); close(exited) }()
	ctx, cancel := context.WithTimeout(context.Background(), epochLimit)
	defer cancel()
	st, err := d.Settle(ctx, exited)
	if err != nil || !st.Exited {
		t.Fatalf("settle %+v: %v", st, err)
	}
	out := d.TakeOutput()
	if len(out.Text) != 1<<20 || out.Dropped != 8000007-1<<20 {
		t.Fatalf("kept %d bytes, dropped %d", len(out.Text), out.Dropped)
	}
	if !strings.Contains(strings.Join(d.Screen().Lines, "\n"), "end") {
		t.Fatalf("the emulator did not see the end:\n%s", strings.Join(d.Screen().Lines, "\n"))
	}
}

// TestWriteBoundedByDeadline: input to a program that stopped reading
// fills the terminal's buffer; the write ends with the deadline.
func TestWriteBoundedByDeadline(t *testing.T) {
	p := start(t, 40, 5, "sleep", "100")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	// Lines: in canonical mode an overlong line is cut by the line
	// discipline, not refused, so only complete lines fill the buffers.
	err := p.d.Write(ctx, []byte(strings.Repeat("x\n", 1<<19)))
	if !errors.Is(err, ErrStoppedReading) {
		t.Fatalf("write: %v, want ErrStoppedReading", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("write took %v", took)
	}
}

// TestSplitUTF8: a character split across two epochs' output is kept
// whole for the second one; invalid bytes are replaced and counted.
func TestSplitUTF8(t *testing.T) {
	d := &Driver{out: NewOutputBuffer(100)}
	d.out.kept = []byte("a\xe4\xb8")
	if o := d.TakeOutput(); o.Text != "a" || o.Invalid != 0 {
		t.Fatalf("first %+v", o)
	}
	d.out.kept = []byte("\xadb\xff")
	if o := d.TakeOutput(); o.Text != "中b\uFFFD" || o.Invalid != 1 {
		t.Fatalf("second %+v", o)
	}
}

// TestHostileOutputKeepsDeadlines: a program whose output costs the
// emulator more than the kernel takes to deliver it (repaint sequences),
// and that answers nothing while asking for large query replies, neither
// keeps Settle past its deadline nor grows the replies owed to it without
// bound.
func TestHostileOutputKeepsDeadlines(t *testing.T) {
	p := start(t, 80, 24, "python3", "-c", `import os, base64, tty
tty.setraw(0)
os.write(1, b"\x1b]52;c;" + base64.b64encode(b"x" * 40000) + b"\a")
while True:
    os.write(1, b"x\x1b[65535b" * 64 + b"\x1b]52;c;?\a" * 8)`)
	// Epoch after epoch (the program may take a while to start on a
	// loaded machine), until replies have been dropped: each Settle must
	// come back at its deadline, and the replies owed stay bounded.
	for overall := time.Now(); p.d.RepliesDropped == 0; {
		if time.Since(overall) > epochLimit {
			t.Fatalf("no reply was ever dropped; %d pending", len(p.d.replies))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		began := time.Now()
		_, err := p.d.Settle(ctx, p.exited)
		cancel()
		if err == nil {
			t.Fatal("a flooding program settled")
		}
		// Generous: the property is "returns", not a speed.
		if took := time.Since(began); took > 10*time.Second {
			t.Fatalf("Settle returned %v after a 300ms deadline", took)
		}
		if len(p.d.replies) > maxPendingReplies {
			t.Fatalf("%d bytes of replies pending, bound %d", len(p.d.replies), maxPendingReplies)
		}
	}
}

// TestFinalOutputAndCarry: the last epoch reports an unfinished character
// as invalid instead of keeping it, and nothing is carried across bytes
// the budget cut.
func TestFinalOutputAndCarry(t *testing.T) {
	d := &Driver{out: NewOutputBuffer(100)}
	d.out.kept = []byte("bye\xe2\x82")
	if o := d.TakeFinalOutput(); o.Text != "bye\uFFFD\uFFFD" || o.Invalid != 2 {
		t.Fatalf("final %+v", o)
	}
	d.out.kept, d.out.dropped = []byte("abc\xe2"), 2
	if o := d.TakeOutput(); o.Text != "abc\uFFFD" || o.Invalid != 1 || o.Dropped != 2 {
		t.Fatalf("cut %+v", o)
	}
	d.out.kept = []byte("\x82\xacok")
	if o := d.TakeOutput(); o.Text != "\uFFFD\uFFFDok" || o.Invalid != 2 {
		t.Fatalf("after the cut %+v", o)
	}
}
