package vt

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tmuxServer is a tmux server on a private socket, the reference the
// emulator is compared against. Each replay runs in its own session.
type tmuxServer struct {
	dir  string
	sock string
	mu   sync.Mutex
	n    int
}

// startTmux starts nothing yet (tmux starts its server with the first
// session) but decides where; the test is skipped, with the reason, when
// tmux is not installed.
func startTmux(t *testing.T) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skipf("tmux is the reference and is not installed: %v", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	// The status line off, so the pane is the whole window; history as
	// deep as the emulator's in these tests.
	if err := os.WriteFile(conf, []byte("set -g status off\nset -g history-limit 2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &tmuxServer{dir: dir, sock: filepath.Join(dir, "sock")}
	t.Cleanup(func() {
		// Only our own server, by its private socket.
		_ = exec.Command("tmux", "-S", s.sock, "kill-server").Run()
	})
	// One idle session keeps the server up: sessions created at the same
	// moment would otherwise race to start it.
	if _, err := s.cmd("new-session", "-d", "-s", "keep", "sleep 1000"); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *tmuxServer) cmd(args ...string) ([]byte, error) {
	c := exec.Command("tmux", append([]string{"-S", s.sock, "-f", filepath.Join(s.dir, "tmux.conf")}, args...)...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("tmux %s: %w: %s", strings.Join(args[:min(len(args), 8)], " "), err, stderr.String())
	}
	return out, nil
}

// batch runs tmux commands joined with ";", as many per tmux run as its
// message size limit allows, and returns their output in order.
func (s *tmuxServer) batch(cmds [][]string) ([]byte, error) {
	var out []byte
	var args []string
	size := 0
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		o, err := s.cmd(args...)
		out = append(out, o...)
		args, size = args[:0], 0
		return err
	}
	for _, c := range cmds {
		n := 0
		for _, a := range c {
			n += len(a) + 8
		}
		if size+n > 8000 {
			if err := flush(); err != nil {
				return out, err
			}
		}
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, c...)
		size += n
	}
	return out, flush()
}

// replayJob is one replay for replayAll: the stages are fed to a fresh
// pane of cols × rows.
type replayJob struct {
	cols, rows int
	stages     []stage
}

// stage is a piece of a replay: bytes for the pane, then a resize.
type stage struct {
	data       []byte
	cols, rows int // 0: no resize after the data
}

// tmuxResult is what tmux shows after a replay.
type tmuxResult struct {
	screen  []byte // capture-pane -p -e of the visible lines
	history []byte // the same for the history, oldest first
	hist    int
	cx, cy  int
	flags   map[string]string
	cols    int
	rows    int
}

// tmuxFlags are the pane variables compared with the emulator's state.
var tmuxFlags = []string{"cursor_x", "cursor_y", "history_size", "cursor_flag", "alternate_on", "insert_flag",
	"keypad_cursor_flag", "keypad_flag", "mouse_any_flag", "mouse_button_flag", "mouse_standard_flag",
	"mouse_sgr_flag", "wrap_flag", "origin_flag", "pane_width", "pane_height"}

