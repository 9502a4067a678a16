package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSweep(t *testing.T) {
	state := t.TempDir()
	// A live owner (us) and a dead one (a finished child).
	live := filepath.Join(state, "tvs-live")
	if err := os.Mkdir(live, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeOwner(live); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("/bin/true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(state, "tvs-dead")
	if err := os.MkdirAll(filepath.Join(dead, "root", "etc"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, ownerFile), fmt.Appendf(nil, "%d 1\n", child.Process.Pid), 0o644); err != nil {
		t.Fatal(err)
	}
	// Ownerless: one a Start is still writing (fresh) stays; one a
	// supervisor killed between mkdir and the record (old) goes.
	starting := filepath.Join(state, "tvs-starting")
	abandoned := filepath.Join(state, "tvs-abandoned")
	for _, d := range []string{starting, abandoned} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * ownerGrace)
	if err := os.Chtimes(abandoned, old, old); err != nil {
		t.Fatal(err)
	}
	// Not ours: left alone whatever it holds.
	other := filepath.Join(state, "unrelated")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	rep, err := Sweep(state)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Removed, []string{"tvs-abandoned", "tvs-dead"}) || !slices.Equal(rep.Skipped, []string{"tvs-live", "tvs-starting"}) {
		t.Errorf("report %+v", rep)
	}
	for _, p := range []string{live, starting, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	for _, p := range []string{dead, abandoned} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if rep, err := Sweep(filepath.Join(state, "missing")); err != nil || len(rep.Removed) != 0 {
		t.Errorf("missing state dir: %+v %v", rep, err)
	}
}

// TestSweepZombieOwner: a supervisor that was killed but not yet reaped
// (a zombie whose parent has not waited) is dead: its entry is swept at
// once, not left for a later sweep.
func TestSweepZombieOwner(t *testing.T) {
	state := t.TempDir()
	child := exec.Command("/bin/true")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	t.Cleanup(func() { _ = child.Wait() })
	// Until Wait, the ended child is a zombie with its start time.
	var start uint64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		state, st, err := procStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if state == "Z" {
			start = st
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d never became a zombie (state %s)", pid, state)
		}
	}
	entry := filepath.Join(state, "tvs-zombie")
	if err := os.Mkdir(entry, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, ownerFile), fmt.Appendf(nil, "%d %d\n", pid, start), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Sweep(state)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Removed, []string{"tvs-zombie"}) {
		t.Errorf("report %+v, want the zombie's entry removed", rep)
	}
}

// TestKillAndWait: the process is dead (a zombie of ours) when killAndWait
// returns, and a stale start time spares the process the pid now names;
// the same without a pidfd (an old kernel, or pidfd_open denied).
func TestKillAndWait(t *testing.T) {
	cases := []struct {
		name       string
		staleStart bool  // pass a start time that is not the process's
		pidfdErr   error // pidfd_open fails with this
		wantDead   bool
	}{
		{"current process is killed and waited for", false, nil, true},
		{"stale start time spares it", true, nil, false},
		{"no pidfd (ENOSYS): killed and waited for", false, unix.ENOSYS, true},
		{"pidfd_open denied (EPERM): killed and waited for", false, unix.EPERM, true},
		{"no pidfd: stale start time spares it", true, unix.ENOSYS, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pidfdOpen := unix.PidfdOpen
			if tc.pidfdErr != nil {
				pidfdOpen = func(int, int) (int, error) { return -1, tc.pidfdErr }
			}
			cmd := exec.Command("/bin/sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			pid := cmd.Process.Pid
			start, err := procStartTime(pid)
			if err != nil {
				t.Fatal(err)
			}
			if tc.staleStart {
				start++
			}
			killAndWaitWith(pidfdOpen, pid, start, 5*time.Second)
			// Without a wait of ours, a dead child is a zombie: state Z.
			state, _, err := procStat(pid)
			if err != nil {
				t.Fatal(err)
			}
			if dead := state == "Z"; dead != tc.wantDead {
				t.Errorf("state %s after killAndWait, want dead=%v", state, tc.wantDead)
			}
		})
	}
}
