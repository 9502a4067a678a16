package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// TestDirectReaperInCgroup: as root, isolation none's reaper is in the
// sandbox's cgroup in every hierarchy it was made in before it forks the
// subject. The subject, at its start, finds itself and its parent (the
// reaper) there: a subject released before the reaper joined would start
// in the supervisor's cgroups, outside its limits.
func TestDirectReaperInCgroup(t *testing.T) {
	f := directFixture(t)
	script := `cat /proc/self/cgroup; echo "ppid $PPID"; cat /proc/$PPID/cgroup`
	ex, out, stderr, sb := runBox(t, f.isoSpec(IsolationNone, "/bin/sh", "-c", script), 20*time.Second)
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q", ex, stderr)
	}
	if m, _ := sb.Applied().Mechanism("cgroup"); !m.Applied {
		t.Fatalf("cgroup: %+v, want applied", m)
	}
	e := sb.Evidence()
	for _, ctrl := range []string{"pids", "memory"} {
		if _, ok := e.CgroupPaths[ctrl]; !ok {
			t.Errorf("evidence cgroup paths %v: no %s", e.CgroupPaths, ctrl)
		}
	}
	own, reaper, ok := strings.Cut(out, "\nppid "+strconv.Itoa(e.InitPID)+"\n")
	if !ok {
		t.Fatalf("output %q: the subject's parent is not the reaper %d", out, e.InitPID)
	}
	want := "/" + cgroupParent + "/" + sb.ID()
	for name, table := range map[string]string{"subject": own, "reaper": reaper} {
		for ctrl := range e.CgroupPaths {
			if ctrl == "devices" {
				continue // SkipDevices: never made
			}
			if got := cgroupLine(table, ctrl); !strings.HasSuffix(got, want) {
				t.Errorf("%s's %q cgroup is %q, want .../%s\n%s", name, ctrl, got, want, table)
			}
		}
	}
}

// cgroupLine is the cgroup path of hierarchy ctrl ("" for the unified
// one, "name=systemd" as named) in a /proc/<pid>/cgroup table.
func cgroupLine(table, ctrl string) string {
	for _, line := range strings.Split(table, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if ctrl == "" && f[1] == "" {
			return f[2]
		}
		for _, c := range strings.Split(f[1], ",") {
			if c != "" && c == ctrl {
				return f[2]
			}
		}
	}
	return ""
}

// TestUndelegatedCgroupfs is TestReadOnlyCgroupfs's other case: a
// cgroupfs that is mounted writable but whose directories root may not
// write (a hierarchy not delegated to a container's root: owned by a
// host uid that root there does not override). Simulated by a 0555 tmpfs
// over the sandboxes' parent cgroup in every hierarchy, in a mount
// namespace of the test's own, and a root without CAP_DAC_OVERRIDE.
// Isolation none must run without a cgroup, say cgroup-not-writable with
// the path and errno, and refuse with --limits enforce.
func TestUndelegatedCgroupfs(t *testing.T) {
	if os.Getenv(containerEnv) == "" {
		reexecWith(t, "TestUndelegatedCgroupfs", undelegatedScript,
			"--inh-caps=-dac_override", "--ambient-caps=-all", "--bounding-set=-dac_override")
		return
	}
	if eff, err := ownCapEff(); err != nil || os.Geteuid() != 0 || eff&(1<<unix.CAP_DAC_OVERRIDE) != 0 {
		t.Fatalf("setup: euid %d CapEff %x (%v)", os.Geteuid(), eff, err)
	}
	checkNoneWithoutCgroup(t, "undelegated cgroupfs", "cgroup-not-writable", "EACCES", sandboxtest.SleepMarker(9))
}

// undelegatedScript mounts a 0555 tmpfs over termverify-sandbox under
// our own cgroup in every hierarchy (see TestUndelegatedCgroupfs).
const undelegatedScript = `set -e
while IFS=: read -r _ ctrls path; do
	case "$ctrls" in
	"") dir=/sys/fs/cgroup/unified; [ -d "$dir" ] || dir=/sys/fs/cgroup ;;
	name=*) dir=/sys/fs/cgroup/${ctrls#name=} ;;
	*) dir=/sys/fs/cgroup/${ctrls%%,*} ;;
	esac
	[ -d "$dir" ] || continue
	d="$dir${path%/}/termverify-sandbox"
	mkdir -p "$d"
	mount -t tmpfs -o mode=0555 tvs-undelegated "$d"
done </proc/self/cgroup
exec "$@"`

