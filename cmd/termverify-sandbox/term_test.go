package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/internal/tmuxtest"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// The term tests drive the daemon only as an agent does: through the
// binary's term subcommands and the socket they speak to.

// termHarness is one test's daemon setting: the binary, the working
// directory the program sees as its root, the TMPDIR an auto-generated
// socket goes in, and a state directory of its own, checked for leaks.
type termHarness struct {
	t     *testing.T
	bin   string
	work  string
	tmp   string
	state string
	env   []string // added to the commands' environment
}

func newTermHarness(t *testing.T, bin, marker string) *termHarness {
	t.Helper()
	h := &termHarness{t: t, bin: bin, work: publicTempDir(t, 0o777), tmp: t.TempDir(), state: t.TempDir()}
	sandboxtest.CheckNoLeaks(t, h.state, marker)
	return h
}

func (h *termHarness) cmd(args ...string) *exec.Cmd {
	c := exec.Command(h.bin, append([]string{"term"}, args...)...)
	c.Dir = h.work
	// Not sudo's: the caller whom the program's files belong to is the
	// test's own, or the one a test names (SUDO_UID, SUDO_GID).
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SUDO_") {
			c.Env = append(c.Env, e)
		}
	}
	c.Env = append(append(c.Env, "TMPDIR="+h.tmp), h.env...)
	return c
}

// run runs a term subcommand to its end.
func (h *termHarness) run(args ...string) (stdout, stderr string, status int) {
	h.t.Helper()
	return run(h.t, h.cmd(args...))
}

// termDaemon is a started daemon, as `term start` announced it.
type termDaemon struct {
	socket string
	pid    int
	auto   bool
}

// parseAnnounce reads start's three lines.
func parseAnnounce(t *testing.T, out string) termDaemon {
	t.Helper()
	var d termDaemon
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("start printed %q, want three lines", out)
	}
	var err error
	d.socket, _ = strings.CutPrefix(lines[0], "Socket: ")
	pid, _ := strings.CutPrefix(lines[1], "PID: ")
	auto, _ := strings.CutPrefix(lines[2], "Auto-generated: ")
	if d.pid, err = strconv.Atoi(pid); err != nil || d.socket == lines[0] || (auto != "true" && auto != "false") {
		t.Fatalf("start printed %q", out)
	}
	d.auto = auto == "true"
	return d
}

