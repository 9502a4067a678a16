package safeout

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// victim is a 0600 file the attacks try to make root chmod or write.
func victim(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(p, []byte("secret\n"), 0o600))
	must(t, os.Chmod(p, 0o600))
	return p
}

func checkVictim(t *testing.T, p string) {
	t.Helper()
	st, err := os.Stat(p)
	must(t, err)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("victim mode %o, want 0600: root chmodded through the symlink", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(p); string(b) != "secret\n" {
		t.Errorf("victim holds %q: root wrote through the symlink", b)
	}
}

func writeReport(d *Dir, name string) error {
	return d.WriteFile(name, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "<report/>\n")
		return err
	})
}

// TestCommitNameSwapped is the local-user race on a report: someone who
// can write the report's directory replaces the temporary name by a
// symlink to a file of their choosing between create and commit. A
// writer that chmodded (0644) and renamed by name would make the victim
// world-readable and the report a symlink to it. Here the mode is set on
// the descriptor, and the swapped name is refused before the rename: the
// victim keeps its mode and content, and no report appears.
func TestCommitNameSwapped(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "O_TMPFILE", true: "named temporary"}[named], func(t *testing.T) {
			dir := t.TempDir()
			v := victim(t)
			d, err := OpenDir(dir)
			must(t, err)
			defer d.Close()
			swapped := false
			d.beforeRename = func(temp string) {
				must(t, os.Remove(filepath.Join(dir, temp)))
				must(t, os.Symlink(v, filepath.Join(dir, temp)))
				swapped = true
			}
			var f *File
			if named {
				f, err = d.CreateNamedTemp("junit.xml", 0o644)
			} else {
				f, err = d.Create("junit.xml", 0o644)
			}
			must(t, err)
			defer f.Discard()
			_, _ = f.Write([]byte("<report/>\n"))
			must(t, f.Chmod(0o644))
			err = f.Commit()
			if !swapped {
				t.Fatal("the hook did not run")
			}
			if err == nil || !strings.Contains(err.Error(), "replaced") {
				t.Errorf("commit: %v, want the swapped name refused", err)
			}
			checkVictim(t, v)
			if _, err := os.Lstat(filepath.Join(dir, "junit.xml")); err == nil {
				t.Error("a report was committed from the swapped name")
			}
		})
	}
	t.Run("WriteFile", func(t *testing.T) {
		dir := t.TempDir()
		v := victim(t)
		d, err := OpenDir(dir)
		must(t, err)
		defer d.Close()
		d.beforeRename = func(temp string) {
			must(t, os.Remove(filepath.Join(dir, temp)))
			must(t, os.Symlink(v, filepath.Join(dir, temp)))
		}
		if err := writeReport(d, "junit.xml"); err == nil {
			t.Error("WriteFile committed a swapped name")
		}
		checkVictim(t, v)
	})
}

// racer replaces every hidden name that appears in dir by a symlink to
// target until stop is closed, as a local user's loop would, and counts
// its swaps.
func racer(dir, target string, stop chan struct{}, swaps *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") || e.Type()&os.ModeSymlink != 0 {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if os.Remove(p) == nil && os.Symlink(target, p) == nil {
				swaps.Add(1)
			}
		}
	}
}

// TestWriteFileRace is the same race for real, bounded: a goroutine
// swaps every temporary name it sees for a symlink to the victim while
// reports are written over and over. Whatever it wins, root never
// chmods or writes the victim. (The old code's CreateTemp, Chmod, Rename
// lost the victim in most rounds: the attack won 9 of 14.)
func TestWriteFileRace(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "O_TMPFILE", true: "named temporary"}[named], func(t *testing.T) {
			dir := t.TempDir()
			v := victim(t)
			d, err := OpenDir(dir)
			must(t, err)
			defer d.Close()
			stop := make(chan struct{})
			var swaps atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() { racer(dir, v, stop, &swaps) })
			refused := 0
			deadline := time.Now().Add(time.Second)
			for i := 0; i < 200 && time.Now().Before(deadline); i++ {
				var err error
				if named {
					var f *File
					if f, err = d.CreateNamedTemp("junit.xml", 0o644); err == nil {
						_, _ = f.Write([]byte("<report/>\n"))
						if err = f.Chmod(0o644); err == nil {
							err = f.Commit()
						}
						f.Discard()
					}
				} else {
					err = writeReport(d, "junit.xml")
				}
				if err != nil {
					refused++
				}
			}
			close(stop)
			wg.Wait()
			checkVictim(t, v)
			t.Logf("%d swaps by the racer, %d commits refused", swaps.Load(), refused)
			if named && swaps.Load() == 0 {
				t.Skip("the racer never saw a temporary name: the race was not exercised on this machine")
			}
		})
	}
}

