package sandbox

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// TestDirect covers isolation none: same surface, exact exits, the
// whole tree killed, delivered tiers only.
func TestDirect(t *testing.T) {
	f := directFixture(t)
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
		if a := sb.Applied(); a.Filesystem.Confined || a.Network.Confined || a.Filesystem.Reason != "isolation-none" {
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
		marker := sandboxtest.SleepMarker(4)
		ex, _, _, _ := runBox(t, spec("/bin/sh", "-c", "(setsid sleep "+marker+" </dev/null >/dev/null 2>&1 &); sleep 0.1"), 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Fatalf("exit %+v", ex)
		}
		if pids := waitGone(marker, time.Second); len(pids) > 0 {
			t.Errorf("daemon survived: %v", pids)
		}
	})
	t.Run("kill", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(5)
		ex, _, _, _ := runBox(t, spec("/bin/sh", "-c", "(setsid sleep "+marker+" &); sleep "+marker), 300*time.Millisecond)
		if !ex.Killed {
			t.Errorf("exit %+v", ex)
		}
		if pids := waitGone(marker, time.Second); len(pids) > 0 {
			t.Errorf("survivors: %v", pids)
		}
	})
}

// directFixture is newFixture with the mapped root reachable by the
// sandbox uid on the host: t.TempDir's parent is a 0700 root-owned
// directory, which the direct runner (rightly) refuses to enter as the
// sandbox's unprivileged uid.
func directFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	if err := os.Chmod(filepath.Dir(f.root), 0o711); err != nil {
		t.Fatal(err)
	}
	return f
}

// statusFields parses "Key:\tvalue" lines into whitespace-separated fields.
func statusFields(s string) map[string][]string {
	m := map[string][]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.Fields(v)
		}
	}
	return m
}

// TestDirectDropsRoot is the root-subject attack on isolation none: a
// direct runner that keeps root's credentials runs the subject as host
// root with no namespaces, no seccomp and no no_new_privs. The subject
// must instead see the sandbox uid with no groups and no capabilities,
// no_new_privs and our seccomp filter, no core dumps, and a setuid-root
// binary must not give it root back. The uid is the sandbox's own
// (uid.go), the one its evidence records, never 65534.
func TestDirectDropsRoot(t *testing.T) {
	f := directFixture(t)
	f.withEscape(t)
	suid := filepath.Join(f.root, "escape-suid")
	b, err := os.ReadFile(filepath.Join(f.root, "escape"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755); err != nil { // root-owned: we are root
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.root, "m"), 0o777); err != nil {
		t.Fatal(err)
	}
	// Should the mount ever succeed (the old code, as root), undo it.
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(f.root, "m"), unix.MNT_DETACH) })
	zero := "0000000000000000"

	t.Run("credentials", func(t *testing.T) {
		script := `id -u; id -g; grep -E '^(Uid|Gid|Groups|NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status; echo "Core: $(ulimit -c)"`
		ex, out, stderr, sb := runBox(t, f.isoSpec(IsolationNone, "/bin/sh", "-c", script), 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Fatalf("exit %+v stderr %q", ex, stderr)
		}
		ev := sb.Evidence()
		if ev.UID == 0 || ev.UID == 65534 || ev.GID == 0 || ev.GID == 65534 {
			t.Errorf("evidence uid %d gid %d: want the sandbox's own ids", ev.UID, ev.GID)
		}
		u, g := strconv.Itoa(ev.UID), strconv.Itoa(ev.GID)
		lines := strings.SplitN(out, "\n", 3)
		if len(lines) != 3 || lines[0] != u || lines[1] != g {
			t.Fatalf("id -u, id -g: %q, want %s and %s", out, u, g)
		}
		st := statusFields(lines[2])
		want := map[string][]string{
			"Uid": {u, u, u, u}, "Gid": {g, g, g, g}, "Groups": nil,
			"NoNewPrivs": {"1"}, "Seccomp": {"2"}, "Core": {"0"},
			"CapInh": {zero}, "CapPrm": {zero}, "CapEff": {zero}, "CapBnd": {zero}, "CapAmb": {zero},
		}
		for k, v := range want {
			if got, ok := st[k]; !ok || strings.Join(got, " ") != strings.Join(v, " ") {
				t.Errorf("%s: %q, want %q", k, got, v)
			}
		}
		for _, name := range []string{"unprivileged-uid", "no-new-privs", "seccomp", "capabilities-dropped"} {
			if m, ok := sb.Applied().Mechanism(name); !ok || !m.Applied {
				t.Errorf("mechanism %s: %+v (present %v)", name, m, ok)
			}
		}
	})
	cases := []struct {
		name string
		args []string
		want string
	}{
		// Unprivileged user namespaces are allowed on the host for any
		// uid: only the filter refuses this one.
		{"unshare user namespace", []string{"./escape", "unshare", "user"}, "ERR EPERM"},
		{"unshare mount namespace", []string{"./escape", "unshare", "mnt"}, "ERR EPERM"},
		{"mount tmpfs", []string{"./escape", "mount", "m"}, "ERR EPERM"},
		{"bpf", []string{"./escape", "bpf"}, "ERR EPERM"},
		// The reaper is not dumpable although it has the subject's uid.
		{"write the reaper's memory", []string{"/bin/sh", "-c", "exec ./escape openw /proc/$PPID/mem"}, "ERR EACCES"},
		// no_new_privs: the setuid bit is ignored (the host /tmp is not
		// nosuid). <uid> is the sandbox's own uid, from its evidence.
		{"setuid-root binary", []string{"./escape-suid", "euid"}, "OK euid=<uid>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, out, stderr, sb := runBox(t, f.isoSpec(IsolationNone, tc.args...), 20*time.Second)
			want := strings.ReplaceAll(tc.want, "<uid>", strconv.Itoa(sb.Evidence().UID))
			if out != want {
				t.Errorf("%v: %q (exit %+v, stderr %q), want %q", tc.args, out, ex, stderr, want)
			}
		})
	}
}

