package ptydrive

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/internal/tmuxtest"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

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
			ref := tmuxtest.Start(t, tmuxtest.Options{Cols: c.cols, Rows: c.rows, Env: env, Argv: c.argv})
			compare := func(after string) {
				t.Helper()
				p.settle(false)
				ours := p.d.Screen().Lines
				theirs, _, ok := ref.Until(10*time.Second, func(l []string, _ tmuxtest.State) bool { return slices.Equal(l, ours) })
				if ok {
					return
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
					b = ptyinput.EncodeText(s.text)
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
				ref.Send(b)
				compare(strings.Join(append(s.key, s.text), " "))
			}
			if screen := strings.Join(p.d.Screen().Lines, "\n"); !strings.Contains(screen, c.want) {
				t.Fatalf("final screen lacks %q:\n%s", c.want, screen)
			}
		})
	}
}