// start starts a daemon (daemon mode) and registers its stop.
func (h *termHarness) start(args ...string) termDaemon {
	h.t.Helper()
	begin := time.Now()
	out, errOut, status := h.run(append([]string{"start", "--state-dir", h.state}, args...)...)
	if status != 0 {
		h.t.Fatalf("term start %v: status %d\n%s", args, status, errOut)
	}
	if took := time.Since(begin); took > 2*time.Second {
		h.t.Errorf("term start took %v, want at most 2s", took)
	}
	d := parseAnnounce(h.t, out)
	h.t.Cleanup(func() {
		if processAlive(d.pid) {
			if _, errOut, status := h.run("stop", "--socket", d.socket); status != 0 {
				// A failed test may have lost the socket: the daemon is
				// killed (its sandbox dies with it) and what it left in
				// the test's state directory swept, so nothing survives.
				h.t.Logf("stop at cleanup: status %d, %s; killing the daemon", status, errOut)
				_ = syscall.Kill(d.pid, syscall.SIGKILL)
				waitGone(h.t, d.pid)
				if _, err := sandbox.Sweep(h.state); err != nil {
					h.t.Errorf("sweep after the killed daemon: %v", err)
				}
			}
			waitGone(h.t, d.pid)
		}
	})
	return d
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// waitGone waits for pid to end.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid); {
		if time.Now().After(deadline) {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			t.Fatalf("process %d still runs: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// screen is output --no-color.
func (h *termHarness) screen(d termDaemon) string {
	h.t.Helper()
	out, errOut, status := h.run("output", "--socket", d.socket, "--no-color")
	if status != 0 {
		h.t.Fatalf("term output: status %d\n%s", status, errOut)
	}
	return out
}

// waitScreen polls the screen until it contains want.
func (h *termHarness) waitScreen(d termDaemon, want string) string {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := h.screen(d)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the screen never showed %q:\n%s", want, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustRun runs a client subcommand that must succeed.
func (h *termHarness) mustRun(args ...string) string {
	h.t.Helper()
	out, errOut, status := h.run(args...)
	if status != 0 {
		h.t.Fatalf("term %v: status %d\n%s", args, status, errOut)
	}
	return out
}

func TestTerm(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)

	t.Run("errors", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"no command", []string{"start"}, "required arguments were not provided"},
			{"bad size", []string{"start", "--size", "notasize", "--", "cat"}, "Invalid size"},
			{"no socket flag", []string{"status"}, "--socket"},
			{"missing socket", []string{"status", "--socket", filepath.Join(h.tmp, "nothing")}, "No such file"},
			{"bad signal name", []string{"kill", "--socket", "x", "--signal", "NOTASIGNAL"}, "Invalid signal"},
			{"bad signal number", []string{"kill", "--socket", "x", "--signal", "9999"}, "Invalid signal"},
			{"unknown flag", []string{"status", "--nope"}, "unknown flag"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, errOut, status := h.run(tc.args...)
				if status != 1 || !strings.HasPrefix(errOut, "Error: ") || !strings.Contains(errOut, tc.want) {
					t.Errorf("status %d, stderr %q; want 1 and Error: …%s…", status, errOut, tc.want)
				}
			})
		}
	})

	t.Run("daemon life cycle", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		if !d.auto || filepath.Base(d.socket) != "socket" {
			t.Fatalf("announced %+v, want an auto-generated socket", d)
		}
		dir := filepath.Dir(d.socket)
		if filepath.Dir(dir) != h.tmp || !strings.HasPrefix(filepath.Base(dir), "interminai-") {
			t.Errorf("socket directory %s, want $TMPDIR/interminai-XXXX", dir)
		}
		checkMode(t, dir, os.ModeDir|0o700)
		checkMode(t, d.socket, os.ModeSocket|0o600)
		if out := h.mustRun("status", "--socket", d.socket); !strings.Contains(out, "Running: true") {
			t.Errorf("status: %q", out)
		}
		h.mustRun("stop", "--socket", d.socket)
		waitGone(t, d.pid)
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("the auto-generated directory is still there after stop: %v", err)
		}
	})

	t.Run("foreground and a given socket", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		sock := filepath.Join(h.tmp, "my.sock")
		for round := range 2 { // the second start replaces the first's stale socket
			c := h.cmd("start", "--no-daemon", "--state-dir", h.state, "--socket", sock, "--", "cat")
			stdout, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(stdout)
			var said strings.Builder
			for range 3 {
				line, err := br.ReadString('\n')
				if err != nil {
					_ = c.Process.Kill()
					_ = c.Wait()
					t.Fatalf("round %d: start said %q: %v", round, said.String(), err)
				}
				said.WriteString(line)
			}
			d := parseAnnounce(t, said.String())
			if d.auto || d.socket != sock || d.pid != c.Process.Pid {
				t.Errorf("round %d: announced %+v, want %s, not auto-generated, pid %d", round, d, sock, c.Process.Pid)
			}
			checkMode(t, sock, os.ModeSocket|0o600)
			h.mustRun("stop", "--socket", sock)
			if status := exitStatus(t, c, c.Wait()); status != 0 {
				t.Errorf("round %d: --no-daemon exited %d after stop, want 0", round, status)
			}
			if _, err := os.Lstat(sock); err != nil {
				t.Errorf("round %d: a given socket is kept after stop: %v", round, err)
			}
		}
	})

	t.Run("cat echo", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		h.mustRun("input", "--socket", d.socket, "--text", `hello\tworld\n`)
		h.waitScreen(d, "hello   world\nhello   world\n")
		c := h.cmd("input", "--socket", d.socket)
		c.Stdin = strings.NewReader("from stdin\n")
		if _, errOut, status := run(t, c); status != 0 {
			t.Fatalf("input from stdin: %d %s", status, errOut)
		}
		h.waitScreen(d, "from stdin\nfrom stdin\n")
		out, _, _ := h.run("output", "--socket", d.socket)
		if !strings.Contains(out, "hello") {
			t.Errorf("output in colour: %q", out)
		}
		out, _, _ = h.run("output", "--socket", d.socket, "--no-color", "-n", "--cursor", "print", "--to", "5")
		want := "Cursor: row 5, col 1\n 1\thello   world\n 2\thello   world\n 3\tfrom stdin\n 4\tfrom stdin\n 5\t\n"
		if out != want {
			t.Errorf("output -n --cursor print --to 5:\n%q, want\n%q", out, want)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `ab`)
		h.waitScreen(d, "from stdin\nab")
		out, _, _ = h.run("output", "--socket", d.socket, "--cursor", "both", "--to", "5")
		if want := "Cursor: row 5, col 3\n"; !strings.HasPrefix(out, want) || !strings.Contains(out, "ab\x1b[7m \x1b[27m") {
			t.Errorf("output --cursor both: %q, want %q first and the cell after ab in reverse video", out, want)
		}
		if out, _, _ = h.run("output", "--socket", d.socket, "--no-color", "--cursor", "inverse"); strings.Contains(out, "\x1b") {
			t.Errorf("output --no-color --cursor inverse printed an escape: %q", out)
		}
	})

	t.Run("large input", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "sh", "-c", "wc -l; cat")
		// 256 KiB, far beyond the terminal's input queue: INPUT writes
		// every byte, as the program takes them, before it answers.
		var in strings.Builder
		for i := range 4096 {
			fmt.Fprintf(&in, "%063d\n", i)
		}
		c := h.cmd("input", "--socket", d.socket)
		c.Stdin = strings.NewReader(in.String())
		if _, errOut, status := run(t, c); status != 0 {
			t.Fatalf("input of 256 KiB: %d %s", status, errOut)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `\x04`)
		h.waitScreen(d, "4096\n")
	})

	t.Run("status and wait", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "sh", "-c", "read x; exit 3")
		if _, _, status := h.run("status", "--socket", d.socket, "--quiet"); status != 0 {
			t.Errorf("status --quiet while running: %d, want 0", status)
		}
		// A WAIT pending on its connection holds up no other client.
		w := h.cmd("wait", "--socket", d.socket, "--quiet")
		var wout strings.Builder
		w.Stdout = &wout
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the WAIT is in the daemon
		begin := time.Now()
		if out := h.mustRun("status", "--socket", d.socket); !strings.Contains(out, "Running: true") {
			t.Errorf("status during a WAIT: %q", out)
		}
		if took := time.Since(begin); took > time.Second {
			t.Errorf("status took %v during a pending WAIT", took)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `\n`)
		if status := exitStatus(t, w, w.Wait()); status != 0 || wout.String() != "3\n" {
			t.Errorf("wait --quiet: status %d, printed %q; want 0 and 3", status, wout.String())
		}
		out := h.mustRun("status", "--socket", d.socket)
		if !strings.Contains(out, "Running: false") || !strings.Contains(out, "Exit code: 3") {
			t.Errorf("status after the exit: %q", out)
		}
		if _, _, status := h.run("status", "--socket", d.socket, "--quiet"); status != 3 {
			t.Errorf("status --quiet after exit 3: %d", status)
		}
		if out := h.mustRun("wait", "--socket", d.socket); !strings.Contains(out, "Application exited: true") {
			t.Errorf("wait after the exit: %q", out)
		}
	})

	t.Run("settled and contains", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "sh", "-c", `read x; echo "got $x"; sleep 0.3; echo after; read y; echo second; sleep 100`)
		h.mustRun("input", "--socket", d.socket, "--text", `hi\r`)
		// Settled only once the program reads again: after the sleep.
		if out := h.mustRun("wait", "--socket", d.socket, "--settled", "--timeout", "10000"); !strings.Contains(out, "got hi\nafter\n") {
			t.Errorf("wait --settled printed %q", out)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `\r`)
		if out := h.mustRun("wait", "--socket", d.socket, "--contains", "second", "--line", "5", "--timeout", "10000"); !strings.Contains(out, "second") {
			t.Errorf("wait --contains printed %q", out)
		}
		// Busy in sleep 100: never settled, so the timeout fires.
		_, errOut, status := h.run("wait", "--socket", d.socket, "--settled", "--timeout", "300")
		if status != 1 || !strings.Contains(errOut, "timed out") {
			t.Errorf("wait --settled on a sleeping program: %d %q", status, errOut)
		}
		if _, errOut, status := h.run("wait", "--socket", d.socket, "--settled", "--quiet"); status != 1 || !strings.Contains(errOut, "exclude") {
			t.Errorf("wait --settled --quiet: %d %q", status, errOut)
		}
	})

	t.Run("password", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "sh", "-c", `stty -echo; printf 'Password: '; read p; stty echo; echo; echo "length ${#p} $p"; cat`)
		h.waitScreen(d, "Password:")
		if out, _, _ := h.run("input", "--help"); !strings.Contains(out, "--password") || !strings.Contains(out, "echo disabled") {
			t.Errorf("input --help: %q", out)
		}
		c := h.cmd("input", "--socket", d.socket, "--password")
		c.Stdin = strings.NewReader("s3cret\n")
		if _, errOut, status := run(t, c); status != 1 || !strings.Contains(errOut, "needs a terminal") {
			t.Errorf("input --password without a terminal: %d %q", status, errOut)
		}
		master, slave := ptytest.Open(t, 80, 24)
		c = h.cmd("input", "--socket", d.socket, "--password")
		c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// What the user's terminal shows: the prompt, never the secret.
		var shown strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(shown.String(), "Password:") {
			_ = master.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := master.Read(buf)
			if err != nil {
				t.Fatalf("the prompt never came: %q: %v", shown.String(), err)
			}
			shown.Write(buf[:n])
		}
		if !strings.Contains(shown.String(), "Type your secret or password") {
			t.Errorf("the prompt: %q", shown.String())
		}
		if _, err := master.Write([]byte("s3cx\x7fret\r")); err != nil {
			t.Fatal(err)
		}
		if status := exitStatus(t, c, c.Wait()); status != 0 {
			t.Fatalf("input --password: status %d", status)
		}
		_ = master.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _ := master.Read(buf)
		if strings.Contains(shown.String()+string(buf[:max(n, 0)]), "s3c") {
			t.Errorf("the secret was echoed: %q", shown.String()+string(buf[:max(n, 0)]))
		}
		h.waitScreen(d, "length 6 s3cret")
	})

	t.Run("debug", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--debug-buffer", "2", "--", "sh", "-c", `printf '\033[?1005h\033[?9999h\033[?8888h'; echo printed; read x; stty -icanon; echo raw; read y`)
		h.waitScreen(d, "printed")
		out := h.mustRun("debug", "--socket", d.socket)
		for _, want := range []string{"Unhandled sequences: 2 (dropped 1)", `\e[?8888h`, "1b5b3f3838383868", "Mode: cooked", "ICANON", "VINTR=^C"} {
			if !strings.Contains(out, want) {
				t.Errorf("debug lacks %q:\n%s", want, out)
			}
		}
		h.mustRun("debug", "--socket", d.socket, "--clear")
		if out := h.mustRun("debug", "--socket", d.socket); !strings.Contains(out, "Unhandled sequences: 0 (dropped 0)") {
			t.Errorf("debug after --clear:\n%s", out)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `\r`)
		h.waitScreen(d, "raw")
		if out := h.mustRun("debug", "--socket", d.socket); !strings.Contains(out, "Mode: raw") {
			t.Errorf("debug after stty -icanon:\n%s", out)
		}
	})

	t.Run("activity", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		h.mustRun("status", "--socket", d.socket) // clears what the start printed
		w := h.cmd("wait", "--socket", d.socket)
		var wout strings.Builder
		w.Stdout = &wout
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `x\n`)
		if status := exitStatus(t, w, w.Wait()); status != 0 || !strings.Contains(wout.String(), "Terminal activity: true") ||
			!strings.Contains(wout.String(), "Application exited: false") {
			t.Errorf("wait: status %d, printed %q", status, wout.String())
		}
	})

	t.Run("kill", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(1)
		h := newTermHarness(t, bin, marker)
		d := h.start("--", "sleep", marker)
		// SIGSTOP would stop the sandbox's init, which forwards signals,
		// and every later signal with it: refused, with what to send.
		if _, errOut, status := h.run("kill", "--socket", d.socket, "--signal", "STOP"); status != 1 || !strings.Contains(errOut, "SIGTSTP") {
			t.Errorf("kill --signal STOP: %d %q, want a refusal naming SIGTSTP", status, errOut)
		}
		if out := h.mustRun("kill", "--socket", d.socket, "--signal", "9"); !strings.Contains(out, "SIGKILL") {
			t.Errorf("kill: %q", out)
		}
		if out := h.mustRun("wait", "--socket", d.socket, "--quiet"); out != "137\n" {
			t.Errorf("wait after SIGKILL: %q, want 137", out)
		}
		if _, errOut, status := h.run("kill", "--socket", d.socket); status != 1 || !strings.Contains(errOut, "not running") {
			t.Errorf("kill after the exit: %d %q", status, errOut)
		}
	})

	t.Run("resize", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--size", "60x10", "--", "sh", "-c", "while read l; do stty size; done")
		h.mustRun("input", "--socket", d.socket, "--text", `\n`)
		h.waitScreen(d, "10 60")
		h.mustRun("resize", "--socket", d.socket, "--size", "100x30")
		h.mustRun("input", "--socket", d.socket, "--text", `\n`)
		s := h.waitScreen(d, "30 100")
		if n := strings.Count(s, "\n"); n != 30 {
			t.Errorf("the screen has %d lines after the resize, want 30", n)
		}
	})

	t.Run("vim", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// A project only its owner may write, as root's 0700 temporary
		// directories in CI are: the edit must still land, as the owner's.
		h.work = t.TempDir()
		d := h.start("--", "vim", "-u", "NONE", "-i", "NONE", "-n", "-N", "notes.txt")
		h.waitScreen(d, "notes.txt")
		h.mustRun("input", "--socket", d.socket, "--text", `ihello from vim\e`)
		if out := h.mustRun("wait", "--socket", d.socket, "--settled", "--timeout", "10000"); !strings.Contains(out, "hello from vim") {
			t.Errorf("vim, settled after typing: %q", out)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `:wq\r`)
		if out := h.mustRun("wait", "--socket", d.socket, "--quiet"); out != "0\n" {
			t.Errorf("vim's exit: %q", out)
		}
		b, err := os.ReadFile(filepath.Join(h.work, "notes.txt"))
		if err != nil || string(b) != "hello from vim\n" {
			t.Errorf("notes.txt: %q, %v", b, err)
		}
		if uid, gid := fileOwner(t, filepath.Join(h.work, "notes.txt")); uid != os.Geteuid() || gid != os.Getegid() {
			t.Errorf("notes.txt belongs to %d:%d, want the caller %d:%d", uid, gid, os.Geteuid(), os.Getegid())
		}
	})

	t.Run("vim edits: dd, arrows, Ctrl-F", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		var text strings.Builder
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&text, "line %d\n", i)
		}
		if err := os.WriteFile(filepath.Join(h.work, "lines.txt"), []byte(text.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		d := h.start("--", "vim", "-u", "NONE", "-i", "NONE", "-n", "-N", "lines.txt")
		h.waitScreen(d, "lines.txt")
		settle := func(step string) string {
			t.Helper()
			return h.mustRun("wait", "--socket", d.socket, "--settled", "--timeout", "10000")
		}
		for _, step := range []string{"dd", "\\e[B\\e[B", "dd"} {
			h.mustRun("input", "--socket", d.socket, "--text", step)
			settle(step)
		}
		h.mustRun("input", "--socket", d.socket, "--text", "\\x06") // Ctrl-F: a page forward
		if s := settle("Ctrl-F"); !strings.Contains(s, "line 40") || strings.Contains(s, "line 2\n") {
			t.Errorf("after Ctrl-F the screen is not a page further:\n%s", s)
		}
		h.mustRun("input", "--socket", d.socket, "--text", `:wq\r`)
		if out := h.mustRun("wait", "--socket", d.socket, "--quiet"); out != "0\n" {
			t.Errorf("vim's exit: %q", out)
		}
		b, err := os.ReadFile(filepath.Join(h.work, "lines.txt"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) != 98 || lines[0] != "line 2" || lines[1] != "line 3" || lines[2] != "line 5" {
			t.Errorf("after dd, two arrows down and dd: %d lines starting %q, want 98 starting line 2, line 3, line 5", len(lines), lines[:min(3, len(lines))])
		}
	})

	t.Run("files belong to the caller sudo names", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		h.work = t.TempDir()
		if err := os.Chown(h.work, 4242, 4243); err != nil {
			t.Fatal(err)
		}
		h.env = []string{"SUDO_UID=4242", "SUDO_GID=4243"}
		d := h.start("--", "sh", "-c", `echo x >made && echo made:ok; touch /tmp/elsewhere; echo done; cat`)
		if s := h.waitScreen(d, "done"); !strings.Contains(s, "made:ok") {
			t.Errorf("screen %q: the program could not write the caller's 0700 directory", s)
		}
		if uid, gid := fileOwner(t, filepath.Join(h.work, "made")); uid != 4242 || gid != 4243 {
			t.Errorf("the program's file belongs to %d:%d, want the caller sudo named, 4242:4243", uid, gid)
		}
	})

	t.Run("pty dump", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		dump := filepath.Join(h.tmp, "raw.bin")
		d := h.start("--pty-dump", dump, "--emulator", "custom", "--", "sh", "-c", `printf '\033[31mred\033[0m\n'; cat`)
		h.waitScreen(d, "red")
		if _, err := os.Lstat(dump); !os.IsNotExist(err) {
			t.Errorf("the dump is there before stop: %v", err)
		}
		h.mustRun("stop", "--socket", d.socket)
		waitGone(t, d.pid)
		b, err := os.ReadFile(dump)
		if err != nil || !strings.Contains(string(b), "\x1b[31mred\x1b[0m") {
			t.Errorf("the dump: %q, %v", b, err)
		}
		checkMode(t, dump, 0o600)
	})

	t.Run("much output, no client", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// 200,000 lines with nobody reading: only the daemon's reader keeps
		// the program from blocking on a full terminal, and only the
		// scrollback's bound keeps the daemon's memory in check.
		d := h.start("--scrollback", "500", "--", "sh", "-c", "seq 1 200000; sleep 1; exit 4")
		if out := h.mustRun("wait", "--socket", d.socket, "--quiet"); out != "4\n" {
			t.Fatalf("wait --quiet: %q", out)
		}
		out, _, _ := h.run("output", "--socket", d.socket, "--no-color", "--from", "-")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 500+24 || lines[0] != strconv.Itoa(200000-500-22) {
			t.Errorf("after 200,000 lines: %d lines from %q, want 524 from %d", len(lines), lines[0], 200000-500-22)
		}
	})

	t.Run("containment", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// A host file beside the directories the program is given.
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.work, "mine"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The working directory and $TMPDIR (the caller's own, 0700) at
		// their host paths; the secret nowhere.
		script := `test "$PWD" = ` + h.work + ` && test "$(pwd)" = ` + h.work + ` && test -e mine && echo work:seen; ` +
			`test "$TMPDIR" = ` + h.tmp + ` && test -d ` + h.tmp + ` && echo tmpdir:seen; ` +
			`test -e ` + secret + ` || echo secret:hidden; ` +
			`echo procs:$(ls /proc | grep -c '^[0-9]'); echo done; cat`
		d := h.start("--", "sh", "-c", script)
		s := h.waitScreen(d, "done")
		for _, want := range []string{"work:seen", "tmpdir:seen", "secret:hidden"} {
			if !strings.Contains(s, want) {
				t.Errorf("screen %q lacks %s", s, want)
			}
		}
		var procs int
		for l := range strings.Lines(s) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "procs:"); ok {
				procs, _ = strconv.Atoi(v)
			}
		}
		if procs < 1 || procs > 6 {
			t.Errorf("the program sees %d processes, want only its sandbox's own", procs)
		}
	})

	t.Run("write and read at their own paths", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		out := publicTempDir(t, 0o777)
		ref := publicTempDir(t, 0o755)
		if err := os.WriteFile(filepath.Join(ref, "given"), []byte("ref\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script := `echo made >` + out + `/new && echo out:written; cat ` + ref + `/given; ` +
			`(echo x >` + ref + `/new) 2>/dev/null && echo ref:writable || echo ref:refused; echo done; cat`
		d := h.start("--write", out, "--read", ref, "--", "sh", "-c", script)
		s := h.waitScreen(d, "done")
		for _, want := range []string{"out:written", "ref\n", "ref:refused"} {
			if !strings.Contains(s, want) {
				t.Errorf("screen %q lacks %q", s, want)
			}
		}
		if b, err := os.ReadFile(filepath.Join(out, "new")); err != nil || string(b) != "made\n" {
			t.Errorf("the file written in --write's directory: %q, %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(ref, "new")); err == nil {
			t.Error("a write reached --read's directory")
		}
	})

	t.Run("receipts", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		out := h.mustRun("receipts", "--socket", d.socket, "--json")
		var rs struct {
			Receipts []struct{ Constraint, Status, Tier, Mechanism, Reason string }
		}
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatalf("receipts --json %q: %v", out, err)
		}
		want := map[string]string{"seed": "unsupported", "clock": "unsupported", "locale": "delivered", "timezone": "unsupported",
			"terminal": "os", "filesystem": "os", "network": "os"}
		order := []string{"seed", "clock", "locale", "timezone", "terminal", "filesystem", "network"}
		if len(rs.Receipts) != len(order) {
			t.Fatalf("receipts %+v, want the seven constraints", rs.Receipts)
		}
		for i, r := range rs.Receipts {
			got := r.Tier
			if got == "" {
				got = r.Status
			}
			if r.Constraint != order[i] || got != want[r.Constraint] {
				t.Errorf("receipt %d: %+v, want %s %s", i, r, order[i], want[order[i]])
			}
		}
		if fs := rs.Receipts[5]; !strings.Contains(fs.Mechanism, "binds") {
			t.Errorf("filesystem receipt %+v does not name the verified binds", fs)
		}
		if st := h.mustRun("status", "--socket", d.socket); !strings.Contains(st, "Sandbox: isolation os, filesystem os, network os, terminal os\n") {
			t.Errorf("status %q does not say how the program is sandboxed", st)
		}
		if table := h.mustRun("receipts", "--socket", d.socket); !strings.Contains(table, "network     os") {
			t.Errorf("receipts table %q", table)
		}
	})

	t.Run("allow", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				fmt.Fprintln(c, "hello from the host")
				c.Close()
			}
		}()
		t.Cleanup(func() { ln.Close() })
		port := ln.Addr().(*net.TCPAddr).Port
		probe := fmt.Sprintf(`import socket
try:
    s = socket.create_connection(("127.0.0.1", %d), timeout=5)
    print("got:" + s.recv(64).decode().strip())
except OSError as e:
    print("refused:" + type(e).__name__)
print("done")
`, port)
		for _, tc := range []struct {
			name  string
			flags []string
			want  string
		}{
			{"allowed", []string{"--allow", fmt.Sprintf("127.0.0.1:%d", port)}, "got:hello from the host"},
			{"denied by default", nil, "refused:"},
		} {
			h := newTermHarness(t, bin, "")
			d := h.start(append(tc.flags, "--", "/usr/bin/python3", "-c", probe)...)
			if s := h.waitScreen(d, "done"); !strings.Contains(s, tc.want) {
				t.Errorf("%s: screen %q lacks %q", tc.name, s, tc.want)
			}
		}
	})

	t.Run("screen text and emulator details, as tmux shows them", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// A line longer than the screen, CJK, box drawing (UTF-8 and the
		// DEC set), CSI G d 1K X P @ S T Z b and the pending wrap at the
		// last column. CHT and a CPR at a pending wrap are left out: tmux
		// ignores the one and reports the other past the last column,
		// where we do as xterm does (docs/VT.md); the query replies are
		// TestTermProtocol's.
		script := `printf 'wrap:%s\n' "$(printf '%0120d' 0 | tr 0 w)"
printf 'CJK: 日本語テキスト|\n'
printf '┌──┐ \033(0lqqk\033(B\n'
printf 'abcdefghij\033[4GX\033[2;30HY\033[6dZ\n'
printf 'erase-left-here\033[8G\033[1K|\n'
printf 'erase-chars0123\033[5G\033[3X|\n'
printf 'delete0123456\033[3G\033[2P|\n'
printf 'insert0123\033[3G\033[2@|\n'
printf 'tab\tafter\033[Zback\n'
printf 'rep:x\033[5b\n'
printf '%080d' 0 | tr 0 e; printf 'after-pending-wrap\n'
printf 'l1\nl2\nl3\033[1S\033[1T\n'
echo END; exec cat
`
		if err := os.WriteFile(filepath.Join(h.work, "screen.sh"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		d := h.start("--size", "80x24", "--", "/bin/sh", "./screen.sh")
		ours := h.waitScreen(d, "END")
		pane := tmuxtest.Start(t, tmuxtest.Options{Cols: 80, Rows: 24, Dir: h.work,
			Env:  []string{"PATH=/usr/bin:/bin", "TERM=xterm-256color", "LANG=C.UTF-8"},
			Argv: []string{"/bin/sh", "./screen.sh"}})
		theirs, _, ok := pane.Until(10*time.Second, func(ls []string, _ tmuxtest.State) bool { return strings.Contains(strings.Join(ls, "\n"), "END") })
		if !ok {
			t.Fatalf("tmux never showed END:\n%s", strings.Join(theirs, "\n"))
		}
		got := strings.Split(strings.TrimSuffix(ours, "\n"), "\n")
		for len(got) < 24 {
			got = append(got, "")
		}
		for i := range got {
			got[i] = strings.TrimRight(got[i], " ")
		}
		for i := range 24 {
			if got[i] != theirs[i] {
				t.Errorf("line %d:\n ours %q\ntmux %q", i+1, got[i], theirs[i])
			}
		}
	})

	t.Run("a reply too long to send says so", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// 4,000 lines of 79 cells, each cell in its own 24-bit colours:
		// the whole scrollback in colour is over the 10 MiB line bound.
		gen := `awk 'BEGIN { for (i = 0; i < 4000; i++) { s = ""; for (j = 0; j < 79; j++) s = s sprintf("\033[38;2;%d;%d;%dm\033[48;2;%d;%d;%dmx", j, i % 256, 7, i % 256, j, 9); print s "\033[0m" } }'; echo END; exec cat`
		d := h.start("--", "sh", "-c", gen)
		h.waitScreen(d, "END")
		if _, errOut, status := h.run("output", "--socket", d.socket, "--from", "-"); status != 1 || !strings.Contains(errOut, "cannot be sent") {
			t.Errorf("output --from - of a 10 MiB colour scrollback: %d %q, want an error saying the reply cannot be sent", status, errOut)
		}
		if out := h.mustRun("output", "--socket", d.socket, "--from", "-3"); !strings.Contains(out, ";38;2;") {
			t.Errorf("output --from -3: %.200q, want the last lines in colour", out)
		}
	})

	t.Run("the program cannot take its own socket", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// $TMPDIR is the caller's own, so the program may write it; the
		// daemon's socket directory in it is masked.
		d := h.start("--", "sh", "-c", `for s in "$TMPDIR"/interminai-*/socket; do mv "$s" "$TMPDIR/stolen" 2>/dev/null && echo stolen; rm -f "$s" 2>/dev/null; done; `+
			`mv "$TMPDIR"/interminai-* "$TMPDIR/moved" 2>/dev/null && echo moved; echo "left $(ls -A "$TMPDIR"/interminai-* 2>/dev/null | wc -l)"; echo done; cat`)
		s := h.waitScreen(d, "done")
		if strings.Contains(s, "stolen") || strings.Contains(s, "moved") || !strings.Contains(s, "left 0") {
			t.Errorf("screen %q: the program reached the daemon's socket directory", s)
		}
		if _, _, status := h.run("status", "--socket", d.socket); status != 0 {
			t.Errorf("status at the announced socket: %d, want the daemon still there", status)
		}
	})

	t.Run("a shared working directory is said", func(t *testing.T) {
		h := newTermHarness(t, bin, "") // its working directory is 0777
		out, errOut, status := h.run("start", "--state-dir", h.state, "--", "cat")
		if status != 0 {
			t.Fatalf("start: %d %s", status, errOut)
		}
		d := parseAnnounce(t, out)
		defer func() {
			h.mustRun("stop", "--socket", d.socket)
			waitGone(t, d.pid)
		}()
		if !strings.Contains(errOut, "Warning: the working directory "+h.work+" is shared with other users") {
			t.Errorf("start's stderr %q does not warn of the shared working directory", errOut)
		}
	})

	t.Run("a program that does not exist", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "/no/such/program")
		if _, _, status := h.run("status", "--socket", d.socket, "--quiet"); status != 127 {
			t.Errorf("status --quiet: %d, want 127", status)
		}
	})

	t.Run("stop escalates", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(3)
		h := newTermHarness(t, bin, marker)
		// Deaf to SIGTERM and SIGHUP: only the kill after the grace ends it.
		d := h.start("--", "sh", "-c", `trap "" TERM HUP; echo deaf; sleep `+marker)
		h.waitScreen(d, "deaf")
		begin := time.Now()
		h.mustRun("stop", "--socket", d.socket)
		took := time.Since(begin)
		waitGone(t, d.pid)
		if n := len(sandboxtest.PidsMatching(marker)); n > 0 {
			t.Errorf("%d processes of the sandbox outlived stop", n)
		}
		t.Logf("stop of a program deaf to SIGTERM and SIGHUP took %v", took)
	})

	t.Run("daemon terminated", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(4)
		h := newTermHarness(t, bin, marker)
		d := h.start("--", "sleep", marker)
		if err := unix.Kill(d.pid, unix.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitGone(t, d.pid)
		if _, err := os.Lstat(filepath.Dir(d.socket)); !os.IsNotExist(err) {
			t.Errorf("the auto-generated directory outlived a SIGTERMed daemon: %v", err)
		}
	})

	t.Run("refused starts", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		_, errOut, status := h.run("start", "--state-dir", h.state, "--socket", d.socket, "--", "cat")
		if status != 1 || !strings.Contains(errOut, "already listens") {
			t.Errorf("a second start on a live socket: status %d, %q", status, errOut)
		}
		notSock := filepath.Join(h.tmp, "file")
		if err := os.WriteFile(notSock, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, status = h.run("start", "--state-dir", h.state, "--socket", notSock, "--", "cat")
		if status != 1 || !strings.Contains(errOut, "not a socket") {
			t.Errorf("start on a regular file: status %d, %q", status, errOut)
		}
		shared := publicTempDir(t, 0o777)
		_, errOut, status = h.run("start", "--state-dir", shared, "--", "cat")
		if status != 1 || !strings.HasPrefix(errOut, "Error: ") {
			t.Errorf("start with a state directory others can write: status %d, %q", status, errOut)
		}
		if out := h.mustRun("status", "--socket", d.socket); !strings.Contains(out, "Running: true") {
			t.Errorf("the first daemon after the refused starts: %q", out)
		}
	})

	t.Run("daemon killed", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(2)
		h := newTermHarness(t, bin, marker)
		d := h.start("--", "sleep", marker)
		if len(sandboxtest.PidsMatching(marker)) == 0 {
			t.Fatal("the program does not run")
		}
		if err := unix.Kill(d.pid, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Reaped, not only dead: Sweep counts a zombie owner as alive.
		for deadline := time.Now().Add(10 * time.Second); unix.Kill(d.pid, 0) == nil; {
			if time.Now().After(deadline) {
				t.Fatalf("the killed daemon %d was never reaped", d.pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for deadline := time.Now().Add(10 * time.Second); len(sandboxtest.PidsMatching(marker)) > 0; {
			if time.Now().After(deadline) {
				t.Fatal("the sandbox outlived its daemon")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The next start sweeps what the dead daemon left in the state
		// directory; CheckNoLeaks then finds nothing.
		d2 := h.start("--", "cat")
		h.mustRun("stop", "--socket", d2.socket)
		waitGone(t, d2.pid)
	})
}

// termCall sends one raw request line to the daemon and returns the
// reply, decoded.
func termCall(t *testing.T, socket, line string) map[string]any {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, line+"\n"); err != nil {
		t.Fatal(err)
	}
	b, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatalf("%s: read the reply: %v", line, err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: reply %q: %v", line, b, err)
	}
	return rep
}

// okData is an ok reply's data.
func okData(t *testing.T, line string, rep map[string]any) map[string]any {
	t.Helper()
	if rep["status"] != "ok" {
		t.Fatalf("%s: reply %v, want ok", line, rep)
	}
	d, _ := rep["data"].(map[string]any)
	return d
}

func TestTermProtocol(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)

	t.Run("a half-closed client still gets its reply", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// As socat and nc -N do: the line, then the sending side shut.
		if _, err := io.WriteString(c, `{"type":"WAIT","activity":true}`+"\n"); err != nil {
			t.Fatal(err)
		}
		if err := c.(*net.UnixConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the WAIT is pending, not cancelled
		h.mustRun("input", "--socket", d.socket, "--text", `x`)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(line, `"status":"ok"`) || !strings.Contains(line, `"activity":true`) {
			t.Errorf("reply %q, %v; want the WAIT answered when the output came", line, err)
		}
	})

	t.Run("robustness", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		for _, tc := range []struct{ line, want string }{
			{`garbage`, "Invalid request"},
			{`{"no":"type"}`, "missing 'type' field"},
			{`{"type":"NOPE"}`, "Unknown command: NOPE"},
			{`{"type":"KILL","signal":"NOTASIGNAL"}`, "Invalid signal"},
			{`{"type":"RESIZE","cols":0,"rows":5}`, "Invalid size"},
		} {
			rep := termCall(t, d.socket, tc.line)
			if msg, _ := rep["error"].(string); rep["status"] != "error" || !strings.Contains(msg, tc.want) {
				t.Errorf("%s: reply %v, want an error with %q", tc.line, rep, tc.want)
			}
		}
		// A client that hangs up mid-request, one that waits and is
		// killed, and a request over the seed's 10 MB.
		half, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(half, `{"type":"STA`)
		half.Close()
		w := h.cmd("wait", "--socket", d.socket, "--quiet")
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		_ = w.Process.Kill()
		_ = w.Wait()
		big, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		_ = big.SetDeadline(time.Now().Add(10 * time.Second))
		go func() { _, _ = big.Write(bytes.Repeat([]byte("x"), 11<<20)) }()
		b, _ := bufio.NewReader(big).ReadBytes('\n')
		big.Close()
		if !strings.Contains(string(b), "longer than") {
			t.Errorf("a request over 10 MB: reply %q", b)
		}
		// Five clients at once, each answered.
		errs := make(chan error, 5)
		for i := range 5 {
			go func() {
				c := h.cmd("input", "--socket", d.socket, "--text", fmt.Sprintf(`client %d\n`, i))
				errs <- c.Run()
			}()
		}
		for range 5 {
			if err := <-errs; err != nil {
				t.Errorf("a concurrent client: %v", err)
			}
		}
		for i := range 5 {
			h.waitScreen(d, fmt.Sprintf("client %d", i))
		}
		rep := termCall(t, d.socket, `{"type":"STATUS"}`)
		if data := okData(t, "STATUS", rep); data["running"] != true {
			t.Errorf("STATUS after all that: %v", rep)
		}
	})

	t.Run("field placements", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--size", "40x8", "--", "sh", "-c", "trap 'echo got INT' INT; echo ready; while :; do sleep 0.05; done")
		h.waitScreen(d, "ready") // the trap is set
		for _, line := range []string{
			`{"type":"RESIZE","cols":50,"rows":9}`,
			`{"type":"RESIZE","data":{"cols":60,"rows":10}}`,
		} {
			okData(t, line, termCall(t, d.socket, line))
		}
		out := okData(t, "OUTPUT", termCall(t, d.socket, `{"type":"OUTPUT"}`))
		if size, _ := out["size"].(map[string]any); size["cols"] != 60.0 || size["rows"] != 10.0 {
			t.Errorf("size after the data-placed RESIZE: %v", out["size"])
		}
		for i, line := range []string{
			`{"type":"KILL","signal":"SIGINT"}`,
			`{"type":"KILL","data":{"signal":2}}`,
		} {
			if data := okData(t, line, termCall(t, d.socket, line)); data["signal_sent"] != "SIGINT" {
				t.Errorf("%s: %v", line, data)
			}
			// One at a time: a second SIGINT while the first is pending
			// would merge with it.
			h.waitScreen(d, "ready\n"+strings.Repeat("got INT\n", i+1))
		}
		for _, line := range []string{
			`{"type":"STATUS","activity":true}`, // clears the flag
			`{"type":"WAIT","data":{"activity":true}}`,
		} {
			go func() { _, _, _ = h.run("input", "--socket", d.socket, "--text", `x`) }()
			data := okData(t, line, termCall(t, d.socket, line))
			if _, ok := data["activity"]; !ok {
				t.Errorf("%s: %v has no activity", line, data)
			}
		}
	})

	t.Run("output ranges and query replies", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// The program asks for the cursor position and prints what the
		// terminal answered, with no client looking.
		script := `seq 1 30; stty -icanon -echo min 6; printf '\033[6n'; x=$(dd bs=6 count=1 2>/dev/null); ` +
			`stty sane; printf 'reply %s\n' "$x" | tr '\033' E; sleep 100`
		d := h.start("--size", "20x5", "--scrollback", "100", "--", "sh", "-c", script)
		h.waitScreen(d, "reply E[")
		out := okData(t, "OUTPUT", termCall(t, d.socket, `{"type":"OUTPUT","format":"ascii"}`))
		if !strings.Contains(out["screen"].(string), "reply E[5;1R") {
			t.Errorf("the DSR reply: screen %q", out["screen"])
		}
		if out["scrollback_capacity"] != 100.0 || out["from"] != 1.0 || out["to"] != 5.0 {
			t.Errorf("OUTPUT: %v", out)
		}
		cur, _ := out["cursor"].(map[string]any)
		if cur["row"] != 4.0 || cur["col"] != 0.0 {
			t.Errorf("cursor %v, want row 4 col 0 (0-based, below the reply line)", cur)
		}
		avail := int(out["scrollback_available"].(float64))
		back := okData(t, "OUTPUT", termCall(t, d.socket, `{"type":"OUTPUT","from":-3,"to":0}`))
		if want := fmt.Sprintf("%d\n%d\n%d\n", avail-2, avail-1, avail); back["screen"] != want || back["from"] != -3.0 || back["to"] != -1.0 {
			t.Errorf("scrollback -3..0: %v, want %q", back, want)
		}
		all := okData(t, "OUTPUT", termCall(t, d.socket, `{"type":"OUTPUT","from":"-"}`))
		if !strings.HasPrefix(all["screen"].(string), "1\n2\n") || all["from"] != float64(-avail) {
			t.Errorf("from the oldest: %v", all)
		}
		if s, _, _ := h.run("output", "--socket", d.socket, "--from", "-2", "--to", "0", "--no-color"); s != fmt.Sprintf("%d\n%d\n", avail-1, avail) {
			t.Errorf("output --from -2 --to 0: %q", s)
		}
	})
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeType | os.ModePerm); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

// fileOwner is path's uid and gid on the host.
func fileOwner(t *testing.T, path string) (uid, gid int) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid), int(st.Gid)
}
