package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/internal/tmuxtest"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// ptyRun is one PTY-mode run of a real program in the real sandbox.
type ptyRun struct {
	cols, rows int
	argv       []string
	files      map[string]string // written into the mapped root first
	inputs     []input.Input
	epoch      time.Duration // the epoch deadline; 0 is 10 s
}

// ptyObs is one observation of a PTY run, as the tests look at it.
type ptyObs struct {
	lines     []string
	col, row  int64
	visible   bool
	mode      string
	output    string // the terminal.output event's chunk
	exited    bool
	exit      string // the exit as JSON, once exited
	afterKind string // the input record before it ("" for readiness)
}

// ptyResult is a finished PTY run.
type ptyResult struct {
	outcome
	root string
	obs  []ptyObs
}

// ptyRoot is a mapped root of the test's own holding files: writable by
// the subject's uid (the sandbox never chowns it), under the 0711
// directory TestMain made so the subject can reach it.
func ptyRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root, err := os.MkdirTemp(filepath.Dir(env.root), "pty-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	fillRoot(t, root, files)
	return root
}

func fillRoot(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ptyRequest is the example request in PTY mode at the os tier (which
// PTY mode needs: elsewhere it is refused), the terminal cols×rows.
func ptyRequest(t *testing.T, root string, r ptyRun) Request {
	t.Helper()
	req := exampleRequest(t)
	req.PTY = true
	req.Isolation = receipts.IsolationOS
	req.Config.Terminal.Columns, req.Config.Terminal.Rows = int64(r.cols), int64(r.rows)
	req.Args = r.argv
	req.Inputs = r.inputs
	req.Roots = map[string]string{"app": root}
	req.Deadlines = Deadlines{Handshake: 10 * time.Second, Epoch: 10 * time.Second, Run: 60 * time.Second}
	if r.epoch > 0 {
		req.Deadlines.Epoch = r.epoch
	}
	return req
}

// runPTY runs r in the sandbox and checks what every PTY run must show:
// a transcript that validates (runCase), the receipts of the os tier with
// the terminal on the sandbox's own devpts, and nothing left behind.
func runPTY(t *testing.T, r ptyRun) ptyResult {
	t.Helper()
	sandboxtest.RequireRoot(t)
	if env.buildErr != nil {
		t.Fatalf("example subjects: %v", env.buildErr)
	}
	needProgram(t, r.argv[0])
	root := ptyRoot(t, r.files)
	o := runCase(t, ptyRequest(t, root, r))
	checkPTYReceipts(t, o)
	checkNothingLeft(t, root, o.res.Sandboxes)
	return ptyResult{outcome: o, root: root, obs: ptyObservations(t, o, r.cols, r.rows)}
}

// needProgram skips the test, saying why, when the program is not
// installed where the sandbox finds it: the host's /usr is the sandbox's,
// and a bare name is looked up in the sandbox's PATH.
func needProgram(t *testing.T, name string) {
	t.Helper()
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			t.Skipf("%s not installed: %v", name, err)
		}
		return
	}
	for _, dir := range filepath.SplitList(sandbox.DefaultPath) {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode()&0o111 != 0 {
			return
		}
	}
	t.Skipf("%s not installed in %s", name, sandbox.DefaultPath)
}

func checkPTYReceipts(t *testing.T, o outcome) {
	t.Helper()
	if err := transcript.Validate(o.data); err != nil {
		t.Fatalf("transcript.Validate: %v", err)
	}
	got := map[receipts.Constraint]transcript.Receipt{}
	for _, r := range o.tr.Receipts() {
		got[r.Constraint] = r
	}
	for c, mech := range map[receipts.Constraint]string{
		receipts.Terminal:   receipts.MechanismPTY,
		receipts.Filesystem: receipts.MechanismMountNS,
		receipts.Network:    receipts.MechanismNetNS,
	} {
		r, ok := got[c]
		if !ok || r.Status != receipts.Applied || r.Tier != receipts.OS || r.Mechanism != mech {
			t.Errorf("receipt %s: %+v, want applied at os with x-mechanism %s", c, r.Receipt, mech)
		}
	}
}