// TestMkdirAll: directories are made one component at a time, relative
// to descriptors; a planted symlink at any component, existing or not
// yet walked, is refused and nothing is created through it.
func TestMkdirAll(t *testing.T) {
	cases := []struct {
		name, path string // path relative to the base
		ok         bool
	}{
		{"new", "a/b/c", true},
		{"existing", "exists", true},
		{"through .. in the existing part", "exists/../a2/b", true},
		{"symlink as a middle component", "link/new", false},
		{"symlink as the last component", "link", false},
		{"symlink below a new directory's parent", "exists/link2/x", false},
		{".. after a missing directory", "missing/../x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			target := filepath.Join(t.TempDir(), "target")
			must(t, os.Mkdir(target, 0o700))
			must(t, os.Mkdir(filepath.Join(base, "exists"), 0o755))
			must(t, os.Symlink(target, filepath.Join(base, "link")))
			must(t, os.Symlink(target, filepath.Join(base, "exists", "link2")))
			for _, p := range []string{base + "/" + tc.path, tc.path} {
				if p == tc.path {
					t.Chdir(base)
				}
				d, err := MkdirAll(p, 0o755)
				if (err == nil) != tc.ok {
					t.Fatalf("MkdirAll(%s): %v, want ok %v", p, err, tc.ok)
				}
				if ents, _ := os.ReadDir(target); len(ents) != 0 {
					t.Errorf("MkdirAll(%s) created %d entries in the symlink's target", p, len(ents))
				}
				if err != nil {
					if !tc.ok && strings.Contains(tc.name, "symlink") && !strings.Contains(err.Error(), "symbolic link") {
						t.Errorf("error %q does not say symbolic link", err)
					}
					continue
				}
				var st1, st2 unix.Stat_t
				must(t, unix.Fstat(d.Fd(), &st1))
				must(t, unix.Stat(p, &st2))
				if st1.Ino != st2.Ino || st1.Dev != st2.Dev {
					t.Errorf("MkdirAll(%s) opened another directory than the path names", p)
				}
				d.Close()
			}
		})
	}
}

// TestAncestors: the walk by ".." from the descriptor finds the directory,
// each parent and "/", even after the directory was renamed away.
func TestAncestors(t *testing.T) {
	base := t.TempDir()
	p := filepath.Join(base, "a", "b")
	d, err := MkdirAll(p, 0o755)
	must(t, err)
	defer d.Close()
	must(t, os.Rename(filepath.Join(base, "a"), filepath.Join(base, "moved")))
	ids, err := d.Ancestors()
	must(t, err)
	want := map[string]bool{}
	for _, q := range []string{filepath.Join(base, "moved", "b"), filepath.Join(base, "moved"), base, "/"} {
		var st unix.Stat_t
		must(t, unix.Stat(q, &st))
		want[q] = false
		for _, id := range ids {
			if id == (FileID{Dev: st.Dev, Ino: st.Ino}) {
				want[q] = true
			}
		}
	}
	for q, found := range want {
		if !found {
			t.Errorf("%s not among the ancestors", q)
		}
	}
	if ids[0] != mustID(t, d) {
		t.Error("the first ancestor is not the directory itself")
	}
}

func mustID(t *testing.T, d *Dir) FileID {
	id, err := d.ID()
	must(t, err)
	return id
}

// TestOpenRead: a symlink and a FIFO are refused, the FIFO without
// waiting for a writer; a regular file is read.
func TestOpenRead(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	must(t, os.Symlink(filepath.Join(dir, "f"), filepath.Join(dir, "l")))
	must(t, unix.Mkfifo(filepath.Join(dir, "p"), 0o644))
	d, err := OpenDir(dir)
	must(t, err)
	defer d.Close()
	f, err := d.OpenRead("f")
	must(t, err)
	b, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(b, []byte("x")) {
		t.Errorf("read %q", b)
	}
	for _, name := range []string{"l", "p", "../f", ""} {
		if f, err := d.OpenRead(name); err == nil {
			f.Close()
			t.Errorf("%q: opened", name)
		}
	}
}

// TestSyncThenCommit: Sync, done early (while a caller does other work),
// names nothing, and a write after it still reaches the committed file;
// after Commit, Sync refuses. (Durability itself is not observable here.)
func TestSyncThenCommit(t *testing.T) {
	for _, named := range []bool{false, true} {
		dir := t.TempDir()
		d, err := OpenDir(dir)
		must(t, err)
		create := d.Create
		if named {
			create = d.CreateNamedTemp
		}
		f, err := create("out", 0o644)
		must(t, err)
		_, err = f.Write([]byte("one\n"))
		must(t, err)
		must(t, f.Sync())
		if _, err := os.Lstat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
			t.Errorf("named=%v: after Sync, out exists (%v): Sync must not put the file in place", named, err)
		}
		_, err = f.Write([]byte("two\n"))
		must(t, err)
		must(t, f.Commit())
		if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "one\ntwo\n" {
			t.Errorf("named=%v: committed %q (%v), want both writes", named, b, err)
		}
		if f.Sync() == nil {
			t.Errorf("named=%v: Sync after Commit succeeded", named)
		}
		must(t, d.Close())
	}
}
