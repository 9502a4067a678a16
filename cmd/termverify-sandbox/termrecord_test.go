package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// The recorded-session tests (term start --transcript, docs/TERM.md "A
// session recorded") drive the daemon through the CLI as an agent does,
// then judge the transcript with the CLI's validate, replay --pty and
// compare.

// recStep is one client request of a recorded session: a term
// subcommand's arguments after --socket.
type recStep []string

// recSession is a program, the files of its working directory, and what
// the client does; stop ends the session with STOP (else the program
// ends on its own and STOP comes after).
type recSession struct {
	argv  []string
	files map[string]string
	steps []recStep
}

// writeFiles makes files in dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// record runs s under a recording daemon and returns the transcript's
// path, once STOP has been answered (the transcript is in place by then).
func (h *termHarness) record(s recSession) string {
	h.t.Helper()
	writeFiles(h.t, h.work, s.files)
	out := filepath.Join(h.tmp, "session.jsonl")
	d := h.start(append([]string{"--transcript", out, "--"}, s.argv...)...)
	for _, st := range s.steps {
		args := append([]string{st[0], "--socket", d.socket}, st[1:]...)
		if _, errOut, status := h.run(args...); status != 0 {
			h.t.Fatalf("term %v: status %d\n%s", args, status, errOut)
		}
	}
	h.mustRun("stop", "--socket", d.socket)
	waitGone(h.t, d.pid)
	return out
}

// replayPTY replays src against argv in a fresh working directory holding
// files, and returns replay's status and output.
func replayPTY(t *testing.T, bin, src string, files map[string]string, ignore []string, argv ...string) (int, string) {
	t.Helper()
	root := publicTempDir(t, 0o777)
	writeFiles(t, root, files)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	args := []string{"replay", src, "--pty", "--root", "work=" + root, "--state-dir", state,
		"--transcript", filepath.Join(t.TempDir(), "replayed.jsonl")}
	for _, ig := range ignore {
		args = append(args, "--ignore", ig)
	}
	args = append(append(args, "--"), argv...)
	c := exec.Command(bin, args...)
	stdout, stderr, status := run(t, c)
	return status, stdout + stderr
}

// validateOK runs validate on path, which must pass.
func validateOK(t *testing.T, bin, path string) {
	t.Helper()
	if out, errOut, status := run(t, exec.Command(bin, "validate", path)); status != 0 {
		t.Fatalf("validate %s: status %d\n%s%s", path, status, out, errOut)
	}
}