// checkNothingLeft: the run's sandboxes left no state entry, cgroup or
// mount, and no process lives on in the mapped root (the subject's
// working directory: a program the teardown missed would still be there).
func checkNothingLeft(t *testing.T, root string, ids []string) {
	t.Helper()
	if len(ids) != 1 {
		t.Errorf("Result.Sandboxes %q, want one sandbox", ids)
	}
	for _, id := range ids {
		if _, err := os.Lstat(filepath.Join(env.stateDir, id)); err == nil {
			t.Errorf("state entry of %s left", id)
		}
		if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mi), id) {
			t.Errorf("a mount naming %s left", id)
		}
	}
	if left := cgroupsOf(ids); len(left) > 0 {
		t.Errorf("cgroups left: %q", left)
	}
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		t.Fatal(err)
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		var cwd unix.Stat_t
		if unix.Stat(filepath.Join("/proc", p.Name(), "cwd"), &cwd) == nil && cwd.Dev == st.Dev && cwd.Ino == st.Ino {
			cmd, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
			t.Errorf("process %s (%q) still runs in the mapped root", p.Name(), cmd)
		}
	}
}

// ptyObservations decodes every observation in order, with the kind of
// the input record that preceded it, and checks the PTY shape of each:
// a frame of exactly the terminal's rows lines, and the state naming the
// terminal's size, which is cols×rows until an input.resize changes it.
// It also replays the terminal.output events, in order, into a terminal
// of its own: after each observation's output that terminal must show
// the observation's frame and cursor, so no output was lost or counted
// twice between epochs.
func ptyObservations(t *testing.T, o outcome, cols, rows int) []ptyObs {
	t.Helper()
	replay := vt.New(vt.Config{Cols: cols, Rows: rows})
	get := func(v *canon.Value, path ...string) *canon.Value {
		for _, k := range path {
			if v == nil {
				return nil
			}
			v, _ = v.Get(k)
		}
		return v
	}
	var out []ptyObs
	last := ""
	for i := range o.tr.Records {
		rec := &o.tr.Records[i]
		if strings.HasPrefix(rec.Kind, "input.") {
			last = rec.Kind
			if rec.Kind == transcript.KindInputResize {
				c, _ := get(rec.Payload(), "columns").Int()
				r, _ := get(rec.Payload(), "rows").Int()
				cols, rows = int(c), int(r)
				replay.Resize(cols, rows)
			}
			continue
		}
		if rec.Kind != transcript.KindObservation {
			continue
		}
		p := rec.Payload()
		ob := ptyObs{afterKind: last}
		last = ""
		fr := get(p, "frame", "lines")
		if fr == nil || fr.Kind != canon.Array {
			t.Fatalf("observation %d has no frame: %s", len(out), jsonText(p))
		}
		for _, l := range fr.Items {
			ob.lines = append(ob.lines, l.Str)
		}
		if len(ob.lines) != rows {
			t.Errorf("observation %d: %d frame lines, want %d", len(out), len(ob.lines), rows)
		}
		if st, want := jsonText(get(p, "state")), fmt.Sprintf(`{"terminal":{"columns":%d,"rows":%d}}`, cols, rows); st != want {
			t.Errorf("observation %d: state %s, want %s", len(out), st, want)
		}
		if fc, _ := get(p, "frame", "columns").Int(); fc != int64(cols) {
			t.Errorf("observation %d: frame of %d columns, want %d", len(out), fc, cols)
		}
		ob.col, _ = get(p, "ui", "cursor", "column").Int()
		ob.row, _ = get(p, "ui", "cursor", "row").Int()
		ob.visible = get(p, "ui", "cursor", "visible").Bool
		ob.mode = get(p, "ui", "mode").Str
		if ev := get(p, "events"); ev != nil {
			for _, e := range ev.Items {
				if ty, _ := e.Get("type"); ty != nil && ty.Str == "terminal.output" {
					ob.output += get(&e, "data", "chunk").Str
				}
			}
		}
		if pr := get(p, "process"); pr != nil {
			if s := get(pr, "state"); s != nil && s.Str == "exited" {
				ob.exited = true
				ob.exit = jsonText(get(pr, "exit"))
			}
		}
		replay.WriteString(ob.output)
		cur := replay.Cursor()
		if got := replay.Lines(); !slices.Equal(got, ob.lines) || int64(cur.Col) != ob.col || int64(cur.Row) != ob.row {
			t.Errorf("observation %d: its terminal.output events so far replay to the screen (cursor %d,%d)\n%sand not to its frame (cursor %d,%d)\n%s",
				len(out), cur.Col, cur.Row, numbered(got), ob.col, ob.row, numbered(ob.lines))
		}
		out = append(out, ob)
	}
	return out
}

