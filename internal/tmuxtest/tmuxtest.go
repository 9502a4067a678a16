// Package tmuxtest runs a program in a pane of a private tmux server: the
// reference terminal the PTY tests compare their screens with. The server
// has its own socket in a temporary directory (never the default server),
// no status line, default-terminal xterm-256color (what the vt emulator
// implements), escape-time 0 and remain-on-exit with an empty message, so
// that a program that exits leaves its last screen as it drew it. Only the
// server a test started is ever killed, when the test ends.
package tmuxtest

import (
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// conf is the server's whole configuration (-f: no user or system file).
const conf = `set -g status off
set -g default-terminal xterm-256color
set -g escape-time 0
set -g remain-on-exit on
set -g remain-on-exit-format ""
`

// Options say what runs in the pane and where.
type Options struct {
	Cols, Rows int
	// Env is the program's whole environment: it runs as env -i Env...
	// Argv, so nothing of the test's or the tmux server's leaks in.
	Env  []string
	Argv []string
	// Dir is the program's working directory; empty is the test's.
	Dir string
}

// Pane is one program in a detached pane of a private server.
type Pane struct {
	t    testing.TB
	sock string
	rows int
}

// Start starts the program of o in a new private server. It skips the
// test, saying why, when tmux is not installed.
func Start(t testing.TB, o Options) *Pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skipf("tmux (the reference terminal) not installed: %v", err)
	}
	dir := t.TempDir()
	cf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Pane{t: t, sock: filepath.Join(dir, "sock"), rows: o.Rows}
	// The same environment as ours, exactly: env -i.
	cmd := append(append([]string{"env", "-i"}, o.Env...), o.Argv...)
	args := []string{"-S", p.sock, "-f", cf, "new-session", "-d", "-x", strconv.Itoa(o.Cols), "-y", strconv.Itoa(o.Rows)}
	if o.Dir != "" {
		args = append(args, "-c", o.Dir)
	}
	args = append(append(args, "--"), cmd...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func (p *Pane) tmux(args ...string) []byte {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", args[0], err, out)
	}
	return out
}

// Send writes bytes to the pane as keys (send-keys -H: each byte as is).
func (p *Pane) Send(b []byte) {
	p.t.Helper()
	if len(b) == 0 {
		return
	}
	args := []string{"send-keys", "-t", "0", "-H"}
	for _, c := range b {
		args = append(args, hex.EncodeToString([]byte{c}))
	}
	p.tmux(args...)
}

// SendKeys sends tmux key names ("Enter", "Up", "C-d", "Space"): tmux
// encodes them in the modes the program has set, as a terminal does.
func (p *Pane) SendKeys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

// Type sends text literally (send-keys -l), each character as typed.
func (p *Pane) Type(text string) {
	p.t.Helper()
	if text == "" {
		return
	}
	p.tmux("send-keys", "-t", "0", "-l", "--", text)
}

// Resize makes the pane cols×rows (resize-window: the session is
// detached, so its window takes the size it is given).
func (p *Pane) Resize(cols, rows int) {
	p.t.Helper()
	p.tmux("resize-window", "-t", "0", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows))
	p.rows = rows
}

// Lines is the pane's screen as text, trailing spaces dropped, exactly as
// many lines as the pane has rows. It reads capture-pane -p -e, where
// tmux marks the cells drawn in the DEC line-drawing set with SO/SI, so
// that those read as drawn (┌──┐, not lqqk); the attributes (SGR) are
// dropped.
func (p *Pane) Lines() []string {
	p.t.Helper()
	out := p.tmux("capture-pane", "-p", "-e", "-t", "0")
	ls := strings.Split(strings.TrimSuffix(captureText(string(out)), "\n"), "\n")
	for len(ls) < p.rows {
		ls = append(ls, "")
	}
	for i := range ls {
		ls[i] = strings.TrimRight(ls[i], " ")
	}
	return ls[:p.rows]
}

// lineDrawing is what tmux draws for the DEC line-drawing cells (its
// tty-acs table, where it agrees with the VT100's set); the cells where
// the two disagree (b–e, h, i, _) are left as their letters.
var lineDrawing = map[byte]rune{
	'`': '◆', 'a': '▒', 'f': '°', 'g': '±', 'j': '┘', 'k': '┐', 'l': '┌', 'm': '└',
	'n': '┼', 'o': '⎺', 'p': '⎻', 'q': '─', 'r': '⎼', 's': '⎽', 't': '├', 'u': '┤',
	'v': '┴', 'w': '┬', 'x': '│', 'y': '≤', 'z': '≥', '{': 'π', '|': '≠', '}': '£', '~': '·',
}

// captureText turns capture-pane -e output into text: escape sequences
// (SGR) dropped, the cells between SO and SI mapped through lineDrawing.
// The shift state runs on across lines, as tmux writes it.
func captureText(s string) string {
	var b strings.Builder
	shifted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x0e:
			shifted = true
		case c == 0x0f:
			shifted = false
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			// CSI: parameters and intermediates, then a final byte.
			for i += 2; i < len(s) && (s[i] < 0x40 || s[i] > 0x7e); i++ {
			}
		case c == 0x1b:
			i++ // a two-byte escape
		case shifted && lineDrawing[c] != 0:
			b.WriteRune(lineDrawing[c])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// State is what tmux knows of the pane besides its text.
type State struct {
	CursorCol, CursorRow int
	CursorVisible        bool // DECTCEM
	Alternate            bool // the alternate screen is shown
	Dead                 bool // the program has exited
	// Status is its exit status, or Signal the signal that ended it,
	// once tmux has collected it: tmux marks a pane dead before it
	// fills these in, so Ended says whether one of them is known.
	Status, Signal int
	Ended          bool
}

// State reads the pane's cursor, screen and liveness.
func (p *Pane) State() State {
	p.t.Helper()
	out := p.tmux("display-message", "-p", "-t", "0", "#{cursor_x};#{cursor_y};#{cursor_flag};#{alternate_on};#{pane_dead};#{pane_dead_status};#{pane_dead_signal}")
	f := strings.Split(strings.TrimSpace(string(out)), ";")
	for len(f) < 7 {
		f = append(f, "")
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return State{CursorCol: n(f[0]), CursorRow: n(f[1]), CursorVisible: f[2] == "1",
		Alternate: f[3] == "1", Dead: f[4] == "1", Status: n(f[5]), Signal: n(f[6]),
		Ended: f[4] == "1" && (f[5] != "" || f[6] != "")}
}

// Until polls the pane until ok accepts its screen and state, or timeout
// passes; it returns the last ones read and whether ok accepted them. A
// terminal has no "done" signal: the reference is settled when it shows
// what is expected, and a comparison that never holds fails with both.
func (p *Pane) Until(timeout time.Duration, ok func([]string, State) bool) ([]string, State, bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		lines, st := p.Lines(), p.State()
		if ok(lines, st) {
			return lines, st, true
		}
		if time.Now().After(deadline) {
			return lines, st, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
