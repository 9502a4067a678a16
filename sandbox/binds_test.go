package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bindDir is a fresh host directory the sandbox's uid may write, with a
// marker file naming it.
func bindDir(t *testing.T, marker string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "marker"), []byte(marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBinds: a writable bind at its own host path is the working
// directory and what is written there lands on the host; a read-only
// bind at another path is readable and refuses writes; one below /tmp
// lands in the sandbox's private /tmp. The filesystem receipt names the
// check.
func TestBinds(t *testing.T) {
	f := newFixture(t)
	work, ref, scratch := bindDir(t, "work"), bindDir(t, "ref"), bindDir(t, "scratch")
	spec := f.spec("/bin/sh", "-c", `pwd; cat marker; echo made >new
cat /home/agent/ref/marker; (echo x >/home/agent/ref/new) 2>/dev/null && echo ref-writable || echo ref-refused
cat /tmp/scratch/marker`)
	spec.Root = ""
	spec.Binds = []Bind{
		{Source: work, Writable: true},
		{Source: ref, Dest: "/home/agent/ref"},
		{Source: scratch, Dest: "/tmp/scratch", Writable: true},
	}
	spec.Dir = work
	ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q", ex, stderr)
	}
	want := strings.Join([]string{work, "work", "ref", "ref-refused", "scratch"}, "\n")
	if out != want {
		t.Errorf("subject printed %q, want %q (stderr %q)", out, want, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(work, "new")); err != nil || string(b) != "made\n" {
		t.Errorf("the file written in the working directory: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ref, "new")); err == nil {
		t.Error("a write reached the read-only bind's host directory")
	}
	if fs := sb.Applied().Filesystem; !fs.Confined || !slices.Contains(fs.Checks, "binds") {
		t.Errorf("filesystem %+v, want confined with the binds check", fs)
	}
}

// TestBindSwapped: a bind's source is a hostile path, opened once. A
// directory swapped in under its name after the open is not what the
// subject sees: it sees the directory that was opened.
func TestBindSwapped(t *testing.T) {
	f := newFixture(t)
	parent := t.TempDir()
	src := filepath.Join(parent, "project")
	if err := os.Mkdir(src, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "marker"), []byte("opened"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := f.spec("/bin/cat", "/work/marker")
	spec.Root = ""
	spec.Binds = []Bind{{Source: src, Dest: "/work"}}
	spec.testHook = func(point, arg string) {
		if point != hookBindOpened {
			return
		}
		if err := os.Rename(src, filepath.Join(parent, "moved")); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(src, 0o777); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(filepath.Join(src, "marker"), []byte("swapped"), 0o644); err != nil {
			t.Error(err)
		}
	}
	ex, out, stderr, _ := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 || out != "opened" {
		t.Errorf("exit %+v, subject read %q (stderr %q), want the opened directory's marker", ex, out, stderr)
	}
}

// TestBindsRefused: what Validate refuses before anything runs.
func TestBindsRefused(t *testing.T) {
	f := newFixture(t)
	a, b := bindDir(t, "a"), bindDir(t, "b")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		binds []Bind
		dir   string
		iso   Isolation
		want  string
	}{
		{"relative source", []Bind{{Source: "rel"}}, "", "", "not absolute"},
		{"root destination", []Bind{{Source: a, Dest: "/"}}, "", "", "clean absolute path below /"},
		{"unclean destination", []Bind{{Source: a, Dest: "/x/../y"}}, "", "", "clean absolute path"},
		{"under /proc", []Bind{{Source: a, Dest: "/proc/x"}}, "", "", "sandbox's own /proc"},
		{"under /etc", []Bind{{Source: a, Dest: "/etc"}}, "", "", "sandbox's own /etc"},
		{"over /usr", []Bind{{Source: a, Dest: "/usr/lib"}}, "", "", "sandbox's own /usr"},
		{"overlapping", []Bind{{Source: a, Dest: "/w"}, {Source: b, Dest: "/w/inner"}}, "", "", "overlaps"},
		{"dir outside the binds", []Bind{{Source: a, Dest: "/w"}}, "/elsewhere", "", "not in a bind"},
		{"isolation none", []Bind{{Source: a}}, "", IsolationNone, "need isolation os"},
		{"symlink source", []Bind{{Source: link}}, "", "", "cannot be mapped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := f.spec("/bin/true")
			spec.Isolation = tc.iso
			spec.Binds, spec.Dir = tc.binds, tc.dir
			err := spec.Validate()
			if err == nil || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want an invalid spec saying %q", err, tc.want)
			}
		})
	}
	t.Run("symlink source is ErrSymlinkPath", func(t *testing.T) {
		spec := f.spec("/bin/true")
		spec.Binds = []Bind{{Source: link}}
		if err := spec.Validate(); !errors.Is(err, ErrSymlinkPath) {
			t.Errorf("Validate: %v, want ErrSymlinkPath", err)
		}
	})
}