// ptyEnv is the environment the sandbox gives r's subject (buildSpec at
// the os tier, and the PATH Start adds when there is none), for the
// reference: the same variables, with HOME (which the sandbox's passwd
// entry sets to its working directory) the reference's own directory.
func ptyEnv(t *testing.T, r ptyRun, home string) []string {
	t.Helper()
	req := ptyRequest(t, home, r)
	req.Transcript = io.Discard
	p, err := newPlan(req)
	if err != nil {
		t.Fatal(err)
	}
	osTier := receipts.Mechanism{Tier: receipts.OS}
	out := receipts.Negotiate(negotiationRequest(p, sandbox.IsolationOS, osTier, osTier, assumedTerminal(sandbox.IsolationOS)))
	if out.Refusal != nil {
		t.Fatalf("negotiation refused: %+v", out.Refusal)
	}
	spec := buildSpec(p, sandbox.IsolationOS, out, stdio{})
	env := slices.Clone(spec.Env)
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		env = append(env, "PATH="+sandbox.DefaultPath)
	}
	return append(env, "HOME="+home)
}

// tmuxKeys are termverify.key/v1 names as tmux's send-keys names them;
// a chord with Control is C- and its key.
var tmuxKeys = map[string]string{
	"Enter": "Enter", "Escape": "Escape", "Space": "Space", "Tab": "Tab", "Backspace": "BSpace",
	"ArrowUp": "Up", "ArrowDown": "Down", "ArrowLeft": "Left", "ArrowRight": "Right",
	"PageUp": "PPage", "PageDown": "NPage", "Home": "Home", "End": "End",
}

func tmuxKey(t *testing.T, chord []string) string {
	t.Helper()
	prefix := ""
	for _, k := range chord[:len(chord)-1] {
		switch k {
		case "Control":
			prefix += "C-"
		case "Alt":
			prefix += "M-"
		default:
			t.Fatalf("chord %q: no tmux name for %s", chord, k)
		}
	}
	k := chord[len(chord)-1]
	if name, ok := tmuxKeys[k]; ok {
		return prefix + name
	}
	if len(k) != 1 {
		t.Fatalf("chord %q: no tmux name for %s", chord, k)
	}
	return prefix + k
}

