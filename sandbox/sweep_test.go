package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
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
