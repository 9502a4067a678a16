package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// nobody is the uid (and gid) of "another local user" in these tests.
const nobody = 65534

// hostileStateDirs are state directories another user controls, each
// prepared under base: Start and Sweep must refuse every one.
func hostileStateDirs(t *testing.T, base string) map[string]string {
	t.Helper()
	mk := func(name string, mode os.FileMode, uid int) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dirs := map[string]string{
		"owned by another user":            mk("other-owner", 0o700, nobody),
		"mode 0777":                        mk("world-writable", 0o777, 0),
		"group-writable":                   mk("group-writable", 0o770, 0),
		"pre-created 0777 by another user": mk("planted", 0o777, nobody),
	}
	// A symlink in place of the directory, to a directory we own.
	target := mk("target", 0o700, 0)
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	dirs["symlink at the last component"] = link
	// A parent another user can write (not sticky): it can rename our
	// directory away and put its own in its place.
	parent := mk("open-parent", 0o777, 0)
	dirs["parent writable by others"] = filepath.Join(parent, "state")
	// A parent owned by another user.
	theirs := mk("their-parent", 0o755, nobody)
	dirs["parent owned by another user"] = filepath.Join(theirs, "state")
	// A symlink in the parent chain.
	if err := os.Symlink(target, filepath.Join(base, "linked-parent")); err != nil {
		t.Fatal(err)
	}
	dirs["symlink in the parent chain"] = filepath.Join(base, "linked-parent", "state")
	return dirs
}

// TestStartRefusesHostileStateDir is the squatted state directory as the
// attack, as root: a state directory another user made, or can write, or
// a symlink in its place, is refused by Start with an error naming the
// path, and Sweep acts on nothing in it — a planted entry would otherwise
// make it remove another sandbox's scratch root (or hide a live entry
// from it).
func TestStartRefusesHostileStateDir(t *testing.T) {
	sandboxtest.RequireRoot(t)
	base := t.TempDir()
	for name, dir := range hostileStateDirs(t, base) {
		t.Run(name, func(t *testing.T) {
			for _, iso := range bothIsolations {
				root := t.TempDir()
				if err := os.Chmod(root, 0o777); err != nil {
					t.Fatal(err)
				}
				spec := Spec{Isolation: iso, Args: []string{"/bin/true"}, Root: root, StateDir: dir}
				sb, err := Start(context.Background(), spec)
				if err == nil {
					_ = sb.Destroy()
					t.Errorf("%s: Start accepted state dir %s", iso, dir)
				} else if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), dir) {
					t.Errorf("%s: error %q: want ErrUnsafeDir naming %s", iso, err, dir)
				}
			}

			// Sweep: a planted dead entry whose scratch record names a
			// victim's scratch root.
			victim := filepath.Join(t.TempDir(), scratchPrefix+"victim")
			if err := os.Mkdir(victim, 0o700); err != nil {
				t.Fatal(err)
			}
			entry := filepath.Join(dir, "tvs-planted")
			if os.MkdirAll(entry, 0o700) == nil {
				_ = os.WriteFile(filepath.Join(entry, ownerFile), []byte("1 999999999999\n"), 0o644)
				_ = os.WriteFile(filepath.Join(entry, scratchFile), []byte(victim), 0o644)
			}
			if _, err := Sweep(dir); !errors.Is(err, ErrUnsafeDir) {
				t.Errorf("Sweep: %v, want ErrUnsafeDir", err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("Sweep followed a planted entry: the victim's scratch root is gone: %v", err)
			}
		})
	}
}

func TestCheckStateDir(t *testing.T) {
	sandboxtest.RequireRoot(t)
	base := t.TempDir()
	for name, dir := range hostileStateDirs(t, base) {
		t.Run(name, func(t *testing.T) {
			err := ensureStateDir(dir, true)
			if !errors.Is(err, ErrUnsafeDir) {
				t.Fatalf("ensureStateDir(%s) = %v, want ErrUnsafeDir", dir, err)
			}
			if !strings.Contains(err.Error(), "choose another") {
				t.Errorf("the error does not say what to do: %v", err)
			}
		})
	}
	t.Run("error names owner and mode", func(t *testing.T) {
		err := ensureStateDir(filepath.Join(base, "planted"), true)
		for _, want := range []string{filepath.Join(base, "planted"), "uid 65534", "0777"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v lacks %q", err, want)
			}
		}
	})
	t.Run("happy path: made 0711, checked again", func(t *testing.T) {
		dir := filepath.Join(base, "fresh", "a", "state")
		for range 2 {
			if err := ensureStateDir(dir, true); err != nil {
				t.Fatal(err)
			}
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Fatalf("made %v", fi.Mode())
		}
	})
	t.Run("traversable 0711 and sticky parent are fine", func(t *testing.T) {
		sticky := filepath.Join(base, "sticky")
		if err := os.Mkdir(sticky, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(sticky, "state")
		if err := os.Mkdir(dir, 0o711); err != nil {
			t.Fatal(err)
		}
		if err := ensureStateDir(dir, false); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing, no create", func(t *testing.T) {
		err := ensureStateDir(filepath.Join(base, "missing", "state"), false)
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("got %v, want ErrNotExist", err)
		}
	})
	t.Run("Start happy path", func(t *testing.T) {
		state := filepath.Join(base, "start", "state") // made by Start
		sandboxtest.CheckNoLeaks(t, state, "")
		for _, iso := range bothIsolations {
			// Under the temporary directory itself: the parent of
			// t.TempDir is 0700, and the subject of isolation none walks
			// the host path as its own uid.
			root, err := os.MkdirTemp("", "tvs-statedir-root-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(root) })
			if err := os.Chmod(root, 0o777); err != nil {
				t.Fatal(err)
			}
			spec := Spec{Isolation: iso, Args: []string{"/bin/true"}, Root: root, StateDir: state}
			sb, err := Start(context.Background(), spec)
			if err == nil {
				_, err = sb.Wait()
				if derr := sb.Destroy(); derr != nil && err == nil {
					err = derr
				}
			}
			if err != nil {
				t.Errorf("%s: %v", iso, err)
			}
		}
	})
}