// TestBindOwner: with BindOwner, a bind of a directory only its owner may
// write (a root-owned 0700 one, as a CI's temporary directory is) is
// writable by the subject, what the subject creates there belongs to the
// owner on the host, the owner's files appear as the subject's own, and
// another owner's appear as the overflow id.
func TestBindOwner(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir() // root's, 0700
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("secret of the owner\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	spec := f.spec("/bin/sh", "-c", `cat mine; echo made >new && echo wrote; echo "me $(id -u) dir $(stat -c %u .) other $(stat -c %u other)"; grep -c idmapped /proc/self/mountinfo`)
	spec.Root = ""
	spec.Binds = []Bind{{Source: dir, Writable: true}}
	spec.Dir = dir
	spec.BindOwner = &Owner{UID: 0, GID: 0}
	ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q out %q", ex, stderr, out)
	}
	uid := strconv.Itoa(sb.Evidence().UID)
	lines := strings.Split(out, "\n")
	if len(lines) != 4 || lines[0] != "secret of the owner" || lines[1] != "wrote" || lines[2] != "me "+uid+" dir "+uid+" other 65534" || lines[3] == "0" {
		t.Errorf("subject printed %q (stderr %q), want the owner's file read, a write, its own uid %s for the owner's files, 65534 for another's, an idmapped mount", out, stderr, uid)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, "new"), &st); err != nil || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("the subject's new file on the host: uid %d gid %d (%v), want the owner's 0:0", st.Uid, st.Gid, err)
	}
}

// TestBindMask: a masked directory inside a bind is, to the subject, an
// empty read-only directory it can neither fill, remove nor move; the
// host's files there are untouched and unseen.
func TestBindMask(t *testing.T) {
	f := newFixture(t)
	dir := bindDir(t, "work")
	hidden := filepath.Join(dir, "hidden")
	if err := os.Mkdir(hidden, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "socket-like"), []byte("host's\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	spec := f.spec("/bin/sh", "-c", `echo "seen $(ls -A hidden | wc -l)"; (touch hidden/x) 2>/dev/null && echo filled; (mv hidden moved) 2>/dev/null && echo moved; (rm -rf hidden) 2>/dev/null; test -d hidden && echo still-there`)
	spec.Root = ""
	spec.Binds = []Bind{{Source: dir, Writable: true}}
	spec.Dir = dir
	spec.Masks = []string{hidden}
	ex, out, stderr, _ := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 || out != "seen 0\nstill-there" {
		t.Errorf("exit %+v, subject printed %q (stderr %q), want the masked directory empty, unfilled, unmoved", ex, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(hidden, "socket-like")); err != nil || string(b) != "host's\n" {
		t.Errorf("the host's file under the mask: %q, %v", b, err)
	}
	bad := f.spec("/bin/true")
	bad.Binds = []Bind{{Source: dir}}
	bad.Masks = []string{"/elsewhere"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "not below a bind") {
		t.Errorf("Validate of a mask outside the binds: %v", err)
	}
}