// compareWithTmux runs r's program in tmux, on the host, as an
// unprivileged uid (as in the sandbox) in a directory holding the same
// files, with the sandbox's environment, and sends it the same inputs
// the way tmux itself sends them (its own key encoding in the program's
// modes; text with send-keys -l, its bytes as they are, line breaks and
// escapes included, as ours are), one at a time. After the readiness observation and after each input it waits
// until tmux's pane shows our observation's frame, cursor and screen
// mode, and fails with both screens when it never does. An exited
// observation is compared by its frame and the exit status.
func compareWithTmux(t *testing.T, r ptyRun, res ptyResult) {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Dir(env.root), "pty-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	fillRoot(t, dir, r.files)
	refEnv := ptyEnv(t, r, dir)
	// env -i finds setpriv in the reference's PATH, not in ours.
	if _, err := ptytest.LookPath(refEnv, "setpriv"); err != nil {
		t.Skipf("setpriv (to run the reference as an unprivileged uid) not installed: %v", err)
	}
	argv := append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, r.argv...)
	pane := tmuxtest.Start(t, tmuxtest.Options{Cols: r.cols, Rows: r.rows, Env: refEnv, Argv: argv, Dir: dir})

	settle := func(i int, after string) {
		t.Helper()
		want := res.obs[i]
		lines, st, ok := pane.Until(10*time.Second, func(l []string, st tmuxtest.State) bool {
			if !slices.Equal(l, want.lines) {
				return false
			}
			if want.exited {
				return st.Dead
			}
			return int64(st.CursorCol) == want.col && int64(st.CursorRow) == want.row &&
				st.CursorVisible == want.visible && st.Alternate == (want.mode == "alternate")
		})
		if !ok {
			t.Fatalf("after %s: our observation %d differs from tmux's pane\nours (cursor %d,%d visible %v, %s, exited %v):\n%s\ntmux (cursor %d,%d visible %v, alternate %v, dead %v):\n%s",
				after, i, want.col, want.row, want.visible, want.mode, want.exited, numbered(want.lines),
				st.CursorCol, st.CursorRow, st.CursorVisible, st.Alternate, st.Dead, numbered(lines))
		}
		if want.exited && !st.Ended {
			// tmux 3.3a marks the pane dead before it has the status, and
			// now and then never shows it: compare it when it comes.
			if _, st, ok = pane.Until(2*time.Second, func(_ []string, st tmuxtest.State) bool { return st.Ended }); !ok {
				t.Logf("after %s: tmux did not report the exit status; ours is %s", after, want.exit)
				return
			}
		}
		if want.exited && (st.Signal != 0 || want.exit != fmt.Sprintf(`{"kind":"code","value":%d}`, st.Status)) {
			t.Fatalf("after %s: our exit %s, tmux's status %d signal %d", after, want.exit, st.Status, st.Signal)
		}
	}
	settle(0, "readiness")
	for i, in := range r.inputs {
		if res.obs[i].exited {
			break
		}
		var after string
		switch v := in.(type) {
		case input.Text:
			after = fmt.Sprintf("input %d text %q", i+1, v.Text)
			pane.Type(v.Text)
		case input.Key:
			after = fmt.Sprintf("input %d key %q", i+1, v.Keys)
			pane.SendKeys(tmuxKey(t, v.Keys))
		case input.Resize:
			after = fmt.Sprintf("input %d resize %dx%d", i+1, v.Columns, v.Rows)
			pane.Resize(int(v.Columns), int(v.Rows))
		default:
			t.Fatalf("input %d: %T is not sent to tmux by this test", i+1, in)
		}
		if i+1 >= len(res.obs) {
			t.Fatalf("after %s: no observation of ours to compare (%d observations)", after, len(res.obs))
		}
		settle(i+1, after)
	}
}

func numbered(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%2d|%s\n", i, l)
	}
	return b.String()
}

// checkExitedAfter: one observation at readiness and one per input
// sent; the last one is the exited program with exit code 0, and the run
// finished with it.
func checkExitedAfter(t *testing.T, res ptyResult, inputs int) {
	t.Helper()
	if res.res.Outcome != transcript.KindRunFinished || !res.res.Succeeded() {
		t.Fatalf("outcome %s exit %+v, want run.finished with exit code 0\n%s", res.res.Outcome, res.res.Exit, res.data)
	}
	if len(res.obs) != inputs+1 {
		t.Fatalf("%d observations, want readiness and one per input (%d)\n%s", len(res.obs), inputs+1, res.data)
	}
	for i, o := range res.obs {
		if last := i == len(res.obs)-1; o.exited != last {
			t.Fatalf("observation %d: exited %v, want %v", i, o.exited, last)
		}
	}
	if got := res.obs[len(res.obs)-1].exit; got != `{"kind":"code","value":0}` {
		t.Fatalf("exited observation's exit %s, want code 0", got)
	}
	if n := res.inputs(); n != inputs {
		t.Errorf("%d input records, want %d (the appended input.stop is never sent to a program that ended)", n, inputs)
	}
}

func text(s string) input.Input   { return input.Text{Text: s} }
func key(k ...string) input.Input { return input.Key{Keys: k} }

