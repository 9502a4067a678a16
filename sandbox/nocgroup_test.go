package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// containerEnv marks a re-executed test binary that runs inside a
// simulated container set-up (see reexecIn).
const containerEnv = "TVS_TEST_CONTAINER_SETUP"

// reexecIn runs the test named test again in a simulated container
// set-up: roCgroup runs it in a new mount namespace where every cgroup
// hierarchy (and /sys/fs/cgroup itself) is remounted read-only, as a
// container's default /sys/fs/cgroup is; setpriv, when not empty, are
// setpriv(1) arguments that drop capabilities (root without
// CAP_SYS_ADMIN). The child runs the same test with containerEnv set;
// its failures fail this test, its skip skips it.
func reexecIn(t *testing.T, test string, roCgroup bool, setpriv ...string) {
	t.Helper()
	script := ""
	if roCgroup {
		script = `set -e
for d in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do mount -o remount,bind,ro "$d"; done
touch /sys/fs/cgroup/memory/tvs-probe 2>/dev/null && { echo "cgroupfs still writable"; exit 3; }
exec "$@"`
	}
	reexecWith(t, test, script, setpriv...)
}

// reexecWith is reexecIn with the mount namespace's set-up given as a
// shell script (it ends by exec'ing "$@"; none when empty).
func reexecWith(t *testing.T, test, script string, setpriv ...string) {
	t.Helper()
	sandboxtest.RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{exe, "-test.run=^" + test + "$", "-test.count=1", "-test.v"}
	if len(setpriv) > 0 {
		sp, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skipf("setpriv (util-linux) not found: %v", err)
		}
		args = append(append([]string{sp}, setpriv...), args...)
	}
	if script != "" {
		un, err := exec.LookPath("unshare")
		if err != nil {
			t.Skipf("unshare (util-linux) not found: %v", err)
		}
		args = append([]string{un, "-m", "--propagation", "private", "/bin/sh", "-c", script, "sh"}, args...)
	}
	runChild(t, exec.Command(args[0], args[1:]...), "")
}

// runChild runs cmd, a re-executed test binary, with containerEnv set to
// mode ("1" when empty): its failures fail t, its skip skips t.
func runChild(t *testing.T, cmd *exec.Cmd, mode string) {
	t.Helper()
	if mode == "" {
		mode = "1"
	}
	cmd.Env = append(os.Environ(), containerEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("child skipped:\n%s", out)
	}
	if err != nil {
		t.Fatalf("child (%v): %v\n%s", cmd.Args, err, out)
	}
	t.Logf("child:\n%s", out)
}

// reexecInUserNS runs the test named test again as root of a new user
// namespace with the given maps (written by us, root, so any ranges may
// be given) and a mount namespace it owns, as in a rootless container;
// the child's containerEnv is mode.
func reexecInUserNS(t *testing.T, test, mode string, uids, gids []syscall.SysProcIDMap) {
	t.Helper()
	sandboxtest.RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: uids, GidMappings: gids, GidMappingsEnableSetgroups: true,
	}
	runChild(t, cmd, mode)
}

// TestNarrowUserNamespace is the rootless-Podman row: the supervisor is
// root of a user namespace that maps 0 and a range of 65536 subordinate
// ids (1..65536 inside), not the reserved range. A per-sandbox id must be
// one of the mapped ids — setresuid to an unmapped one fails with EINVAL,
// which failed every isolation-none run there — and a namespace that
// maps no range at all refuses to run the subject as root (ErrNoIDRange).
func TestNarrowUserNamespace(t *testing.T) {
	switch os.Getenv(containerEnv) {
	case "":
	case "range":
		narrowUserNSChild(t)
		return
	case "single":
		singleIDUserNSChild(t)
		return
	default:
		return
	}
	root := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	subordinate := append(slices.Clone(root), syscall.SysProcIDMap{ContainerID: 1, HostID: 300000, Size: 65536})
	t.Run("subordinate range", func(t *testing.T) {
		reexecInUserNS(t, "TestNarrowUserNamespace", "range", subordinate, subordinate)
	})
	t.Run("single id", func(t *testing.T) {
		reexecInUserNS(t, "TestNarrowUserNamespace", "single", root, root)
	})
}

func narrowUserNSChild(t *testing.T) {
	w, err := sandboxIDWindow()
	if err != nil || w != (idWindow{minNestedID, 65534 - minNestedID}) {
		t.Fatalf("window %+v (%v), want %d..65533", w, err, minNestedID)
	}
	for _, iso := range []Isolation{IsolationNone, IsolationOS} {
		t.Run(string(iso), func(t *testing.T) {
			f := directFixture(t)
			spec := f.isoSpec(iso, "/bin/sh", "-c", "id -u")
			ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
			if ex.ShellStatus() != 0 {
				t.Fatalf("exit %+v stderr %q", ex, stderr)
			}
			uid, _ := strconv.Atoi(out)
			if e := sb.Evidence(); uid != e.UID || !w.contains(uid) {
				t.Errorf("subject uid %q, evidence uid %d: want one in the mapped window %+v", out, e.UID, w)
			}
		})
	}
}

