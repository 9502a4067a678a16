package sandbox

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"
)

// The rootless choice is made by capabilities, never by the euid alone:
// root inside a container has euid 0 without CAP_SYS_ADMIN, and there
// the namespaces can only be made inside a user namespace of ours, which
// maps only our own ids (a range would need libcontainer's privileged
// path, whose mount-source thread setns()es from the host side and so
// needs CAP_SYS_ADMIN; its rootless path, which we take, keeps the
// caller's supplementary groups). For root that means the subject is host
// uid 0 with no capability anywhere, pivoted into the sandbox's root:
// reported as such (unprivileged-uid not applied, uid-0-in-userns-is-
// host-root), never claimed as an unprivileged uid. Mapping uid 0 needs
// CAP_SETFCAP (Linux 5.12+), which container runtimes grant by default;
// without it the namespace trial fails and says so.

// ownCapEff is this process's effective capability set.
func ownCapEff() (uint64, error) {
	st, err := procStatus(os.Getpid())
	if err != nil {
		return 0, err
	}
	eff, err := strconv.ParseUint(st["CapEff"], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("CapEff %q: %w", st["CapEff"], err)
	}
	return eff, nil
}

// rootfulCaps are the capabilities the privileged path needs in the
// initial user namespace, each for a step that fails without it:
// CAP_SYS_ADMIN for the namespaces and mounts, CAP_NET_ADMIN to bring up
// the new network namespace's loopback (owned by the initial user
// namespace, it is ours to configure only with it: without it
// libcontainer's init fails with a bare EPERM), CAP_SYS_PTRACE to read
// the parked init's /proc/<pid>/root and ns links, which verification
// needs (the init is not dumpable), and CAP_SETUID/CAP_SETGID to switch
// the subject to its unprivileged ids. A root that lacks any of them —
// `podman run --cap-add SYS_ADMIN` is the common case — takes the
// rootless path, where a user namespace of ours gives all of them over
// the sandbox's namespaces.
var rootfulCaps = []struct {
	capability uint
	name       string
}{
	{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
	{unix.CAP_NET_ADMIN, "CAP_NET_ADMIN"},
	{unix.CAP_SYS_PTRACE, "CAP_SYS_PTRACE"},
	{unix.CAP_SETUID, "CAP_SETUID"},
	{unix.CAP_SETGID, "CAP_SETGID"},
}

// rootlessMode reports whether a sandbox must take the rootless path: a
// user namespace mapping only our own ids.
func rootlessMode() bool {
	return rootlessReason() != ""
}

// rootlessReason says why the rootless path is taken ("" when it is
// not): not root, or the privileged capabilities we lack.
func rootlessReason() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	eff, err := ownCapEff()
	if err != nil {
		return "capabilities unreadable: " + err.Error()
	}
	var missing []string
	for _, c := range rootfulCaps {
		if eff&(1<<c.capability) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "root without " + strings.Join(missing, ", ")
}

// cgroupAccess says which cgroup directories a root sandbox can create:
// in containers /sys/fs/cgroup is usually mounted read-only, or not
// delegated, and then no cgroup of ours can be made there.
type cgroupAccess struct {
	// denied maps each controller ("" for cgroup v2) whose cgroup cannot
	// be made to the reason word ("cgroup-read-only", "cgroup-not-writable").
	denied map[string]string
	// detail is the first failure with its path and errno, for evidence
	// and messages; "" when every controller is writable.
	detail string
}

func (a cgroupAccess) writable(ctrl string) bool {
	if a.denied == nil {
		return true
	}
	if _, ok := a.denied[ctrl]; ok {
		return false
	}
	if cgroups.IsCgroup2UnifiedMode() {
		_, ok := a.denied[""]
		return !ok
	}
	return true
}

// any reports whether some controller cannot be made.
func (a cgroupAccess) any() bool { return len(a.denied) > 0 }

// reason is the word for ctrl when it is denied.
func (a cgroupAccess) reason(ctrl string) string {
	if r, ok := a.denied[ctrl]; ok {
		return r
	}
	if r, ok := a.denied[""]; ok && cgroups.IsCgroup2UnifiedMode() {
		return r
	}
	return ""
}

// probeCgroupAccess finds, for the cgroup the sandbox id would get (the
// paths libcontainer's manager computes), the nearest existing directory
// of each and whether it can be written. It creates nothing.
func probeCgroupAccess(id string) cgroupAccess {
	paths, err := sandboxCgroupPaths(id)
	if err != nil {
		return noCgroup(err)
	}
	return probeCgroupPaths(paths)
}

// noCgroup is the access verdict when the cgroup's paths cannot even be
// computed (no cgroup mount).
func noCgroup(err error) cgroupAccess {
	return cgroupAccess{denied: map[string]string{"": "no-cgroup"}, detail: "cgroup manager: " + err.Error()}
}

// probeCgroupPaths is probeCgroupAccess for paths already computed
// (sandboxCgroupPaths).
func probeCgroupPaths(paths map[string]string) cgroupAccess {
	a := cgroupAccess{}
	for _, ctrl := range slices.Sorted(maps.Keys(paths)) {
		dir := paths[ctrl]
		for {
			if _, err := os.Stat(dir); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		err := unix.Access(dir, unix.W_OK)
		if err == nil {
			continue
		}
		word := "cgroup-not-writable"
		if errors.Is(err, unix.EROFS) {
			word = "cgroup-read-only"
		}
		if a.denied == nil {
			a.denied = map[string]string{}
		}
		a.denied[ctrl] = word
		if a.detail == "" {
			a.detail = fmt.Sprintf("%s: %s (%s)", dir, unix.ErrnoName(errnoOf(err)), word)
		}
	}
	return a
}

// v1Subsystems are the hierarchies in which libcontainer's fs manager
// makes a cgroup, in its order (fs.subsystems, unexported); on the hybrid
// layout the unified hierarchy ("") is added. TestCgroupPathsAsManager
// holds sandboxCgroupPaths equal to the manager's own.
var v1Subsystems = []string{"cpuset", "devices", "memory", "cpu", "cpuacct", "pids", "blkio", "hugetlb",
	"net_cls", "net_prio", "perf_event", "freezer", "rdma", "name=systemd", "misc"}

// hybridMountpoint is where the hybrid layout mounts the unified
// hierarchy (libcontainer's constant of the same name).
const hybridMountpoint = "/sys/fs/cgroup/unified"

// sandboxCgroupPaths is where sandbox id's cgroup is, or would be made,
// in each hierarchy: exactly the paths libcontainer's manager.New
// computes (for the fs manager on v1, keyed by subsystem; "" alone on
// v2), which reads /proc/self/cgroup again for every subsystem, 16 times
// on a hybrid host. Here it is read once; the cgroup mounts come from
// libcontainer's cached mountinfo. Pass the result to
// manager.NewWithPaths (a copy: Destroy empties the manager's map).
func sandboxCgroupPaths(id string) (map[string]string, error) {
	return sandboxCgroupPathsIn(id, nil)
}

// sandboxCgroupPathsIn is sandboxCgroupPaths for the v1 hierarchies of
// only (nil: all of them; "" the hybrid layout's unified one), so that a
// caller that uses a few (the direct runner: directHierarchies) looks up
// no other mount. On cgroup v2 only is ignored: there is one hierarchy.
func sandboxCgroupPathsIn(id string, only []string) (map[string]string, error) {
	inner := cgroupParent + "/" + id
	if cgroups.IsCgroup2UnifiedMode() {
		// fs2 reads /proc/self/cgroup once already.
		m, err := manager.New(&cgroups.Cgroup{Path: inner, Resources: &cgroups.Resources{SkipDevices: true}})
		if err != nil {
			return nil, err
		}
		return m.GetPaths(), nil
	}
	own, err := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	names := v1Subsystems
	if cgroups.IsCgroup2HybridMode() {
		names = append(slices.Clip(names), "")
	}
	paths := make(map[string]string, len(names))
	for _, name := range names {
		if only != nil && !slices.Contains(only, name) {
			continue
		}
		// libcontainer's GetOwnCgroupPath, without the file read.
		cg, ok := own[name]
		if !ok {
			cg, ok = own[cgroups.CgroupNamePrefix+name]
		}
		if !ok {
			continue // not on this host: the manager skips it too
		}
		if name == "" {
			paths[name] = filepath.Join(hybridMountpoint, inner)
			continue
		}
		mnt, root, err := cgroups.FindCgroupMountpointAndRoot("", name)
		if cgroups.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, cg)
		if err != nil {
			return nil, err
		}
		paths[name] = filepath.Join(mnt, rel, inner)
	}
	if len(paths) == 0 {
		return nil, errors.New("no cgroup mount found in mountinfo")
	}
	return paths, nil
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// cgroupHint is the fix for a cgroup that cannot be made.
const cgroupHint = "the limits need a writable cgroup: run the container with --privileged or a writable, delegated /sys/fs/cgroup (cgroup v2 with --cgroupns=private), or drop --limits enforce"