// TestPTYVim: vim edits a new file in the mapped root — insert, move,
// x, dd, text holding a line feed, :wq — with every frame equal to tmux's; the file is on the host
// afterwards with what was typed, and the run finished with vim's exit
// code 0.
func TestPTYVim(t *testing.T) {
	t.Parallel()
	r := ptyRun{cols: 50, rows: 10, argv: []string{"vim", "-u", "NONE", "-N", "-i", "NONE", "-n", "notes.txt"},
		inputs: []input.Input{
			text("iHello world"), key("Enter"), text("delete me"), key("Enter"), text("last line"),
			key("Escape"), text("gg"), text("x"), text("j"), text("dd"), text("$"),
			// Text is typed as it is, though vim enabled bracketed paste:
			// its LF is Control+j, which in Insert mode begins a new line.
			text("o"), text("typed one\n\ttyped two"), key("Escape"),
			text(":wq"), key("Enter"),
		}}
	res := runPTY(t, r)
	checkExitedAfter(t, res, len(r.inputs))
	got, err := os.ReadFile(filepath.Join(res.root, "notes.txt"))
	if err != nil {
		t.Fatalf("vim's file in the mapped root: %v", err)
	}
	if want := "ello world\nlast line\ntyped one\n\ttyped two\n"; string(got) != want {
		t.Fatalf("notes.txt holds %q, want %q", got, want)
	}
	compareWithTmux(t, r, res)
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pty", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lessWords is a file for less, longer than its screen, with "needle" on
// line 77 alone.
func lessWords() string {
	var b strings.Builder
	for i := 1; i <= 120; i++ {
		w := "plain"
		if i == 77 {
			w = "needle"
		}
		fmt.Fprintf(&b, "line %03d %s %s\n", i, w, strings.Repeat("x", i%30))
	}
	return b.String()
}

// TestPTYLess: less on a file longer than the screen pages with Space,
// searches with /word Enter and quits with q; every frame equals tmux's
// and the run exits 0.
func TestPTYLess(t *testing.T) {
	t.Parallel()
	r := ptyRun{cols: 50, rows: 12, argv: []string{"less", "words.txt"}, files: map[string]string{"words.txt": lessWords()},
		inputs: []input.Input{text(" "), text("/needle"), key("Enter"), text("q")}}
	res := runPTY(t, r)
	checkExitedAfter(t, res, len(r.inputs))
	if !slices.Contains(res.obs[1].lines, "line 012 plain xxxxxxxxxxxx") || !strings.HasPrefix(res.obs[3].lines[0], "line 077 needle") {
		t.Fatalf("paging or search did not show the lines expected:\n%s\n%s", numbered(res.obs[1].lines), numbered(res.obs[3].lines))
	}
	compareWithTmux(t, r, res)
}

// TestPTYBash: an interactive bash without start files runs commands
// with output, a cat reading the terminal until Control+d, a command
// ended by a line feed, and exit; every frame equals tmux's and the run
// exits 0.
func TestPTYBash(t *testing.T) {
	t.Parallel()
	r := ptyRun{cols: 50, rows: 16, argv: []string{"bash", "--norc", "--noprofile"},
		inputs: []input.Input{
			text("echo hello world"), key("Enter"),
			text(`printf '%s-%s\n' a b c d`), key("Enter"),
			// Wide and combining characters, and a line longer than the
			// terminal, which wraps.
			text("echo 'héllo 日本 ✓ e\u0301 x'; printf " + `'a\tb\tc\n'`), key("Enter"),
			text("cat"), key("Enter"), text("typed line"), key("Enter"), key("Control", "d"),
			// Text is typed as it is, though bash enabled bracketed
			// paste: its LF is Control+j, which readline binds to
			// accept-line, so the command runs; the Enter after it
			// gives an empty prompt.
			text("echo lf-$((6*7))\n"), key("Enter"),
			text("exit"), key("Enter"),
		}}
	res := runPTY(t, r)
	checkExitedAfter(t, res, len(r.inputs))
	screen := strings.Join(res.obs[len(res.obs)-2].lines, "\n")
	for _, want := range []string{"hello world", "a-b\nc-d", "typed line\ntyped line", "lf-42", "a       b       c", "héllo 日本 ✓ e\u0301 x"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen before exit lacks %q:\n%s", want, screen)
		}
	}
	compareWithTmux(t, r, res)
}

