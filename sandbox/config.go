package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/cgroups"
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// userNSBase is the host id of container root in a root supervisor's
// opt-in user namespace, and the base of the range mapped for ids the
// caller chose (container ids 0..65535 to userNSBase+id). It is far above
// any id a distribution hands out, so these ids own nothing on the host.
// The subject's own ids are not in it by default: they are the
// sandbox's per-sandbox ids (uid.go, userNSMappings).
const userNSBase = 1 << 30

// ttyGID is the devpts instance's group (devptsMount), mapped in a root
// supervisor's user namespace so that the mount option is valid.
const ttyGID = 5

// userNSMappings are the uid and gid maps of the sandbox's user
// namespace. Rootless, only the caller's own ids can be mapped, to 0.
// As root with the subject's default ids, container root (which only
// libcontainer's set-up runs as, before the subject) is userNSBase, the
// tty group userNSBase+5, and the subject's DefaultUID/DefaultGID its
// sandbox's own host id (hostUID, hostGID): no two sandboxes' subjects
// share a host uid, with or without a user namespace. With ids the
// caller chose, the whole container range 0..65535 is mapped to
// userNSBase+id, as those ids may be any of it.
func userNSMappings(s *Spec, rootless bool, hostUID, hostGID int) (uids, gids []configs.IDMap) {
	if rootless {
		return []configs.IDMap{{ContainerID: 0, HostID: int64(unix.Geteuid()), Size: 1}},
			[]configs.IDMap{{ContainerID: 0, HostID: int64(unix.Getegid()), Size: 1}}
	}
	if hostUID == userNSBase+s.UID && hostGID == userNSBase+s.GID {
		return []configs.IDMap{{ContainerID: 0, HostID: userNSBase, Size: 65536}},
			[]configs.IDMap{{ContainerID: 0, HostID: userNSBase, Size: 65536}}
	}
	uids = []configs.IDMap{{ContainerID: 0, HostID: userNSBase, Size: 1}, {ContainerID: int64(s.UID), HostID: int64(hostUID), Size: 1}}
	gids = []configs.IDMap{{ContainerID: 0, HostID: userNSBase, Size: 1}, {ContainerID: ttyGID, HostID: userNSBase + ttyGID, Size: 1}, {ContainerID: int64(s.GID), HostID: int64(hostGID), Size: 1}}
	return uids, gids
}

