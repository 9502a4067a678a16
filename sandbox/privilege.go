package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	m, err := manager.New(&cgroups.Cgroup{Path: cgroupParent + "/" + id, Resources: &cgroups.Resources{SkipDevices: true}})
	if err != nil {
		return cgroupAccess{denied: map[string]string{"": "no-cgroup"}, detail: "cgroup manager: " + err.Error()}
	}
	paths := m.GetPaths()
	a := cgroupAccess{}
	names := make([]string, 0, len(paths))
	for k := range paths {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, ctrl := range names {
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

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// cgroupHint is the fix for a cgroup that cannot be made.
const cgroupHint = "the limits need a writable cgroup: run the container with --privileged or a writable, delegated /sys/fs/cgroup (cgroup v2 with --cgroupns=private), or drop --limits enforce"
