package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// TestRootSwapAfterCheck is the attack of issue #8 item 1: between the
// check of the mapped root and libcontainer's bind, its name is swapped
// for a symlink to the host's /. The sandbox must map the directory that
// was opened (its marker is visible, the host's /etc is not) and say os.
// Before the fix the bind followed the name and the subject saw host /.
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