// maskedPaths and readonlyPaths are runc's defaults for /proc and /sys.
var (
	maskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// sandboxDevices is the minimal /dev: null, zero, full, random, urandom, tty.
func sandboxDevices() []*devconfig.Device {
	dev := func(path string, major, minor int64) *devconfig.Device {
		return &devconfig.Device{
			Rule: devconfig.Rule{Type: devconfig.CharDevice, Major: major, Minor: minor, Permissions: "rwm", Allow: true},
			Path: path, FileMode: 0o666,
		}
	}
	return []*devconfig.Device{
		dev("/dev/null", 1, 3), dev("/dev/zero", 1, 5), dev("/dev/full", 1, 7),
		dev("/dev/random", 1, 8), dev("/dev/urandom", 1, 9), dev("/dev/tty", 5, 0),
	}
}

// containerConfig turns a defaulted Spec into libcontainer's config. It
// makes no system calls.
// hostUID and hostGID are the subject's host ids (Sandbox.hostUID).
func containerConfig(s *Spec, id, rootfs string, mounts []*configs.Mount, cgroupName string, rootless bool, access cgroupAccess, hostUID, hostGID int) *configs.Config {
	ns := configs.Namespaces{
		{Type: configs.NEWNS}, {Type: configs.NEWPID}, {Type: configs.NEWNET},
		{Type: configs.NEWIPC}, {Type: configs.NEWUTS},
	}
	cfg := &configs.Config{
		Rootfs:          rootfs,
		Readonlyfs:      true,
		RootPropagation: unix.MS_PRIVATE | unix.MS_REC,
		Mounts:          mounts,
		Devices:         sandboxDevices(),
		Hostname:        s.Hostname,
		Namespaces:      ns,
		// Every capability set empty: the init and the subject hold none.
		Capabilities:    &configs.Capabilities{},
		NoNewPrivileges: true,
		// lo up in the new network namespace; without it even 127.0.0.1 is
		// unreachable (ENETUNREACH).
		Networks:      []*configs.Network{{Type: "loopback"}},
		MaskPaths:     maskedPaths,
		ReadonlyPaths: readonlyPaths,
		Rlimits:       rlimits(s.Limits),
		// Our own key ring is not shared; keyctl is denied by seccomp anyway.
		NoNewKeyring: false,
		Version:      "1.2.0",
		Cgroups:      cgroupConfig(s, cgroupName, rootless, access),
		RootlessEUID: rootless,
		// v1 cgroups are not delegated to unprivileged users, and a
		// container's cgroupfs is often read-only even for its root:
		// libcontainer must ignore the permission errors instead of failing.
		RootlessCgroups: rootless || access.any(),
	}
	if s.UserNamespace {
		cfg.Namespaces = append(cfg.Namespaces, configs.Namespace{Type: configs.NEWUSER})
		cfg.UIDMappings, cfg.GIDMappings = userNSMappings(s, rootless, hostUID, hostGID)
	}
	return cfg
}

// rlimits are the sandbox's resource limits that need no cgroup: they
// hold wherever the sandbox runs, rootless and in containers included.
func rlimits(l Limits) []configs.Rlimit {
	rl := []configs.Rlimit{
		// An abort() must not drop a core file into the mapped root.
		{Type: unix.RLIMIT_CORE, Hard: 0, Soft: 0},
	}
	if l.FileBytes > 0 {
		n := uint64(l.FileBytes)
		rl = append(rl, configs.Rlimit{Type: unix.RLIMIT_FSIZE, Hard: n, Soft: n})
	}
	return rl
}

func cgroupConfig(s *Spec, name string, rootless bool, access cgroupAccess) *cgroups.Cgroup {
	// libcontainer refuses SkipDevices for a container: the device
	// allow-list (deny all, then the six nodes of /dev) is written on
	// every start.
	r := &cgroups.Resources{Devices: []*devconfig.Rule{{Type: devconfig.WildcardDevice, Major: devconfig.Wildcard, Minor: devconfig.Wildcard, Permissions: "rwm", Allow: false}}}
	for _, d := range sandboxDevices() {
		r.Devices = append(r.Devices, &d.Rule)
	}
	if rootless && !cgroupsDelegated() {
		// cgroup v1 is never delegated to an unprivileged user: asking for
		// limits would only fail the start. Applied reports each limit as
		// "rootless-not-delegated"; the PID namespace still bounds the
		// sandbox's life.
		return &cgroups.Cgroup{Resources: r, Rootless: true, Parent: cgroupParent, Name: name}
	}
	if s.Limits.MemoryBytes > 0 && access.writable("memory") {
		r.Memory = s.Limits.MemoryBytes
		r.MemorySwap = s.Limits.MemoryBytes // no swap beyond the limit
	}
	if s.Limits.Pids > 0 && access.writable("pids") {
		p := s.Limits.Pids
		r.PidsLimit = &p
	}
	if s.Limits.CPUs > 0 && access.writable("cpu") {
		r.CpuPeriod = cpuPeriod
		r.CpuQuota = s.Limits.cpuQuota()
	}
	if access.any() {
		// Root, but some cgroup cannot be made (a read-only or
		// undelegated cgroupfs): libcontainer's permission-error
		// tolerance (Rootless with no Path) makes what it can and skips
		// the rest; limits are asked only where the directory is
		// writable. The PID namespace still bounds the sandbox's life.
		return &cgroups.Cgroup{Resources: r, Rootless: true, Parent: cgroupParent, Name: name}
	}
	cg := &cgroups.Cgroup{Resources: r, Rootless: rootless}
	if rootless {
		// With Path empty libcontainer treats permission errors as
		// "no cgroup" instead of failing (LIBCONTAINER-NOTES gotcha 3).
		cg.Parent, cg.Name = cgroupParent, name
	} else {
		// A relative path nests under the supervisor's own cgroup in each
		// hierarchy, so limits compose with whatever contains us.
		cg.Path = cgroupParent + "/" + name
	}
	return cg
}

// cgroupsDelegated reports whether an unprivileged caller can create a
// child of its own cgroup: only on a cgroup v2 host whose cgroup was
// delegated to it (systemd --user, a container runtime).
func cgroupsDelegated() bool {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	line := strings.TrimSpace(string(b))
	own, ok := strings.CutPrefix(line, "0::")
	if !ok || strings.Contains(line, "\n") {
		return false // v1 or hybrid: not delegated
	}
	return unix.Access(filepath.Join("/sys/fs/cgroup", own), unix.W_OK) == nil
}

// cgroupParent is the one cgroup per hierarchy under which every
// sandbox's cgroup is created, below the supervisor's own. It holds no
// process and no limit and is deliberately kept (like the state dir's
// root): while any child cpuset exists, creating another does not flip
// the kernel's cpuset static keys, whose text patching was the single
// largest cost of a start (~5% of all CPU time in a profile).
const cgroupParent = "termverify-sandbox"