// replayAll feeds each job to a pane of its own, all at once, and reads
// back what tmux shows. Each pane runs a shell script that puts its tty in
// raw mode (so that no LF becomes CR LF on the way) and cats each stage's
// file, then sets the pane title to a marker preceded by CAN (which ends
// any sequence the stage left open): tmux handles a pane's output in
// order, so once the title is the marker every byte before it has been
// drawn. Between stages the script waits for a file that the test creates
// after resizing the window. tmux commands are batched with ";" so that a
// hundred replays cost a handful of tmux client runs.
func (s *tmuxServer) replayAll(t *testing.T, jobs []replayJob) []tmuxResult {
	t.Helper()
	s.mu.Lock()
	base := s.n
	s.n += len(jobs)
	s.mu.Unlock()
	names := make([]string, len(jobs))
	var create [][]string
	for i, j := range jobs {
		names[i] = "r" + strconv.Itoa(base+i)
		dir := filepath.Join(s.dir, names[i])
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var script strings.Builder
		script.WriteString("stty raw -echo\n")
		for k, st := range j.stages {
			f := filepath.Join(dir, strconv.Itoa(k))
			if err := os.WriteFile(f, st.data, 0o644); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&script, "cat %s\nprintf '\\030\\033]2;tv-%d\\007'\n", f, k)
			if k < len(j.stages)-1 {
				fmt.Fprintf(&script, "while [ ! -e %s.go ]; do sleep 0.01; done\n", f)
			}
		}
		script.WriteString("exec sleep 1000\n")
		sh := filepath.Join(dir, "run.sh")
		if err := os.WriteFile(sh, []byte(script.String()), 0o755); err != nil {
			t.Fatal(err)
		}
		create = append(create, []string{"new-session", "-d", "-s", names[i], "-x", strconv.Itoa(j.cols), "-y", strconv.Itoa(j.rows), "sh " + sh})
	}
	if _, err := s.batch(create); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var kill [][]string
		for _, n := range names {
			kill = append(kill, []string{"kill-session", "-t", n})
		}
		_, _ = s.batch(kill)
	})

	// Walk every pane through its stages.
	stageOf := make([]int, len(jobs)) // stage whose marker is awaited
	size := make([][2]int, len(jobs))
	for i, j := range jobs {
		size[i] = [2]int{j.cols, j.rows}
	}
	deadline := time.Now().Add(60 * time.Second)
	start := time.Now()
	defer func() { t.Logf("tmux: %d replays in %v", len(jobs), time.Since(start)) }()
	for {
		out, err := s.cmd("list-panes", "-a", "-F", "#{session_name} #{pane_title}")
		if err != nil {
			t.Fatal(err)
		}
		title := map[string]string{}
		for _, l := range strings.Split(string(out), "\n") {
			if n, v, ok := strings.Cut(l, " "); ok {
				title[n] = v
			}
		}
		var cmds [][]string
		var touch []string
		waiting := 0
		for i, j := range jobs {
			k := stageOf[i]
			if k == len(j.stages) {
				continue
			}
			if title[names[i]] != "tv-"+strconv.Itoa(k) {
				waiting++
				continue
			}
			if st := j.stages[k]; st.cols > 0 {
				cmds = append(cmds, []string{"resize-window", "-t", names[i], "-x", strconv.Itoa(st.cols), "-y", strconv.Itoa(st.rows)})
				size[i] = [2]int{st.cols, st.rows}
			}
			stageOf[i]++
			if stageOf[i] < len(j.stages) {
				touch = append(touch, filepath.Join(s.dir, names[i], strconv.Itoa(k))+".go")
				waiting++
			}
		}
		if len(cmds) > 0 {
			if _, err := s.batch(cmds); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range touch {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tmux: %d panes never finished their stages", waiting)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Read every pane back in one tmux run: its flags, then the whole
	// history and screen, between separator lines.
	var f strings.Builder
	for _, k := range tmuxFlags {
		f.WriteString("#{" + k + "} ")
	}
	var read [][]string
	for _, n := range names {
		read = append(read, []string{"display-message", "-p", "-t", n, "@@tv " + f.String()},
			[]string{"capture-pane", "-p", "-e", "-S", "-", "-E", "-", "-t", n})
	}
	out, err := s.batch(read)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(out), "@@tv ")[1:]
	if len(parts) != len(jobs) {
		t.Fatalf("tmux read back %d panes, want %d", len(parts), len(jobs))
	}
	results := make([]tmuxResult, len(jobs))
	for i, part := range parts {
		head, body, _ := strings.Cut(part, "\n")
		vals := strings.Fields(head)
		if len(vals) != len(tmuxFlags) {
			t.Fatalf("tmux flags %q", head)
		}
		r := &results[i]
		r.flags = map[string]string{}
		for k, name := range tmuxFlags {
			r.flags[name] = vals[k]
		}
		r.cx, _ = strconv.Atoi(r.flags["cursor_x"])
		r.cy, _ = strconv.Atoi(r.flags["cursor_y"])
		r.hist, _ = strconv.Atoi(r.flags["history_size"])
		r.cols, r.rows = size[i][0], size[i][1]
		lines := strings.SplitAfter(body, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) != r.hist+r.rows {
			t.Fatalf("tmux pane %s: %d lines captured, want %d history + %d", names[i], len(lines), r.hist, r.rows)
		}
		r.history = []byte(strings.Join(lines[:r.hist], ""))
		r.screen = []byte(strings.Join(lines[r.hist:], ""))
	}
	return results
}

// parseCapture turns capture-pane -p -e output back into cells, through
// the emulator itself: it is plain text with SGR sequences, and SO/SI
// around cells drawn in the DEC graphics set, so G1 is designated as that
// set first and the lines are joined with CR LF. The SGR state runs on
// from one line to the next in tmux's output, as it does here.
func parseCapture(cols, rows int, capture []byte) *Terminal {
	p := New(Config{Cols: cols, Rows: rows})
	text := strings.TrimSuffix(string(capture), "\n")
	p.WriteString("\x1b)0")
	p.WriteString(strings.ReplaceAll(text, "\n", "\r\n"))
	return p
}

// compareTmux reports every line where vt's screen differs from tmux's,
// in text and in the style of every cell tmux printed. tmux drops
// trailing blanks even when they have a background colour, so those cells
// cannot be compared.
func compareTmux(vt *Terminal, r tmuxResult, scrollback bool) []string {
	var diffs []string
	ref := parseCapture(r.cols, r.rows, r.screen)
	got, want := vt.Lines(), ref.Lines()
	for i := range want {
		if got[i] != want[i] {
			diffs = append(diffs, fmt.Sprintf("line %d:\n  vt   %q\n  tmux %q", i, got[i], want[i]))
			continue
		}
		for x := 0; x < r.cols; x++ {
			if ref.Cell(i, x) == (Cell{Content: " ", Width: 1}) && strings.TrimRight(lineFrom(ref, i, x), " ") == "" {
				break
			}
			if g, w := vt.Cell(i, x).Style, ref.Cell(i, x).Style; g != w {
				diffs = append(diffs, fmt.Sprintf("line %d col %d %q: vt style %+v, tmux %+v", i, x, want[i], g, w))
				break
			}
		}
	}
	if vt.x != r.cx || vt.y != r.cy {
		diffs = append(diffs, fmt.Sprintf("cursor: vt (x %d, y %d), tmux (x %d, y %d)", vt.x, vt.y, r.cx, r.cy))
	}
	if !scrollback {
		// not compared
	} else if vt.ScrollbackLen() != r.hist {
		diffs = append(diffs, fmt.Sprintf("scrollback: vt %d lines, tmux %d", vt.ScrollbackLen(), r.hist))
	} else if r.hist > 0 {
		href := parseCapture(r.cols, r.hist, r.history)
		sb := vt.Scrollback()
		for i, w := range href.Lines() {
			if sb[i] != w {
				diffs = append(diffs, fmt.Sprintf("scrollback line %d:\n  vt   %q\n  tmux %q", i, sb[i], w))
			}
		}
	}
	m := vt.Modes()
	flag := func(name string, v bool) {
		want := r.flags[name] == "1"
		if v != want {
			diffs = append(diffs, fmt.Sprintf("%s: vt %v, tmux %v", name, v, want))
		}
	}
	flag("cursor_flag", m.CursorVisible)
	flag("alternate_on", m.AltScreen)
	flag("insert_flag", m.Insert)
	flag("keypad_cursor_flag", m.AppCursor)
	flag("keypad_flag", m.AppKeypad)
	flag("mouse_any_flag", m.Mouse == MouseAny)
	flag("mouse_button_flag", m.Mouse == MouseButton)
	flag("mouse_standard_flag", m.Mouse == MouseNormal)
	flag("mouse_sgr_flag", m.MouseSGR)
	flag("wrap_flag", m.Autowrap)
	flag("origin_flag", m.Origin)
	return diffs
}

// lineFrom is line i of t from column x on, as text.
func lineFrom(t *Terminal, i, x int) string {
	var b strings.Builder
	for ; x < t.cols; x++ {
		b.WriteString(t.Cell(i, x).Content)
	}
	return b.String()
}
