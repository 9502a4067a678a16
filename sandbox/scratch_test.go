package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// otherUser is a local uid that is neither root, nor us, nor the subject.
const otherUser = 12345

// TestScratchRoot: the subject's scratch root is empty and writable and
// goes with the sandbox. Under isolation none it is a directory in the
// temporary directory, named after the sandbox, which another local user
// (it was once 0777 in a listable /tmp) can neither list nor write into
// while it lives; under isolation os it is not on the host at all.
func TestScratchRoot(t *testing.T) {
	f := newFixture(t) // CheckNoLeaks: the state entry, scratch included, must be gone
	for _, iso := range bothIsolations {
		t.Run(string(iso), func(t *testing.T) {
			spec := f.isoSpec(iso, "/bin/sh", "-c", `test -z "$(ls -A)" && touch made-here`)
			spec.Root, spec.ScratchRoot = "", true
			sb, err := Start(context.Background(), spec)
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			t.Cleanup(func() { _ = sb.Destroy() })
			root := sb.Evidence().HostRoot
			scratch := filepath.Join(os.TempDir(), scratchPrefix+sb.ID())
			if iso == IsolationOS {
				// A tmpfs of its own mount namespace (TestScratchRootBounded):
				// nothing on the host to reach.
				ex, err := sb.Wait()
				if err != nil || ex.Code != 0 {
					t.Fatalf("subject: %+v %v (the root was not empty or not writable)", ex, err)
				}
				if root != "" || fileExists(scratch) {
					t.Errorf("os scratch root on the host: evidence %q, %s exists %v", root, scratch, fileExists(scratch))
				}
				return
			}
			if want := filepath.Join(scratch, scratchWorkdir); root != want {
				t.Errorf("scratch root %s, want %s", root, want)
			}
			ex, err := sb.Wait()
			if err != nil || ex.Code != 0 {
				t.Fatalf("subject: %+v %v (the root was not empty or not writable)", ex, err)
			}
			if _, err := os.Stat(filepath.Join(root, "made-here")); err != nil {
				t.Errorf("the subject's file is not in the scratch root: %v", err)
			}
			for _, probe := range []struct{ what, script string }{
				{"list the scratch root", "ls -A " + scratch},
				{"list the subject's directory", "ls -A " + root},
				{"write into the subject's directory", "touch " + filepath.Join(root, "planted")},
				{"write beside it", "touch " + filepath.Join(scratch, "planted")},
				{"replace the subject's directory", "mv " + root + " " + root + ".old"},
			} {
				cmd := exec.Command("/bin/sh", "-c", probe.script)
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUser, Gid: otherUser}}
				if out, err := cmd.CombinedOutput(); err == nil {
					t.Errorf("uid %d could %s (%s):\n%s", otherUser, probe.what, probe.script, out)
				}
			}
			if err := sb.Destroy(); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{root, scratch} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s survives Destroy: %v", p, err)
				}
			}
		})
	}
}

// TestSweepScratch: a dead supervisor's scratch root is removed with its
// state entry; a record that does not name a scratch root removes nothing.
func TestSweepScratch(t *testing.T) {
	state := t.TempDir()
	cases := []struct {
		name      string
		target    string // the directory the record names
		wantGone  bool
		wantError bool
	}{
		{"scratch root of a dead entry", filepath.Join(t.TempDir(), scratchPrefix+"dead"), true, false},
		{"record naming another directory", t.TempDir(), false, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entry := filepath.Join(state, fmt.Sprintf("tvs-case%d", i))
			if err := os.MkdirAll(entry, 0o711); err != nil {
				t.Fatal(err)
			}
			// An owner that is dead: pid 1 with a start time it cannot have.
			if err := os.WriteFile(filepath.Join(entry, ownerFile), []byte("1 999999999999\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(tc.target, "sub"), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(entry, scratchFile), []byte(tc.target), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Sweep(state)
			if (err != nil) != tc.wantError {
				t.Errorf("sweep error %v, want error %v", err, tc.wantError)
			}
			_, statErr := os.Stat(tc.target)
			if gone := os.IsNotExist(statErr); gone != tc.wantGone {
				t.Errorf("%s gone=%v, want %v", tc.target, gone, tc.wantGone)
			}
			_ = os.RemoveAll(entry)
		})
	}
}
