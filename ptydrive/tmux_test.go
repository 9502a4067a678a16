package ptydrive

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

// tmuxPane is one program in a detached pane of a private tmux server
// (its own socket, never the default server), status line off, TERM as
// ours: the reference terminal.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func startTmux(t *testing.T, cols, rows int, env []string, argv ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skipf("tmux (the reference terminal) not installed: %v", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g status off\nset -g default-terminal xterm-256color\nset -g escape-time 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &tmuxPane{t: t, sock: filepath.Join(dir, "sock")}
	// The same environment as ours, exactly: env -i.
	cmd := append(append([]string{"env", "-i"}, env...), argv...)
	args := []string{"-S", p.sock, "-f", conf, "new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), "--"}
	if out, err := exec.Command("tmux", append(args, cmd...)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

// send writes bytes to the pane as keys (send-keys -H: each byte as is).
func (p *tmuxPane) send(b []byte) {
	p.t.Helper()
	if len(b) == 0 {
		return
	}
	args := []string{"-S", p.sock, "send-keys", "-t", "0", "-H"}
	for _, c := range b {
		args = append(args, hex.EncodeToString([]byte{c}))
	}
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		p.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// lines is the pane's screen, trailing spaces dropped, exactly rows
// lines.
func (p *tmuxPane) lines(rows int) []string {
	p.t.Helper()
	out, err := exec.Command("tmux", "-S", p.sock, "capture-pane", "-p", "-t", "0").Output()
	if err != nil {
		p.t.Fatalf("tmux capture-pane: %v", err)
	}
	ls := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for len(ls) < rows {
		ls = append(ls, "")
	}
	for i := range ls {
		ls[i] = strings.TrimRight(ls[i], " ")
	}
	return ls[:rows]
}

// TestFramesEqualTmux drives real programs with the same bytes in our
// driver and in tmux and compares the screens after every epoch: ours
// is taken when quiesce says the program waits; tmux's is polled until
// it equals ours, or the comparison fails with both screens.
func TestFramesEqualTmux(t *testing.T) {
	type step struct {
		text string
		key  []string
	}
	cases := []struct {
		name       string
		cols, rows int
		argv       []string
		steps      []step
		want       string // on the final screen (so that two empty screens cannot pass)
	}{
		{"bash", 50, 8, []string{"bash", "--norc", "--noprofile", "-i"}, []step{
			{text: "echo hello; printf '%s\\n' a b c"}, {key: []string{"Enter"}},
			{key: []string{"Control", "l"}},
			{text: "for i in 1 2 3 4 5 6 7 8; do echo line $i; done"}, {key: []string{"Enter"}},
		}, "line 8"},
		{"less", 40, 10, []string{"sh", "-c", "seq 1 300 | less"}, []step{
			{text: " "}, {text: "/150"}, {key: []string{"Enter"}}, {key: []string{"ArrowUp"}}, {text: "G"},
		}, "300"},
		{"vim", 50, 10, []string{"vim", "-n", "-u", "NONE", "-N", "-i", "NONE", "--noplugin"}, []step{
			{text: "ifirst line"}, {key: []string{"Enter"}}, {text: "second"}, {key: []string{"Escape"}},
			{key: []string{"ArrowUp"}}, {text: "dd"}, {text: ":set number"}, {key: []string{"Enter"}},
		}, "  1 second"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := ptytest.Env(t)
			p := start(t, c.cols, c.rows, c.argv...)
			ref := startTmux(t, c.cols, c.rows, env, c.argv...)
			compare := func(after string) {
				t.Helper()
				p.settle(false)
				ours := p.d.Screen().Lines
				deadline := time.Now().Add(10 * time.Second)
				var theirs []string
				for time.Now().Before(deadline) {
					theirs = ref.lines(c.rows)
					if strings.Join(theirs, "\n") == strings.Join(ours, "\n") {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				t.Fatalf("after %s the screens differ\nours:\n%s\ntmux:\n%s", after, strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
			}
			compare("start")
			for _, s := range c.steps {
				var b []byte
				var err error
				if s.key != nil {
					b, err = ptyinput.EncodeKey(s.key, p.d.Modes())
				} else {
					b = ptyinput.EncodeText(s.text, p.d.Modes())
				}
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), epochLimit)
				err = p.d.Write(ctx, b)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				ref.send(b)
				compare(strings.Join(append(s.key, s.text), " "))
			}
			if screen := strings.Join(p.d.Screen().Lines, "\n"); !strings.Contains(screen, c.want) {
				t.Fatalf("final screen lacks %q:\n%s", c.want, screen)
			}
		})
	}
}
