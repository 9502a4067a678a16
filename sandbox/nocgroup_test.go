package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	if roCgroup {
		un, err := exec.LookPath("unshare")
		if err != nil {
			t.Skipf("unshare (util-linux) not found: %v", err)
		}
		script := `set -e
for d in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do mount -o remount,bind,ro "$d"; done
touch /sys/fs/cgroup/memory/tvs-probe 2>/dev/null && { echo "cgroupfs still writable"; exit 3; }
exec "$@"`
		args = append([]string{un, "-m", "--propagation", "private", "/bin/sh", "-c", script, "sh"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), containerEnv+"=1")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("child skipped:\n%s", out)
	}
	if err != nil {
		t.Fatalf("child (%v): %v\n%s", args, err, out)
	}
	t.Logf("child:\n%s", out)
}

// daemonScript leaves a setsid daemon behind (marker in its argv) and
// prints the subject's uid.
func daemonScript(marker string) []string {
	return []string{"/bin/sh", "-c", "(setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &); id -u"}
}

// TestReadOnlyCgroupfs is issue 11's first row: root in a container whose
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
		marker := "765.4321"
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
	t.Run("none", func(t *testing.T) {
		f := directFixture(t)
		marker := "765.4322"
		spec := f.spec(daemonScript(marker)...)
		spec.Isolation = IsolationNone
		ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
		if ex.ShellStatus() != 0 {
			t.Fatalf("exit %+v stderr %q", ex, stderr)
		}
		if e := sb.Evidence(); out != itoa(e.UID) || !inSandboxIDRange(e.UID) {
			t.Errorf("subject uid %q, evidence uid %d: want the sandbox's own", out, e.UID)
		}
		if m, _ := sb.Applied().Mechanism("cgroup"); m.Applied || m.Reason != "cgroup-read-only" {
			t.Errorf("cgroup: %+v, want not applied, cgroup-read-only", m)
		}
		if pids := waitGone(marker, 2*time.Second); len(pids) > 0 {
			t.Errorf("daemon survived the sandbox: %v", pids)
		}
	})
	t.Run("none enforce", func(t *testing.T) {
		f := directFixture(t)
		spec := f.spec("/bin/true")
		spec.Isolation = IsolationNone
		spec.Limits.Enforce = true
		sb, err := Start(context.Background(), spec)
		if err == nil {
			_ = sb.Destroy()
			t.Fatal("started with --limits enforce and a read-only cgroupfs")
		}
		if !errors.Is(err, ErrLimitNotEnforced) {
			t.Fatalf("start: %v, want ErrLimitNotEnforced", err)
		}
	})
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

const sysAdmin = unix.CAP_SYS_ADMIN

// TestRootWithoutSysAdmin is issue 11's nested-namespaces row: root in a
// container has euid 0 without CAP_SYS_ADMIN (and a read-only
// cgroupfs). The rootless choice is made by capabilities: the user
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
	t.Run("default caps", func(t *testing.T) {
		reexecIn(t, "TestRootWithoutSysAdmin", true, "--inh-caps=-sys_admin", "--ambient-caps=-all", "--bounding-set=-sys_admin")
	})
	t.Run("no caps", func(t *testing.T) {
		reexecIn(t, "TestRootWithoutSysAdmin", true, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all")
	})
}

func rootWithoutSysAdminChild(t *testing.T) {
	if os.Geteuid() != 0 || hasCaps(sysAdmin) {
		t.Fatalf("set-up: euid %d, CAP_SYS_ADMIN %v", os.Geteuid(), hasCaps(sysAdmin))
	}
	if err := NamespaceTrial(); err != nil {
		t.Skipf("user namespaces are not allowed here: %v", err)
	}
	f := newFixture(t)
	marker := "765.4323"
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
	if !p.Rootless {
		t.Errorf("probe rootless %v", p.Rootless)
	}
	t.Logf("unprivileged-uid %+v; probe %+v", uid, p.Mechanisms)
}