// TestPTYCurses: a Python curses program (testdata/pty/boxes.py) draws
// boxes with line drawing in colours, hides the cursor and reads arrow
// keys in keypad mode, and redraws at a resize (larger, smaller, and
// the same size, which closes its epoch at once); every frame equals
// tmux's (which encodes the keys itself, in the program's cursor-key
// mode, and resizes its window) and q ends it with exit 0.
func TestPTYCurses(t *testing.T) {
	t.Parallel()
	r := cursesRun(t)
	res := runPTY(t, r)
	checkExitedAfter(t, res, len(r.inputs))
	last := res.obs[len(res.obs)-2]
	if !strings.Contains(strings.Join(last.lines, "\n"), "last key: KEY_LEFT") || len(last.lines) != 10 || !strings.HasPrefix(last.lines[2], "┌") || last.visible {
		t.Fatalf("the curses screen is not as drawn (keypad keys decoded, ┌ at row 2, cursor hidden):\n%s", numbered(last.lines))
	}
	compareWithTmux(t, r, res)
}

func cursesRun(t *testing.T) ptyRun {
	t.Helper()
	needProgram(t, "/usr/bin/python3")
	if out, err := exec.Command("/usr/bin/python3", "-c", "import curses").CombinedOutput(); err != nil {
		t.Skipf("python3 has no curses module: %v\n%s", err, out)
	}
	return ptyRun{cols: 50, rows: 12, argv: []string{"/usr/bin/python3", "boxes.py"},
		files: map[string]string{"boxes.py": testdata(t, "boxes.py")},
		inputs: []input.Input{
			key("ArrowDown"), key("ArrowDown"), key("ArrowRight"), key("ArrowRight"), key("ArrowRight"),
			input.Resize{Columns: 60, Rows: 14}, key("ArrowUp"),
			input.Resize{Columns: 44, Rows: 10}, key("ArrowLeft"),
			input.Resize{Columns: 44, Rows: 10}, text("q"),
		}}
}

// TestPTYPrintAndExit: a program that prints more than a screenful and
// exits without ever reading input: its readiness observation is the
// exited one, the run finishes with its exit, and the frame equals the
// screen tmux's pane is left with. Its output includes its environment
// (but HOME and PWD), which is therefore the one the tmux comparisons
// give their reference.
func TestPTYPrintAndExit(t *testing.T) {
	t.Parallel()
	r := ptyRun{cols: 50, rows: 16, argv: []string{"/usr/bin/python3", "screenful.py"},
		files: map[string]string{"screenful.py": testdata(t, "screenful.py")}}
	res := runPTY(t, r)
	checkExitedAfter(t, res, 0)
	if l := res.obs[0].lines; l[len(l)-4] != "│ done     │" || l[len(l)-3] != "┌────┐ DEC graphics" {
		t.Fatalf("the last screen is not the program's end:\n%s", numbered(l))
	}
	compareWithTmux(t, r, res)
}

// TestPTYTop: top -b -n 1 prints once and exits. Its numbers change from
// run to run, so only its shape is checked: the summary line, the task
// header, and top itself among the tasks (the sandbox's own PID
// namespace).
func TestPTYTop(t *testing.T) {
	t.Parallel()
	res := runPTY(t, ptyRun{cols: 80, rows: 24, argv: []string{"top", "-b", "-n", "1"}})
	checkExitedAfter(t, res, 0)
	lines := res.obs[0].lines
	screen := strings.Join(lines, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "top - ") }) ||
		!strings.Contains(screen, "PID") || !strings.Contains(screen, "COMMAND") || !strings.Contains(screen, " top") {
		t.Fatalf("top -b's screen lacks its summary, header or itself:\n%s", numbered(lines))
	}
}