// TestDirectUnreachableRoot: a working directory the sandbox uid cannot
// enter (root-owned 0700) is a start error naming it, never a subject
// that runs as root there, or as its unprivileged uid somewhere else.
func TestDirectUnreachableRoot(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name  string
		setup func(t *testing.T) string // returns the root
	}{
		{"root dir 0700", func(t *testing.T) string {
			d := filepath.Join(t.TempDir(), "private")
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"parent dir 0700", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "private")
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			d := filepath.Join(p, "open")
			if err := os.Mkdir(d, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
			return d
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.setup(t)
			spec := f.isoSpec(IsolationNone, "/bin/sh", "-c", "touch ran")
			spec.Root = root
			sb, err := Start(context.Background(), spec)
			if err == nil {
				_, _ = sb.Wait()
				if derr := sb.Destroy(); derr != nil {
					t.Errorf("destroy: %v", derr)
				}
			}
			if _, serr := os.Stat(filepath.Join(root, "ran")); serr == nil {
				t.Errorf("the subject ran in %s", root)
			}
			// The cgroup, made while the reaper started, is gone by the
			// time Start returns.
			if left := sandboxtest.CgroupsOf(FailedID(err)); err != nil && len(left) > 0 {
				t.Errorf("failed start left cgroups %v", left)
			}
			var se *StepError
			if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), root) {
				t.Fatalf("start: %v, want a *StepError naming %s", err, root)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestDirectRootWithoutSetuid: a root supervisor that cannot switch uid (a
// pod that dropped every capability) must refuse isolation none before
// anything runs, not run the subject as root. The test binary re-executes
// itself through setpriv(1) with CAP_SETUID and CAP_SETGID out of its
// bounding and inheritable sets (so out of its effective set after exec).
func TestDirectRootWithoutSetuid(t *testing.T) {
	if os.Getenv(containerEnv) == "" {
		reexecIn(t, "TestDirectRootWithoutSetuid", false,
			"--inh-caps=-setuid,-setgid", "--ambient-caps=-all", "--bounding-set=-setuid,-setgid")
		return
	}
	if eff, err := ownCapEff(); err != nil || os.Geteuid() != 0 || eff&(1<<unix.CAP_SETUID|1<<unix.CAP_SETGID) != 0 {
		t.Fatalf("setup: euid %d CapEff %x (%v)", os.Geteuid(), eff, err)
	}
	f := directFixture(t)
	marker := filepath.Join(f.root, "ran")
	sb, err := Start(context.Background(), f.isoSpec(IsolationNone, "/bin/sh", "-c", "id -u > ran"))
	if err == nil {
		_, _ = sb.Wait()
		_ = sb.Destroy()
	}
	if b, serr := os.ReadFile(marker); serr == nil {
		t.Fatalf("the subject ran as uid %s (start error %v)", strings.TrimSpace(string(b)), err)
	}
	if !errors.Is(err, ErrCannotDropRoot) {
		t.Fatalf("start: %v, want ErrCannotDropRoot", err)
	}
	if _, ok := errors.AsType[*StepError](err); !ok {
		t.Fatalf("start: %v is not a *StepError", err)
	}
	t.Logf("refused: %v", err)
}

// TestDirectVerifyRefuses: the host-side check of the parked reaper fails
// the start for each confinement a process lacks. The processes are made
// by setpriv(1) with less than the reaper does; each reports ready once
// its credentials are in place.
func TestDirectVerifyRefuses(t *testing.T) {
	sandboxtest.RequireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skipf("setpriv (util-linux) not found: %v", err)
	}
	drop := []string{"--reuid=65534", "--regid=65534", "--clear-groups"}
	with := func(opt string) []string { return append(slices.Clip(drop), opt) }
	cases := []struct {
		name string
		args []string // setpriv options; nil: no setpriv, plain root
		step string   // the StepError's Object
	}{
		{"still root", nil, "uid"},
		{"other uid", []string{"--reuid=65533", "--regid=65534", "--clear-groups"}, "uid"},
		{"other gid", []string{"--reuid=65534", "--regid=65533", "--clear-groups"}, "gid"},
		{"supplementary groups kept", []string{"--reuid=65534", "--regid=65534", "--groups=0"}, "groups"},
		{"inheritable capability kept", with("--inh-caps=+chown"), "capabilities"},
		{"no no_new_privs", drop, "no-new-privs"},
		{"no seccomp", with("--no-new-privs"), "seccomp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			argv := []string{"/bin/sh", "-c", "echo ready; exec sleep 10"}
			if tc.args != nil {
				argv = append(append([]string{setpriv}, tc.args...), argv...)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				t.Fatalf("%v: %q %v", argv, line, err)
			}
			sb := &Sandbox{}
			// The ids the check expects: those drop switches to (an
			// explicit Spec.UID/GID, as far as verifyDirect knows).
			err = sb.verifyDirect(cmd.Process.Pid, &reaper.IDs{UID: 65534, GID: 65534}, nil, done)
			var se *StepError
			if !errors.Is(err, ErrNotVerified) || !errors.As(err, &se) || se.Object != tc.step {
				t.Errorf("verify: %v, want ErrNotVerified at %s", err, tc.step)
			}
		})
	}
}

// TestDirectWithoutPtrace: isolation none must work as a root without
// CAP_SYS_PTRACE (Podman's and Docker's default set). The parked reaper's
// working directory used to be checked through /proc/<pid>/cwd, which a
// root without CAP_SYS_PTRACE may not follow into a process of another
// uid that is not dumpable: the start failed "working directory is not
// the mapped root (permission denied)". The reaper now reports the
// identity of its working directory itself.
func TestDirectWithoutPtrace(t *testing.T) {
	if os.Getenv(containerEnv) == "" {
		reexecIn(t, "TestDirectWithoutPtrace", false,
			"--inh-caps=-sys_ptrace", "--ambient-caps=-all", "--bounding-set=-sys_ptrace")
		return
	}
	if eff, err := ownCapEff(); err != nil || os.Geteuid() != 0 || eff&(1<<unix.CAP_SYS_PTRACE) != 0 {
		t.Fatalf("setup: euid %d CapEff %x (%v)", os.Geteuid(), eff, err)
	}
	f := directFixture(t)
	ex, out, stderr, _ := runBox(t, f.isoSpec(IsolationNone, "/bin/sh", "-c", "pwd -P"), 20*time.Second)
	if ex.ShellStatus() != 0 || out != f.root {
		t.Fatalf("exit %+v out %q stderr %q", ex, out, stderr)
	}
}
