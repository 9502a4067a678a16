package term

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// TestSettledScreenHasWhatWasRead is the race of a settled wait: the
// reader has taken the program's last output off the master and not yet
// given it to the emulator when the Judge finds the program waiting and
// the master drained. A settled wait must not answer with the screen of
// before that output (an agent would read a stale screen as the answer).
// The hook holds the read between the two for long enough that a wait
// which trusts the Judge alone answers inside it every time.
func TestSettledScreenHasWhatWasRead(t *testing.T) {
	sandboxtest.RequireRoot(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	held := make(chan struct{}, 1)
	cfg := Config{
		Args:     []string{"sh", "-c", "read x; echo got-$x; read y"},
		Dir:      t.TempDir(),
		StateDir: state,
		Env:      []string{"PATH=/usr/bin:/bin"},
		hooks: hooks{afterRead: func(b []byte) {
			if bytes.Contains(b, []byte("got-")) {
				select {
				case held <- struct{}{}:
				default:
				}
				time.Sleep(time.Second)
			}
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Stop(context.Background())
		d.Close()
	})
	if _, err := d.Settle(ctx); err != nil {
		t.Fatalf("first settle: %v", err)
	}
	if err := d.Input(ctx, []byte("a\r")); err != nil {
		t.Fatal(err)
	}
	st, err := d.Settle(ctx)
	if err != nil {
		t.Fatalf("settle after input: %v", err)
	}
	select {
	case <-held:
	default:
		t.Fatal("the hook never held the output: the race was not produced")
	}
	if scr := d.settled(st).Screen; !strings.Contains(scr, "got-a") {
		t.Fatalf("settled before the screen had the program's output:\n%s", scr)
	}
}