// TestPTYTranscriptDeterministic: the same program with the same inputs
// gives a byte-identical transcript.
func TestPTYTranscriptDeterministic(t *testing.T) {
	t.Parallel()
	r := cursesRun(t)
	a, b := runPTY(t, r), runPTY(t, r)
	if !bytes.Equal(a.data, b.data) {
		t.Fatalf("two runs of the same program and inputs differ:\n%s\n---\n%s", a.data, b.data)
	}
}

// TestPTYStop: input.stop hangs up the terminal's session. cat dies of
// the SIGHUP, as on a host, and the run finishes with that signal; a
// program that ignores it is killed after the grace period, said in a
// diagnostic, and the run records the SIGKILL.
func TestPTYStop(t *testing.T) {
	t.Parallel()
	t.Run("hangup", func(t *testing.T) {
		res := runPTY(t, ptyRun{cols: 40, rows: 6, argv: []string{"cat"}, inputs: []input.Input{text("abc")}})
		last := res.obs[len(res.obs)-1]
		if res.res.Outcome != transcript.KindRunFinished || last.afterKind != transcript.KindInputStop ||
			last.exit != `{"kind":"signal","value":"HUP"}` || last.lines[0] != "abc" {
			t.Fatalf("outcome %s, last observation after %s exit %s:\n%s", res.res.Outcome, last.afterKind, last.exit, numbered(last.lines))
		}
	})
	t.Run("ignored", func(t *testing.T) {
		// The grace period is half the epoch deadline: 1 s here.
		res := runPTY(t, ptyRun{cols: 40, rows: 6, epoch: 2 * time.Second,
			argv: []string{"sh", "-c", "trap '' HUP; echo ignoring; read x"}})
		last := res.obs[len(res.obs)-1]
		if res.res.Outcome != transcript.KindRunFinished || last.exit != `{"kind":"signal","value":"KILL"}` || res.count(transcript.KindDiagnostic) != 1 {
			t.Fatalf("outcome %s, exit %s, kinds %v", res.res.Outcome, last.exit, res.kinds)
		}
		if !strings.Contains(string(res.data), DiagStopGraceKilled) {
			t.Fatalf("no %s diagnostic:\n%s", DiagStopGraceKilled, res.data)
		}
	})
}

