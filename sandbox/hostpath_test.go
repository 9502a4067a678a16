package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// exchange swaps two names atomically, as an attacker racing the start
// would (renameat2 RENAME_EXCHANGE).
func exchange(t *testing.T, a, b string) {
	t.Helper()
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("exchange %s %s: %v", a, b, err)
	}
}

// TestRootSwapAfterCheck is the rename race on the mapped root: between
// the check of the mapped root and libcontainer's bind, its name is
// swapped for a symlink to the host's /. The sandbox must map the
// directory that was opened (its marker is visible, the host's /etc is
// not) and say os; a bind by name would follow the symlink and give the
// subject the host's /.
func TestRootSwapAfterCheck(t *testing.T) {
	for _, point := range []string{hookRootOpened, hookBeforeContainerRun} {
		t.Run(point, func(t *testing.T) {
			f := newFixture(t)
			parent := t.TempDir()
			app := filepath.Join(parent, "app")
			if err := os.Mkdir(app, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(app, "marker"), []byte("the opened root"), 0o644); err != nil {
				t.Fatal(err)
			}
			evil := filepath.Join(parent, "evil")
			if err := os.Symlink("/", evil); err != nil {
				t.Fatal(err)
			}
			spec := f.spec("/bin/sh", "-c", "cat /sandbox/marker; test -e /sandbox/etc/passwd && echo HOST-ROOT-VISIBLE; true")
			spec.Root = app
			swapped := false
			spec.testHook = func(p, _ string) {
				if p == point && !swapped {
					exchange(t, app, evil) // app is now the symlink to /
					swapped = true
				}
			}
			ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
			if !swapped {
				t.Fatal("the hook never ran")
			}
			if ex.ShellStatus() != 0 {
				t.Fatalf("exit %+v stderr %q", ex, stderr)
			}
			if out != "the opened root" {
				t.Errorf("subject saw %q at /sandbox, want the opened root only", out)
			}
			if a := sb.Applied(); !a.Filesystem.Confined || !slices.Contains(a.Filesystem.Checks, "workdir-bound") {
				t.Errorf("filesystem %+v", a.Filesystem)
			}
		})
	}
}

