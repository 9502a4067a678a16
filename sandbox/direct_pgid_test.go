package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// TestDirectKillSparesReusedGroups is the attack on Kill's last resort
// under isolation none: the reaper's and, under a terminal, the subject's
// process groups are killed by number. Once the subject has ended and the
// reaper is reaped, those numbers are free, and a host process that gets
// one (setsid) must not die when the sandbox is destroyed later, as term
// destroys a session only at its stop.
func TestDirectKillSparesReusedGroups(t *testing.T) {
	sandboxtest.RequireRoot(t)
	for _, which := range []string{"subject", "reaper"} {
		t.Run(which, func(t *testing.T) {
			f := directFixture(t)
			spec := f.spec("/bin/true")
			spec.Isolation = IsolationNone
			spec.Terminal = &TerminalSize{Rows: 24, Cols: 80}
			sb, err := Start(context.Background(), spec)
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			destroyed := false
			t.Cleanup(func() {
				if !destroyed {
					_ = sb.Destroy()
				}
			})
			if _, err := sb.Wait(); err != nil {
				t.Fatalf("wait: %v", err)
			}
			ev := sb.Evidence()
			group := ev.SubjectPID
			if which == "reaper" {
				group = ev.InitPID
			}
			victim := groupLeaderAt(t, group)
			if victim == nil {
				t.Skipf("could not start a process at pid %d (another process took it)", group)
			}
			done := make(chan error, 1)
			go func() { done <- victim.Wait() }()
			destroyed = true
			if err := sb.Destroy(); err != nil {
				t.Errorf("destroy: %v", err)
			}
			select {
			case err := <-done:
				t.Errorf("Destroy killed a host process that leads the reused group %d: %v", group, err)
			case <-time.After(300 * time.Millisecond):
				_ = victim.Process.Kill()
				<-done
			}
		})
	}
}

// groupLeaderAt starts `sleep 30` as the leader of a new session with
// pid (so process group) want, by setting the pid namespace's last pid
// just below it; nil when another process took the pid first.
func groupLeaderAt(t *testing.T, want int) *exec.Cmd {
	t.Helper()
	for try := 0; try < 20; try++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(want-1)), 0); err != nil {
			t.Skipf("ns_last_pid: %v", err)
		}
		c := exec.Command("sleep", "30")
		c.SysProcAttr = &unix.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if c.Process.Pid == want {
			return c
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	return nil
}