// TestPTYMouseClick: a click — input.mouse press, then release of the
// same button — in vim with the mouse on (:set mouse=a: SGR reports,
// ?1006 with ?1002) moves vim's cursor to the cell clicked, and the run
// goes on to :q! and exit 0. (The press's button is remembered as held
// for a later move; a release or press must not carry it: ptyinput
// refuses a held button on anything but a move, and the run would fail
// with input-unencodable at the release.)
func TestPTYMouseClick(t *testing.T) {
	t.Parallel()
	r := ptyRun{cols: 40, rows: 6, argv: []string{"vim", "-u", "NONE", "-N", "-i", "NONE", "-n", "m.txt"},
		inputs: []input.Input{
			text("ione two three"), key("Enter"), text("four five"), key("Escape"),
			text(":set mouse=a"), key("Enter"),
			input.Mouse{Action: input.MousePress, Button: "left", Column: 5, Row: 0},
			input.Mouse{Action: input.MouseRelease, Button: "left", Column: 5, Row: 0},
			input.Mouse{Action: input.MousePress, Button: "left", Column: 2, Row: 1},
			input.Mouse{Action: input.MouseMove, Column: 6, Row: 1},
			input.Mouse{Action: input.MouseRelease, Button: "left", Column: 6, Row: 1},
			text("x"), text(":wq"), key("Enter"),
		}}
	res := runPTY(t, r)
	if res.res.Outcome != transcript.KindRunFinished {
		t.Fatalf("outcome %s: %s", res.res.Outcome, jsonText(res.terminal()))
	}
	checkExitedAfter(t, res, len(r.inputs))
	if o := res.obs[8]; o.col != 5 || o.row != 0 {
		t.Errorf("after the click at 5,0 vim's cursor is at %d,%d", o.col, o.row)
	}
	// The drag from 2,1 to 6,1 selected "ur fi" (visual mode), x deleted it.
	got, err := os.ReadFile(filepath.Join(res.root, "m.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "one two three\nfove\n"; string(got) != want {
		t.Errorf("m.txt holds %q, want %q", got, want)
	}
}

// TestPTYTypedLines: text with line feeds, typed into sh (dash): in
// canonical mode the line discipline ends a line at LF as at CR, so every
// line runs; the exit status it ends with is the run's. Frames equal
// tmux's.
func TestPTYTypedLines(t *testing.T) {
	t.Parallel()
	r := ptyRun{cols: 40, rows: 8, argv: []string{"sh"},
		inputs: []input.Input{text("echo one\necho two\n"), text("exit 3\n")}}
	res := runPTY(t, r)
	if res.res.Outcome != transcript.KindRunFinished || res.res.Exit == nil || res.res.Exit.Code != 3 {
		t.Fatalf("outcome %s exit %+v, want run.finished with code 3", res.res.Outcome, res.res.Exit)
	}
	// Both lines are echoed as typed, before sh reads the first: then
	// "one", and "two" after the second prompt.
	if l := res.obs[1].lines; !slices.Contains(l, "one") || !slices.Contains(l, "$ two") {
		t.Fatalf("the typed lines did not both run:\n%s", numbered(res.obs[1].lines))
	}
	compareWithTmux(t, r, res)
}

// TestPTYTypedEnter: a command typed with its Enter in one text (a CR
// inside input.text) runs, as the same keystrokes do in tmux (send-keys
// -l), though bash, vim and less enable bracketed paste: input.text is
// typed byte for byte, never pasted. Every frame equals tmux's.
func TestPTYTypedEnter(t *testing.T) {
	t.Parallel()
	t.Run("bash", func(t *testing.T) {
		t.Parallel()
		r := ptyRun{cols: 50, rows: 12, argv: []string{"bash", "--norc", "--noprofile"},
			inputs: []input.Input{text("echo one; seq 3 5\r"), text("exit\r")}}
		res := runPTY(t, r)
		checkExitedAfter(t, res, len(r.inputs))
		if screen := strings.Join(res.obs[1].lines, "\n"); !strings.Contains(screen, "one\n3\n4\n5\n") {
			t.Errorf("the command did not run:\n%s", numbered(res.obs[1].lines))
		}
		compareWithTmux(t, r, res)
	})
	t.Run("vim", func(t *testing.T) {
		t.Parallel()
		r := ptyRun{cols: 50, rows: 10, argv: []string{"vim", "-u", "NONE", "-N", "-i", "NONE", "-n", "typed.txt"},
			inputs: []input.Input{
				text(":set number\r"), text("ifirst line\rsecond"), key("Escape"), text(":wq\r"),
			}}
		res := runPTY(t, r)
		checkExitedAfter(t, res, len(r.inputs))
		if l := res.obs[3].lines; l[0] != "  1 first line" || l[1] != "  2 second" {
			t.Errorf(":set number or the typed Enter did not take effect:\n%s", numbered(l))
		}
		got, err := os.ReadFile(filepath.Join(res.root, "typed.txt"))
		if err != nil {
			t.Fatalf("vim's file in the mapped root (:wq typed with its Enter): %v", err)
		}
		if want := "first line\nsecond\n"; string(got) != want {
			t.Errorf("typed.txt holds %q, want %q", got, want)
		}
		compareWithTmux(t, r, res)
	})
	t.Run("less", func(t *testing.T) {
		t.Parallel()
		r := ptyRun{cols: 50, rows: 12, argv: []string{"less", "words.txt"}, files: map[string]string{"words.txt": lessWords()},
			inputs: []input.Input{text("/needle\r"), text("q")}}
		res := runPTY(t, r)
		checkExitedAfter(t, res, len(r.inputs))
		if !strings.HasPrefix(res.obs[1].lines[0], "line 077 needle") {
			t.Errorf("the search typed with its Enter did not run:\n%s", numbered(res.obs[1].lines))
		}
		compareWithTmux(t, r, res)
	})
}
