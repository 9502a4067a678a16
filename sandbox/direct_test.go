package sandbox

import (
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/receipts"
)

// TestDirect covers isolation none: same surface, exact exits, the
// whole tree killed, delivered tiers only.
func TestDirect(t *testing.T) {
	f := newFixture(t)
	spec := func(args ...string) Spec {
		s := f.spec(args...)
		s.Isolation = IsolationNone
		return s
	}
	t.Run("exit and workdir", func(t *testing.T) {
		ex, out, _, sb := runBox(t, spec("/bin/sh", "-c", "pwd; exit 4"), 20*time.Second)
		if ex.Code != 4 || out != f.root {
			t.Errorf("exit %+v out %q, want 4 and %q", ex, out, f.root)
		}
		if a := sb.Applied(); a.Filesystem.Tier != receipts.Delivered || a.Network.Tier != receipts.Delivered {
			t.Errorf("applied %+v", a)
		}
	})
	t.Run("signal", func(t *testing.T) {
		ex, _, _, _ := runBox(t, spec("/bin/sh", "-c", "kill -ABRT $$"), 20*time.Second)
		if ex.Signal != "ABRT" {
			t.Errorf("exit %+v", ex)
		}
	})
	t.Run("daemon dies with the subject", func(t *testing.T) {
		marker := "654.3219"
		ex, _, _, _ := runBox(t, spec("/bin/sh", "-c", "(setsid sleep "+marker+" </dev/null >/dev/null 2>&1 &); sleep 0.1"), 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Fatalf("exit %+v", ex)
		}
		if pids := waitGone(marker, time.Second); len(pids) > 0 {
			t.Errorf("daemon survived: %v", pids)
		}
	})
	t.Run("kill", func(t *testing.T) {
		marker := "543.2198"
		ex, _, _, _ := runBox(t, spec("/bin/sh", "-c", "(setsid sleep "+marker+" &); sleep "+marker), 300*time.Millisecond)
		if !ex.Killed {
			t.Errorf("exit %+v", ex)
		}
		if pids := waitGone(marker, time.Second); len(pids) > 0 {
			t.Errorf("survivors: %v", pids)
		}
	})
}