// TestDirectCgroupRemovedOnFailedStart: the direct runner's cgroup is
// made before the reaper starts in it. A start that then fails
// verification (the parked reaper is killed, so the host-side check of
// it fails) must remove the cgroup before Start returns.
func TestDirectCgroupRemovedOnFailedStart(t *testing.T) {
	f := directFixture(t)
	spec := f.isoSpec(IsolationNone, "/bin/sh", "-c", "touch ran")
	var (
		mu   sync.Mutex
		id   string
		made []string // the cgroup's directories when it was done
	)
	spec.testHook = func(point, arg string) {
		switch point {
		case hookDirectCgroup:
			mu.Lock()
			id = arg
			mu.Unlock()
		case hookDirectCgroupEnd:
			mu.Lock()
			made = sandboxtest.CgroupsOf(arg)
			mu.Unlock()
		case hookDirectParked:
			killDead(t, arg)
		}
	}
	sb, err := Start(context.Background(), spec)
	if err == nil {
		_, _ = sb.Wait()
		_ = sb.Destroy()
		t.Fatal("started after the parked reaper was killed")
	}
	var se *StepError
	if !errors.As(err, &se) || se.Step != "verify" {
		t.Fatalf("start: %v, want a verify step error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if id == "" {
		t.Fatal("no cgroup was made")
	}
	if len(made) < 2 {
		t.Errorf("cgroup directories when made: %v, want memory and pids at least", made)
	}
	if left := sandboxtest.CgroupsOf(id); len(left) > 0 {
		t.Errorf("failed start left cgroups %v", left)
	}
	if _, serr := os.Stat(filepath.Join(f.root, "ran")); serr == nil {
		t.Error("the subject ran")
	}
}

// TestDirectCgroupJoinVerified: the reaper moves itself into the cgroup,
// and the supervisor does not take its word for it. A hierarchy's
// directory removed after it was opened for the reaper (its tasks file is
// gone) must fail the start, naming the directory and the reaper's error,
// never claim a cgroup the reaper is not in; and nothing is left.
func TestDirectCgroupJoinVerified(t *testing.T) {
	f := directFixture(t)
	spec := f.isoSpec(IsolationNone, "/bin/sh", "-c", "touch ran")
	var removed string
	spec.testHook = func(point, arg string) {
		if point != hookDirectCgroupOpen {
			return
		}
		for _, d := range sandboxtest.CgroupsOf(arg) {
			if strings.Contains(d, "/pids/") {
				if err := os.Remove(d); err != nil {
					t.Errorf("remove %s: %v", d, err)
				}
				removed = d
			}
		}
	}
	sb, err := Start(context.Background(), spec)
	if err == nil {
		_, _ = sb.Wait()
		m, _ := sb.Applied().Mechanism("cgroup")
		_ = sb.Destroy()
		t.Fatalf("started with the pids cgroup removed; cgroup mechanism %+v", m)
	}
	if removed == "" {
		t.Fatal("no pids cgroup to remove")
	}
	var se *StepError
	if !errors.As(err, &se) || se.Step != "cgroup" || !strings.Contains(err.Error(), removed) || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("start: %v, want a cgroup step error naming %s and ENOENT", err, removed)
	}
	if left := sandboxtest.CgroupsOf(FailedID(err)); len(left) > 0 {
		t.Errorf("failed start left cgroups %v", left)
	}
	if _, serr := os.Stat(filepath.Join(f.root, "ran")); serr == nil {
		t.Error("the subject ran")
	}
}

// killDead SIGKILLs the parked reaper (pid in decimal) and waits until
// it is dead: a zombie not yet reaped, or gone.
func killDead(t *testing.T, pid string) {
	t.Helper()
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Errorf("reaper pid %q: %v", pid, err)
		return
	}
	_ = unix.Kill(n, unix.SIGKILL)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return
		}
		if _, rest, ok := strings.Cut(string(b), ") "); ok && (strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X")) {
			return
		}
	}
	t.Errorf("reaper %s not dead", pid)
}

// TestDirectCgroupLimits: isolation none writes its cgroup v1 files
// itself (makeV1Cgroup), not through libcontainer's manager, so nothing
// but this test holds it to the limits asked for: each hierarchy's file,
// read from the host once the cgroup is made, must hold the Spec's value
// (memory+swap too where the kernel accounts swap), and the subject must
// run in it.
func TestDirectCgroupLimits(t *testing.T) {
	if cgroups.IsCgroup2UnifiedMode() {
		t.Skip("cgroup v2 only: the direct runner uses libcontainer's fs2 manager there")
	}
	f := directFixture(t)
	spec := f.isoSpec(IsolationNone, "/bin/true")
	spec.Limits.MemoryBytes, spec.Limits.Pids, spec.Limits.CPUs = 96<<20, 37, 0.25
	want := map[string]map[string]string{
		"memory": {"memory.limit_in_bytes": strconv.Itoa(96 << 20), "memory.memsw.limit_in_bytes": strconv.Itoa(96 << 20)},
		"pids":   {"pids.max": "37"},
		"cpu":    {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "25000"},
	}
	var mu sync.Mutex
	got := map[string]map[string]string{}
	spec.testHook = func(point, id string) {
		if point != hookDirectCgroupEnd {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, dir := range sandboxtest.CgroupsOf(id) {
			for ctrl, files := range want {
				if !strings.Contains(dir, "/"+ctrl+"/") && !strings.Contains(dir, "/"+ctrl+",") {
					continue
				}
				got[ctrl] = map[string]string{}
				for name := range files {
					b, err := os.ReadFile(filepath.Join(dir, name))
					if errors.Is(err, os.ErrNotExist) && name == "memory.memsw.limit_in_bytes" {
						got[ctrl][name] = files[name] // no swap accounting here
						continue
					}
					got[ctrl][name] = strings.TrimSpace(string(b))
				}
			}
		}
	}
	ex, _, stderr, sb := runBox(t, spec, 20*time.Second)
	if ex.ShellStatus() != 0 {
		t.Fatalf("exit %+v stderr %q", ex, stderr)
	}
	if m, _ := sb.Applied().Mechanism("cgroup"); !m.Applied {
		t.Fatalf("cgroup: %+v, want applied", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for ctrl, files := range want {
		if _, ok := sb.Evidence().CgroupPaths[ctrl]; !ok {
			continue // hierarchy absent on this host
		}
		for name, v := range files {
			if got[ctrl][name] != v {
				t.Errorf("%s: %q, want %q", name, got[ctrl][name], v)
			}
		}
	}
}