func singleIDUserNSChild(t *testing.T) {
	if _, err := sandboxIDWindow(); !errors.Is(err, ErrNoIDRange) {
		t.Fatalf("window: %v, want ErrNoIDRange", err)
	}
	f := directFixture(t)
	spec := f.isoSpec(IsolationNone, "/bin/true")
	sb, err := Start(context.Background(), spec)
	if err == nil {
		_ = sb.Destroy()
		t.Fatal("isolation none started with no uid to drop to")
	}
	if !errors.Is(err, ErrNoIDRange) {
		t.Fatalf("start: %v, want ErrNoIDRange", err)
	}
}

// daemonScript leaves a setsid daemon behind (marker in its argv) and
// prints the subject's uid.
func daemonScript(marker string) []string {
	return []string{"/bin/sh", "-c", "(setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &); id -u"}
}

// TestReadOnlyCgroupfs is the common CI container: root in a container whose
// /sys/fs/cgroup is read-only. The os tier must still give filesystem
// and network confinement, say which limits are not enforced and why,
// and kill a daemonized grandchild through the PID namespace; isolation
// none must run (subject still on its own uid), killing the tree through
// the subreaper and process group; --limits enforce refuses in both; and
// probe's verdict must equal run's.
func TestReadOnlyCgroupfs(t *testing.T) {
	if os.Getenv(containerEnv) == "" {
		reexecIn(t, "TestReadOnlyCgroupfs", true)
		return
	}
	t.Run("os", func(t *testing.T) {
		f := newFixture(t)
		marker := sandboxtest.SleepMarker(6)
		ex, out, stderr, sb := runBox(t, f.spec(daemonScript(marker)...), 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Fatalf("exit %+v stderr %q", ex, stderr)
		}
		a := sb.Applied()
		if !a.Filesystem.Confined || !a.Network.Confined {
			t.Errorf("filesystem %+v network %+v, want both confined", a.Filesystem, a.Network)
		}
		for _, name := range []string{"cgroup-memory", "cgroup-pids"} {
			if m, _ := a.Mechanism(name); m.Applied || m.Reason != "cgroup-read-only" {
				t.Errorf("%s: %+v, want not applied, cgroup-read-only", name, m)
			}
		}
		if m, _ := a.Mechanism("device-allow-list"); m.Applied || !strings.Contains(m.Reason, "CAP_MKNOD") {
			t.Errorf("device-allow-list: %+v", m)
		}
		if len(a.Unenforced()) != 2 {
			t.Errorf("unenforced %+v, want memory and pids", a.Unenforced())
		}
		if _, ok, _ := sb.Processes(); ok {
			t.Error("Processes claims a cgroup listing where no cgroup was made")
		}
		if e := sb.Evidence(); !strings.Contains(e.CgroupError, "EROFS") {
			t.Errorf("evidence cgroup error %q, want EROFS", e.CgroupError)
		}
		if out == "0" || out == "" {
			t.Errorf("subject uid %q", out)
		}
		if pids := waitGone(marker, 2*time.Second); len(pids) > 0 {
			t.Errorf("daemon survived the sandbox: %v", pids)
		}
	})
	t.Run("os enforce", func(t *testing.T) {
		f := newFixture(t)
		spec := f.spec("/bin/true")
		spec.Limits.Enforce = true
		sb, err := Start(context.Background(), spec)
		if err == nil {
			_ = sb.Destroy()
			t.Fatal("started with --limits enforce and a read-only cgroupfs")
		}
		if !errors.Is(err, ErrLimitNotEnforced) || !strings.Contains(err.Error(), "EROFS") {
			t.Fatalf("start: %v, want ErrLimitNotEnforced naming EROFS", err)
		}
	})
	checkNoneWithoutCgroup(t, "read-only cgroupfs", "cgroup-read-only", "EROFS", sandboxtest.SleepMarker(7))
	checkDirectConsoleWithoutCgroup(t, sandboxtest.SleepMarker(63))
	t.Run("probe", func(t *testing.T) {
		p := Probe(context.Background(), t.TempDir())
		if !p.Filesystem.Confined || !p.Network.Confined {
			t.Errorf("probe: filesystem %+v network %+v, want both confined as run gets", p.Filesystem, p.Network)
		}
		for _, m := range p.Mechanisms {
			if m.Name == "cgroup-memory" && (m.OK || m.Detail != "cgroup-read-only") {
				t.Errorf("probe %+v", m)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// checkNoneWithoutCgroup runs isolation none where its cgroup cannot be
// made (what: how, for messages; reason: the mechanism's word; errno: its
// name in the evidence and the refusal). The subject runs as the
// sandbox's own uid with no cgroup, said so with the errno and no paths,
// its daemon dies with the sandbox (marker), and --limits enforce refuses
// without leaving a cgroup.
func checkNoneWithoutCgroup(t *testing.T, what, reason, errno, marker string) {
	t.Run("none", func(t *testing.T) {
		f := directFixture(t)
		ex, out, stderr, sb := runBox(t, f.isoSpec(IsolationNone, daemonScript(marker)...), 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Fatalf("exit %+v stderr %q", ex, stderr)
		}
		if e := sb.Evidence(); out != itoa(e.UID) || !inSandboxIDRange(e.UID) {
			t.Errorf("subject uid %q, evidence uid %d: want the sandbox's own", out, e.UID)
		}
		if m, _ := sb.Applied().Mechanism("cgroup"); m.Applied || m.Reason != reason {
			t.Errorf("cgroup: %+v, want not applied, %s", m, reason)
		}
		if e := sb.Evidence(); !strings.Contains(e.CgroupError, errno+" ("+reason+")") || len(e.CgroupPaths) != 0 {
			t.Errorf("evidence cgroup error %q paths %v, want %s and no paths", e.CgroupError, e.CgroupPaths, errno)
		}
		if pids := waitGone(marker, 2*time.Second); len(pids) > 0 {
			t.Errorf("daemon survived the sandbox: %v", pids)
		}
	})
	t.Run("none enforce", func(t *testing.T) {
		f := directFixture(t)
		spec := f.isoSpec(IsolationNone, "/bin/true")
		spec.Limits.Enforce = true
		sb, err := Start(context.Background(), spec)
		if err == nil {
			_ = sb.Destroy()
			t.Fatalf("started with --limits enforce and a %s", what)
		}
		if !errors.Is(err, ErrLimitNotEnforced) || !strings.Contains(err.Error(), reason) || !strings.Contains(err.Error(), errno) {
			t.Fatalf("start: %v, want ErrLimitNotEnforced naming %s and %s", err, reason, errno)
		}
		if id := FailedID(err); id == "" || len(sandboxtest.CgroupsOf(id)) != 0 {
			t.Errorf("failed start %q left cgroups %v", id, sandboxtest.CgroupsOf(id))
		}
	})
}

// TestRootWithoutSysAdmin is root in a container (nested namespaces): it
// has euid 0 without CAP_SYS_ADMIN (and a read-only cgroupfs), or with it
// but without another capability the privileged path needs (`--cap-add
// SYS_ADMIN` alone: no CAP_NET_ADMIN to bring up the loopback, no
// CAP_SYS_PTRACE to verify the init; on the privileged path either would
// fail the start). The rootless choice is made by capabilities: the user
// namespace maps only our own ids, and the subject being host uid 0 is
// said, not claimed as unprivileged. Filesystem and network are os, a
// daemon dies with the sandbox, and probe says what run gets. With no
// capability at all (no CAP_SETFCAP) uid 0 cannot be mapped: skipped
// with the trial's error.
func TestRootWithoutSysAdmin(t *testing.T) {
	if os.Getenv(containerEnv) != "" {
		rootWithoutSysAdminChild(t)
		return
	}
	for _, c := range []string{"sys_admin", "net_admin", "sys_ptrace"} {
		t.Run("without "+c, func(t *testing.T) {
			reexecIn(t, "TestRootWithoutSysAdmin", true, "--inh-caps=-"+c, "--ambient-caps=-all", "--bounding-set=-"+c)
		})
	}
	t.Run("no caps", func(t *testing.T) {
		reexecIn(t, "TestRootWithoutSysAdmin", true, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all")
	})
}

func rootWithoutSysAdminChild(t *testing.T) {
	if why := rootlessReason(); os.Geteuid() != 0 || !strings.HasPrefix(why, "root without CAP_") {
		t.Fatalf("set-up: euid %d, rootless because %q", os.Geteuid(), why)
	}
	if err := NamespaceTrial(); err != nil {
		t.Skipf("user namespaces are not allowed here: %v", err)
	}
	f := newFixture(t)
	marker := sandboxtest.SleepMarker(8)
	spec := f.spec(daemonScript(marker)...)
	ex, _, stderr, sb := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q", ex, stderr)
	}
	a := sb.Applied()
	if !a.Filesystem.Confined || !a.Network.Confined {
		t.Errorf("filesystem %+v network %+v, want both confined", a.Filesystem, a.Network)
	}
	if m, _ := a.Mechanism("user-namespace"); !m.Applied {
		t.Errorf("user-namespace %+v, want applied", m)
	}
	uid, _ := a.Mechanism("unprivileged-uid")
	if uid.Applied || uid.Reason != "uid-0-in-userns-is-host-root" {
		t.Errorf("unprivileged-uid %+v, want not applied: the subject is host root", uid)
	}
	if pids := waitGone(marker, 2*time.Second); len(pids) > 0 {
		t.Errorf("daemon survived the sandbox: %v", pids)
	}
	p := Probe(context.Background(), t.TempDir())
	if p.Filesystem.Confined != a.Filesystem.Confined || p.Network.Confined != a.Network.Confined {
		t.Errorf("probe filesystem %+v network %+v, run got %+v %+v", p.Filesystem, p.Network, a.Filesystem, a.Network)
	}
	if !p.Rootless || p.RootlessReason != rootlessReason() {
		t.Errorf("probe rootless %v (%q)", p.Rootless, p.RootlessReason)
	}
	t.Logf("unprivileged-uid %+v; probe %+v", uid, p.Mechanisms)
}