// stateDirChildEnv, when set, makes TestStateDirRootlessChild the child
// half of TestStateDirRootless: it runs as an unprivileged uid.
const stateDirChildEnv = "TVS_STATEDIR_CHILD"

// TestStateDirRootless: the rootless default, checked as a real
// unprivileged user (uid 65534 in a child of this test binary: a Go
// process cannot switch the uid of one thread reliably): with no
// XDG_RUNTIME_DIR the state dir under TMPDIR is made 0700 and accepted;
// one another user pre-created 0777 is refused (the attack); an
// XDG_RUNTIME_DIR that is not ours is refused, one that is ours is used.
func TestStateDirRootless(t *testing.T) {
	sandboxtest.RequireRoot(t)
	// The test binary lives in a private build directory: copy it where
	// the child's uid can run it.
	pub, err := os.MkdirTemp("", "tvs-statedir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pub, "sandbox.test")
	copyFile(t, os.Args[0], bin, 0o755)
	tmp := filepath.Join(pub, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	xdgOurs := filepath.Join(pub, "xdg-ours")
	xdgTheirs := filepath.Join(pub, "xdg-theirs")
	for _, d := range []string{xdgOurs, xdgTheirs} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(xdgOurs, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(xdgTheirs, 0o777); err != nil { // writable, but not ours
		t.Fatal(err)
	}
	planted := filepath.Join(tmp, fmt.Sprintf("termverify-sandbox-%d", nobody))
	cases := []struct {
		name    string
		env     []string
		plant   bool // another user (root here) pre-creates the default dir 0777
		want    string
		wantErr bool
	}{
		{"TMPDIR default made 0700", []string{"TMPDIR=" + tmp}, false, planted, false},
		{"TMPDIR default pre-created by another user", []string{"TMPDIR=" + tmp}, true, planted, true},
		{"XDG_RUNTIME_DIR of ours", []string{"TMPDIR=" + tmp, "XDG_RUNTIME_DIR=" + xdgOurs}, false, filepath.Join(xdgOurs, "termverify-sandbox"), false},
		{"XDG_RUNTIME_DIR not ours", []string{"TMPDIR=" + tmp, "XDG_RUNTIME_DIR=" + xdgTheirs}, false, filepath.Join(xdgTheirs, "termverify-sandbox"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.RemoveAll(planted)
			if tc.plant {
				if err := os.Mkdir(planted, 0o777); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(planted, 0o777); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(bin, "-test.run=^TestStateDirRootlessChild$", "-test.count=1")
			cmd.Env = append([]string{stateDirChildEnv + "=1", "PATH=/usr/bin:/bin"}, tc.env...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
			out, err := cmd.CombinedOutput()
			text := string(out)
			if !strings.Contains(text, "statedir "+tc.want+": ") {
				t.Fatalf("child (err %v) did not check %s:\n%s", err, tc.want, text)
			}
			refused := strings.Contains(text, ErrUnsafeDir.Error())
			if refused != tc.wantErr || (err != nil) != tc.wantErr {
				t.Errorf("refused %v (exit %v), want refused %v:\n%s", refused, err, tc.wantErr, text)
			}
			if !tc.wantErr {
				fi, err := os.Lstat(tc.want)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != nobody {
					t.Errorf("made %v, want 0700 owned by %d", fi.Mode(), nobody)
				}
			}
		})
	}
}

// TestStateDirRootlessChild is TestStateDirRootless's child half.
func TestStateDirRootlessChild(t *testing.T) {
	if os.Getenv(stateDirChildEnv) == "" {
		t.Skip("the child half of TestStateDirRootless")
	}
	dir := DefaultStateDir()
	err := ensureStateDir(dir, true)
	fmt.Printf("statedir %s: %v\n", dir, err)
	if err != nil {
		t.Fatal(err)
	}
	// Sweep, run as that user, must accept the same directory.
	if _, err := Sweep(""); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