// TestRootSymlinkRefused is item 6: a root that is, or passes through, a
// symbolic link is refused before anything starts, never followed (the
// old code mapped host / read-write for R/app -> / and said os).
func TestRootSymlinkRefused(t *testing.T) {
	sandboxtest.RequireRoot(t)
	parent := t.TempDir()
	real := filepath.Join(parent, "real")
	if err := os.MkdirAll(filepath.Join(real, "app"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"/", "to-host-root"}, {real, "linkdir"}, {filepath.Join(real, "app"), "linkapp"}} {
		if err := os.Symlink(l[0], filepath.Join(parent, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range []string{
		filepath.Join(parent, "to-host-root"),   // the last component
		filepath.Join(parent, "linkdir", "app"), // a middle component
		filepath.Join(parent, "linkapp"),
	} {
		t.Run(filepath.Base(root), func(t *testing.T) {
			for _, iso := range []Isolation{IsolationOS, IsolationNone} {
				spec := Spec{Isolation: iso, Args: []string{"/bin/true"}, Root: root, StateDir: t.TempDir()}
				sb, err := Start(context.Background(), spec)
				if err == nil {
					_ = sb.Destroy()
				}
				if !errors.Is(err, ErrSymlinkPath) {
					t.Errorf("%s: Start = %v, want ErrSymlinkPath", iso, err)
				}
				if err == nil || !strings.Contains(err.Error(), "symbolic link") {
					t.Errorf("%s: message %v does not say why", iso, err)
				}
			}
		})
	}
}

// TestRootFSEntrySwapAfterCheck is item 4: a --rootfs top-level entry is
// swapped for a symlink to / between its check and the bind. The sandbox
// binds the entry that was opened; before the fix host / (with its /proc
// and every host pid) appeared inside.
func TestRootFSEntrySwapAfterCheck(t *testing.T) {
	f := newFixture(t)
	rootfs := t.TempDir()
	parent := t.TempDir()
	if err := os.Mkdir(filepath.Join(rootfs, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "data", "marker"), []byte("the opened entry"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The helper needs no loader here: the static escape helper goes in
	// the mapped root, the complete root holds only the raced entry, and
	// the binary itself (the init) is static or finds no libc.
	f.withEscape(t)
	evil := filepath.Join(parent, "evil")
	if err := os.Symlink("/", evil); err != nil {
		t.Fatal(err)
	}
	spec := f.spec("./escape", "read", "/data/marker")
	spec.RootFS = rootfs
	swapped := false
	spec.testHook = func(p, path string) {
		if p == hookRootFSEntryOpened && filepath.Base(path) == "data" && !swapped {
			exchange(t, filepath.Join(rootfs, "data"), evil)
			swapped = true
		}
	}
	if _, err := os.Stat("/lib64/ld-linux-x86-64.so.2"); err != nil {
		t.Skip("needs the host loader for a dynamically linked init")
	}
	// A dynamically linked test binary is the init: give the complete
	// root the loader and libc (as TestRootFS does).
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("minimal root needs %s: %v", p, err)
		}
		dst := filepath.Join(rootfs, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
	if !swapped {
		t.Fatal("the hook never ran")
	}
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q", ex, stderr)
	}
	if out != "OK the opened entry" && !strings.Contains(out, "the opened entry") {
		t.Errorf("subject read %q from /data/marker, want the opened entry", out)
	}
	if a := sb.Applied(); !a.Filesystem.Confined {
		t.Errorf("filesystem %+v", a.Filesystem)
	}
}

// TestPinsLeaveNothing: the host-side pins are gone once the sandbox has
// started, and a leftover (a supervisor SIGKILLed between pin and start)
// is unmounted before its entry is deleted, so the caller's files under
// the bind survive the removal.
func TestPinsLeaveNothing(t *testing.T) {
	sandboxtest.RequireRoot(t)
	entry := t.TempDir()
	root := t.TempDir()
	keep := filepath.Join(root, "precious")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := openHostPath(root, true)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	p := &pinner{dir: filepath.Join(entry, pinDir)}
	src, err := p.source(h, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "precious")); err != nil {
		t.Fatalf("pin does not show the root: %v", err)
	}
	if err := removeEntry(entry); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("removing the entry deleted the caller's file: %v", err)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("entry still there: %v", err)
	}
}

// TestRootSwapRace is the real race behind TestRootSwapAfterCheck, in a
// bounded loop: a goroutine exchanges the mapped root with a symlink to /
// as fast as it can while sandboxes start. Each start must either refuse
// (the symlink was in place at the open) or map the directory that was
// opened; none may show the host's root. A handful of tries, not a soak:
// the deterministic test above is the proof, this one keeps the real
// interleavings honest.
func TestRootSwapRace(t *testing.T) {
	f := newFixture(t)
	parent := t.TempDir()
	app := filepath.Join(parent, "app")
	if err := os.Mkdir(app, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "marker"), []byte("the opened root"), 0o644); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(parent, "evil")
	if err := os.Symlink("/", evil); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	raced := make(chan int)
	go func() {
		n := 0
		defer func() { raced <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Renameat2(unix.AT_FDCWD, app, unix.AT_FDCWD, evil, unix.RENAME_EXCHANGE) == nil {
				n++
			}
			// Some air, so that starts also begin while the name is the
			// directory and are then raced inside their own window.
			time.Sleep(200 * time.Microsecond)
		}
	}()
	started, refused := 0, 0
	for i := 0; i < 24; i++ {
		spec := f.spec("/bin/sh", "-c", "cat /sandbox/marker 2>/dev/null; test -e /sandbox/etc/passwd && echo HOST-ROOT-VISIBLE; true")
		spec.Root = app
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		spec.Stdout = outW
		sb, err := Start(context.Background(), spec)
		outW.Close()
		if err != nil {
			outR.Close()
			if !errors.Is(err, ErrSymlinkPath) && !errors.Is(err, ErrNotVerified) {
				t.Errorf("start %d: %v, want a refusal (symlink) or nothing", i, err)
			}
			refused++
			continue
		}
		b := make([]byte, 256)
		n, _ := io.ReadFull(outR, b)
		outR.Close()
		_, _ = sb.Wait()
		_ = sb.Destroy()
		started++
		if got := string(b[:n]); got != "the opened root" {
			t.Errorf("start %d: subject saw %q", i, got)
		}
		if a := sb.Applied(); !a.Filesystem.Confined {
			t.Errorf("start %d: filesystem %+v", i, a.Filesystem)
		}
	}
	close(stop)
	t.Logf("%d started, %d refused, %d exchanges", started, refused, <-raced)
}

// TestRootFSCannotNameOurFiles: a --rootfs is someone else's tree, and
// its top-level symlinks are recreated in our skeleton root. The pinned
// hosts file used to be written at <skeleton>/.hosts by name, so a rootfs
// with a top-level ".hosts -> /any/host/file" (and an etc/hosts) made
// root overwrite that host file. Nothing we write may be nameable by the
// rootfs.
func TestRootFSCannotNameOurFiles(t *testing.T) {
	f := newFixture(t)
	f.withEscape(t)
	rootfs := t.TempDir()
	victimDir := t.TempDir()
	victim := filepath.Join(victimDir, "target")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc", "hosts"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{".hosts": victim, "hosts": victim, "pins": victimDir, "lc": victimDir, "owner": victim} {
		if err := os.Symlink(target, filepath.Join(rootfs, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("minimal root needs %s: %v", p, err)
		}
		dst := filepath.Join(rootfs, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := f.spec("./escape", "read", "/etc/hosts")
	spec.RootFS = rootfs
	ex, out, stderr, _ := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q", ex, stderr)
	}
	if !strings.Contains(out, "localhost") {
		t.Errorf("/etc/hosts inside is %q, want the pinned file", out)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
		t.Errorf("host file behind the rootfs's symlink is now %q (%v)", b, err)
	}
	if ents, _ := os.ReadDir(victimDir); len(ents) != 1 {
		t.Errorf("files appeared in the host directory behind a rootfs symlink: %v", ents)
	}
}

// TestSkeletonOnPinsTmpfs: as root without a user namespace the skeleton
// root is built in the pins tmpfs, not on the state directory's
// filesystem. The subject's / is that tmpfs, read-only; once Start has
// returned nothing of it is mounted or left on the host (the entry holds
// no skeleton to delete); the checks verify makes of the root still ran
// (pivot-root, the mapped root's identity at Workdir); and a pins tmpfs
// left by a supervisor killed before unpin, skeleton and pin inside, is
// detached by removeEntry without touching the pinned directory.
func TestSkeletonOnPinsTmpfs(t *testing.T) {
	f := newFixture(t)
	sb, err := Start(context.Background(), Spec{Args: []string{"/bin/sleep", "10"}, Root: f.root, StateDir: f.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = sb.Kill()
		_, _ = sb.Wait()
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
		if _, err := os.Stat(filepath.Join(f.stateDir, sb.ID())); !os.IsNotExist(err) {
			t.Errorf("entry left after Destroy: %v", err)
		}
	}()
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join("/proc", strconv.Itoa(sb.Evidence().InitPID), "root")+"/", &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC || st.Flags&unix.ST_RDONLY == 0 {
		t.Errorf("sandbox / is fs type %#x flags %#x, want a read-only tmpfs", st.Type, st.Flags)
	}
	entry := filepath.Join(f.stateDir, sb.ID())
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mi), entry) {
		t.Errorf("a mount under %s is left on the host after Start", entry)
	}
	for _, name := range []string{"root", filepath.Join(pinDir, "root")} {
		if _, err := os.Lstat(filepath.Join(entry, name)); !os.IsNotExist(err) {
			t.Errorf("%s exists on the host after Start: %v", name, err)
		}
	}
	if m, ok := sb.Applied().Mechanism("pivot-root"); !ok || !m.Applied {
		t.Errorf("pivot-root not verified: %+v", m)
	}
	if !slices.Contains(sb.Applied().Filesystem.Checks, "mount-namespace") {
		t.Errorf("filesystem checks %v", sb.Applied().Filesystem.Checks)
	}

	// The leftover of a supervisor killed between the skeleton and unpin.
	dead := t.TempDir()
	keep := filepath.Join(f.root, "precious")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := openHostPath(f.root, true)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	p := &pinner{dir: filepath.Join(dead, pinDir)}
	skel, err := p.skeletonIn(dead, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if skel != filepath.Join(dead, pinDir, "root") {
		t.Errorf("skeleton at %s, want inside the pins tmpfs", skel)
	}
	if err := os.MkdirAll(filepath.Join(skel, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := p.source(h, false); err != nil {
		t.Fatal(err)
	}
	if err := removeEntry(dead); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("removing the leftover entry deleted the caller's file: %v", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("leftover entry still there: %v", err)
	}
	// Rootless or with a user namespace, the skeleton stays in the entry.
	for _, c := range []struct{ rootless, userns bool }{{true, true}, {false, true}} {
		q := &pinner{dir: filepath.Join(dead, pinDir)}
		if got, err := q.skeletonIn(dead, c.rootless, c.userns); err != nil || got != filepath.Join(dead, "root") || q.made {
			t.Errorf("skeletonIn(rootless %v, userns %v) = %s, %v (mounted %v)", c.rootless, c.userns, got, err, q.made)
		}
	}
}