func TestTermRecord(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	words := strings.Repeat("lorem ipsum dolor sit amet\n", 3) + func() string {
		var b strings.Builder
		for i := 1; i <= 80; i++ {
			b.WriteString(strings.Repeat("w", i%30) + "\n")
		}
		return b.String()
	}()
	bash := []string{"bash", "--norc", "--noprofile"}
	// vim without its terminal queries (t_RV and the like): where their
	// replies land in its output depends on when they come, so the
	// terminal.output events of two runs of the same session differ
	// though every screen is the same (run --pty's replays too).
	vim := []string{"vim", "-u", "NONE", "-i", "NONE", "-n", "-N", "--cmd", "set t_RV= t_u7= t_RF= t_RB= t_RC= t_RS=", "notes.txt"}
	less := []string{"less", "words.txt"}

	// Each session replays equivalent: the program, its inputs as the
	// daemon wrote them, each epoch's screen at the next wait for input.
	sessions := []struct {
		name string
		s    recSession
		end  string // the transcript's last record must contain it
		has  string // and a record (a frame, an output event) must show it
		// ignore is replay's --ignore: what a program makes differ from
		// run to run by itself.
		ignore []string
	}{
		{"bash", recSession{argv: bash, steps: []recStep{
			{"input", "--text", `echo hi\r`},
			{"input", "--text", `printf '%s\n' one two\r`},
			// The program sets its own size: terminal-size-changed, as
			// run --pty says it, until a resize gives it ours again.
			{"input", "--text", `stty cols 50\r`},
			{"resize", "--size", "100x30"},
			{"input", "--text", `stty size\r`},
			// The delivered receipts are true: the program has the
			// variables they name, as under run --pty.
			{"input", "--text", `echo "[$TERMVERIFY_SEED $TZ $TERMVERIFY_TIMEZONE $TERMVERIFY_CLOCK_INITIAL_MS $TERMVERIFY_LOCALE]"\r`},
			{"input", "--text", `exit 3\r`},
		}}, `"exit":{"kind":"code","value":3}`, `"[0 UTC0 UTC 0 C]"`, nil},
		{"bash stopped", recSession{argv: bash, steps: []recStep{
			{"input", "--text", `echo bye\r`},
		}}, `"exit":{"kind":"signal","value":"HUP"}`, `"bye"`, nil},
		{"vim", recSession{argv: vim, steps: []recStep{
			{"input", "--text", `ihello from vim\e`},
			{"input", "--text", `:wq\r`},
		}}, `"exit":{"kind":"code","value":0}`, `[New] 1L, 15B written`, nil},
		// STOP hangs up first, as run --pty's input.stop does: vim dies
		// of SIGHUP in both, where SIGTERM first would give another end.
		// The hangup's SIGCONT races vim's SIGHUP handler, so the order
		// of vim's last escape sequences varies from run to run (two
		// run --pty runs' too): the output events are not compared, the
		// screens and the exit are.
		{"vim stopped", recSession{argv: vim, steps: []recStep{
			{"input", "--text", `ihello\e`},
		}}, `"exit":{"kind":"signal","value":"HUP"}`, `"Vim: Caught deadly signal HUP"`, []string{"observation:payload.events"}},
		{"less", recSession{argv: less, files: map[string]string{"words.txt": words}, steps: []recStep{
			{"input", "--text", ` `},
			{"input", "--text", `G`},
			{"input", "--text", `q`},
		}}, `"exit":{"kind":"code","value":0}`, `"(END)"`, nil},
	}
	for _, tc := range sessions {
		t.Run(tc.name, func(t *testing.T) {
			h := newTermHarness(t, bin, "")
			src := h.record(tc.s)
			validateOK(t, bin, src)
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, `"run.finished"`) || !strings.Contains(last, tc.end) {
				t.Errorf("last record %s, want run.finished with %s", last, tc.end)
			}
			if !strings.Contains(string(b), tc.has) {
				t.Errorf("no record shows %s:\n%s", tc.has, b)
			}
			if status, out := replayPTY(t, bin, src, tc.s.files, tc.ignore, tc.s.argv...); status != 0 || !strings.Contains(out, "equivalent") {
				t.Errorf("replay --pty: status %d\n%s\nsource:\n%s", status, out, b)
			}
		})
	}

	// A burst the emulator takes a while to digest: the epoch closes
	// only once the screen has all of it (the reader hands each read to
	// the emulator before the epoch's close may look), so the observation
	// ends with the prompt after the last number.
	t.Run("burst", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		src := h.record(recSession{argv: bash, steps: []recStep{{"input", "--text", `seq 1 60000\r`}, {"input", "--text", `exit\r`}}})
		b, _ := os.ReadFile(src)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) < 11 || !strings.Contains(lines[10], `"60000","bash-5.2$"`) || !strings.HasSuffix(strings.SplitN(lines[10], `"type":"terminal.output"`, 2)[0], `60000\r\n\u001b[?2004hbash-5.2$ "},`) {
			t.Errorf("the epoch of seq 1 60000 closed before its screen had the last line and the prompt:\n%.600s", lines[min(10, len(lines)-1)])
		}
	})

	t.Run("identical", func(t *testing.T) {
		s := recSession{argv: bash, steps: []recStep{
			{"input", "--text", `echo same\r`},
			{"input", "--text", `for i in 1 2 3; do echo $i; done\r`},
		}}
		a := newTermHarness(t, bin, "").record(s)
		b := newTermHarness(t, bin, "").record(s)
		ab, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if len(ab) == 0 || !bytes.Equal(ab, bb) {
			t.Errorf("two sessions differ:\n%s\n----\n%s", ab, bb)
		}
		if out, errOut, status := run(t, exec.Command(bin, "compare", a, b)); status != 0 || !strings.Contains(out, "equivalent") {
			t.Errorf("compare: status %d\n%s%s", status, out, errOut)
		}
	})

	t.Run("unrecorded", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		plain := h.record(recSession{argv: bash, steps: []recStep{{"input", "--text", `echo x\r`}}})
		h2 := newTermHarness(t, bin, "")
		busy := h2.record(recSession{argv: bash, steps: []recStep{
			{"output"}, {"status"}, {"input", "--text", `echo x\r`}, {"debug"}, {"output", "--no-color"}, {"wait", "--settled", "--timeout", "5000"},
		}})
		pb, _ := os.ReadFile(plain)
		bb, _ := os.ReadFile(busy)
		if !bytes.Equal(pb, bb) {
			t.Errorf("OUTPUT, STATUS, DEBUG and WAIT changed the transcript:\n%s\n----\n%s", pb, bb)
		}
	})

	// The sandbox's init killed from the host: the program's end is not
	// observed (the exit Wait gives is made up), so the transcript fails
	// exit-unknown as run --pty's does, never run.finished with a guess.
	t.Run("init lost", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		src := filepath.Join(h.tmp, "session.jsonl")
		d := h.start("--transcript", src, "--", "cat")
		h.mustRun("wait", "--socket", d.socket, "--settled")
		init := childRunning(t, d.pid, reaper.Arg)
		if err := unix.Kill(init, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The clients say the exit code is a stand-in, never the
		// program's status.
		if _, errOut, _ := h.run("wait", "--socket", d.socket, "--quiet"); !strings.Contains(errOut, "the program's end was not observed") {
			t.Errorf("wait --quiet after the init was killed: stderr %q, want the unobserved warning", errOut)
		}
		if out := h.mustRun("status", "--socket", d.socket); !strings.Contains(out, "Exit unobserved: the sandbox's init ended without reporting it") {
			t.Errorf("status after the init was killed:\n%s\nwant an Exit unobserved line", out)
		}
		h.mustRun("stop", "--socket", d.socket)
		waitGone(t, d.pid)
		validateOK(t, bin, src)
		b, _ := os.ReadFile(src)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if last := lines[len(lines)-1]; !strings.Contains(last, `"run.failed"`) || !strings.Contains(last, `"failure":"exit-unknown"`) {
			t.Errorf("the init killed: want run.failed exit-unknown last, got %s", last)
		}
	})

	t.Run("killed", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		src := h.record(recSession{argv: bash, steps: []recStep{
			{"input", "--text", `echo before\r`},
			{"kill", "--signal", "KILL"},
			{"wait", "--quiet"},
		}})
		validateOK(t, bin, src)
		b, _ := os.ReadFile(src)
		if !strings.HasSuffix(strings.TrimSpace(string(b)), `"payload":{"exit":{"kind":"signal","value":"KILL"}},"protocol":"termverify.transcript/v1","run_id":"term-session","seq":11}`) {
			t.Errorf("a program killed while idle: want the epochs so far, then run.finished with KILL:\n%s", b)
		}
	})

	// KILL has no input kind in v1: it is said in a diagnostic of the
	// epoch it falls in, or of the next one when none is open.
	t.Run("signal", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		// The settled wait makes the readiness epoch's close likely
		// before the KILL, not certain: the recorder closes it on its
		// own goroutine. Either placement is the documented one (the
		// epoch open when it was sent, or the next after its input).
		src := h.record(recSession{argv: bash, steps: []recStep{
			{"wait", "--settled"},
			{"kill", "--signal", "WINCH"},
			{"input", "--text", `echo after\r`},
		}})
		validateOK(t, bin, src)
		b, _ := os.ReadFile(src)
		input, said, diags := -1, -1, 0
		for i, l := range strings.Split(string(b), "\n") {
			switch {
			case strings.Contains(l, `"input.text"`):
				input = i
			case strings.Contains(l, `"code":"term-signal-sent","details":{"signal":"WINCH"}`):
				said = i
				diags++
			}
		}
		if diags != 1 || input < 0 || (said != input+1 && said > input) {
			t.Errorf("want the signal said once, in the readiness epoch or right after the next input (line %d, input at %d, %d said):\n%s", said, input, diags, b)
		}
	})

	// RECEIPTS says what the transcript's receipts say: a recorded
	// program is delivered seed, clock, locale and timezone.
	t.Run("receipts", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--transcript", filepath.Join(h.tmp, "r.jsonl"), "--", "cat")
		out := h.mustRun("receipts", "--socket", d.socket)
		for _, want := range []string{"seed        delivered  spawn-env TERMVERIFY_SEED=0", "timezone    delivered  spawn-env TERMVERIFY_TIMEZONE=UTC,TZ=UTC0"} {
			if !strings.Contains(out, want) {
				t.Errorf("receipts of a recorded session: no %q in\n%s", want, out)
			}
		}
		h.mustRun("stop", "--socket", d.socket)
	})

	// Output while no epoch is open goes to the next epoch, said in
	// terminal-output-while-idle, as run --pty records it.
	t.Run("idle output", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		src := h.record(recSession{argv: bash, steps: []recStep{
			{"input", "--text", `(sleep 0.2; echo la""te) &\r`},
			{"wait", "--contains", "late", "--timeout", "5000"},
			{"input", "--text", `echo x\r`},
		}})
		validateOK(t, bin, src)
		b, _ := os.ReadFile(src)
		lines := strings.Split(string(b), "\n")
		if len(lines) < 13 || !strings.Contains(lines[11], `"input.text","payload":{"at_ms":0,"text":"echo x\r"}`) ||
			!strings.Contains(lines[12], `"code":"terminal-output-while-idle"`) || !strings.Contains(lines[13], `late`) {
			t.Errorf("want the late output in the next epoch, with terminal-output-while-idle:\n%s", b)
		}
	})

	t.Run("not found", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		src := h.record(recSession{argv: []string{"no-such-program-here"}})
		validateOK(t, bin, src)
		b, _ := os.ReadFile(src)
		if !strings.Contains(string(b), `"run.failed"`) || !strings.Contains(string(b), `"adapter-start-failed"`) {
			t.Errorf("want run.failed adapter-start-failed:\n%s", b)
		}
	})

	// A daemon killed outright leaves nothing: the transcript is an
	// unnamed file until the session ends (docs/TERM.md).
	t.Run("daemon killed", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		dir := publicTempDir(t, 0o755)
		out := filepath.Join(dir, "session.jsonl")
		d := h.start("--transcript", out, "--", "bash", "--norc", "--noprofile")
		h.mustRun("input", "--socket", d.socket, "--text", `echo hi\r`)
		h.mustRun("wait", "--socket", d.socket, "--settled", "--timeout", "5000")
		if err := syscall.Kill(d.pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitGone(t, d.pid)
		if _, err := sandbox.Sweep(h.state); err != nil {
			t.Errorf("sweep after the killed daemon: %v", err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 0 {
			t.Errorf("the directory of the transcript holds %v (%v), want nothing", entries, err)
		}
	})
}

// childRunning is the pid of parent's child whose command line holds
// arg (the sandbox's init, the reaper, is the daemon's child).
func childRunning(t *testing.T, parent int, arg string) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		dir := filepath.Dir(st)
		if cl, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil && bytes.Contains(cl, []byte(arg)) {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	t.Fatalf("no child of %d runs with %s", parent, arg)
	return 0
}
