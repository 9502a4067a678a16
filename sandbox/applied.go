package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/netpolicy"
)

// Applied says what a started sandbox really has, checked against the
// kernel after the namespaces and the root were built and before the
// subject ran. Reasons are short deterministic words, fit for a
// transcript's x- members; host facts go to Evidence. It says what is
// confined and how, never what that is worth: tiers are the
// negotiation's (package receipts), made from these facts.
type Applied struct {
	Filesystem Confinement      `json:"filesystem"` // the subject's view of files
	Network    Confinement      `json:"network"`    // what the subject can reach
	Mechanisms []MechanismCheck `json:"mechanisms"`
}

// Confinement says whether the sandbox confines one thing the subject
// could reach, and by what: every check in Checks was verified against
// the kernel before the subject ran.
type Confinement struct {
	Confined bool `json:"confined"`
	// Checks are the verified mechanisms, in order: "mount-namespace",
	// "pivot-root", "workdir-bound", "rootfs"; "network-namespace",
	// "loopback-only", "allow-list-forwarders". Empty when not confined.
	Checks []string `json:"checks,omitempty"`
	// Reason says why it is not confined ("isolation-none", an errno
	// word); "" when it is.
	Reason string `json:"reason,omitempty"`
}

// MechanismCheck is one mechanism and whether it was verified in force.
type MechanismCheck struct {
	Name    string `json:"name"`    // "pid-namespace", "seccomp", "cgroup-memory", ...
	Applied bool   `json:"applied"` // verified in force
	Reason  string `json:"reason"`  // "ok", "not-requested", "rootless-v1", an errno name, ...
}

// Mechanism returns the named check, and whether it exists.
func (a Applied) Mechanism(name string) (MechanismCheck, bool) {
	for _, m := range a.Mechanisms {
		if m.Name == name {
			return m, true
		}
	}
	return MechanismCheck{}, false
}

// Unenforced lists the resource limits that were asked for but are not in
// force (rootless on cgroup v1, isolation none without root, ...): what a
// caller should tell its user when Limits.Enforce was not set.
func (a Applied) Unenforced() []MechanismCheck {
	var out []MechanismCheck
	for _, m := range a.Mechanisms {
		if strings.HasPrefix(m.Name, "cgroup") && !m.Applied && m.Reason != "not-requested" {
			out = append(out, m)
		}
	}
	return out
}

// Evidence holds volatile host facts about one sandbox for an evidence
// file: never for a transcript, which must stay replay-comparable.
type Evidence struct {
	ID          string            `json:"id"`
	StateDir    string            `json:"state_dir"`
	HostRoot    string            `json:"host_root,omitempty"`
	RootFS      string            `json:"rootfs,omitempty"`
	InitPID     int               `json:"init_pid"`    // host PID of the sandbox's PID 1
	SubjectPID  int               `json:"subject_pid"` // in the sandbox's PID namespace
	Namespaces  map[string]uint64 `json:"namespaces,omitempty"`
	CgroupPaths map[string]string `json:"cgroup_paths,omitempty"`
	// CgroupError is why the sandbox's cgroup could not be made (or only
	// partly): the first unwritable directory and its errno. "" when the
	// cgroup was made, or not tried (rootless).
	CgroupError   string `json:"cgroup_error,omitempty"`
	UserNamespace bool   `json:"user_namespace"`
	UID           int    `json:"uid"`
	GID           int    `json:"gid"`
	// HostUID and HostGID are what UID and GID map to on the host, when
	// the sandbox has a user namespace (UID and GID are then the ids
	// inside it); without one UID and GID are host ids, and these are 0.
	HostUID         int         `json:"host_uid,omitempty"`
	HostGID         int         `json:"host_gid,omitempty"`
	Milestones      []Milestone `json:"milestones"`
	PeakMemoryBytes int64       `json:"peak_memory_bytes,omitempty"`
	OOMKills        int64       `json:"oom_kills,omitempty"`
	// Forwarders are the allow-list listeners inside the sandbox and what
	// crossed them (connections relayed, refused at the per-route bound,
	// failed on the host side), read when Evidence is called.
	Forwarders []netpolicy.RouteStats `json:"forwarders,omitempty"`
}

// Milestone is a named point of the sandbox's life, in microseconds since
// Start was called.
type Milestone struct {
	Name   string `json:"name"`
	Micros int64  `json:"us"`
}

func (sb *Sandbox) addMechanism(name string, ok bool, reason string) {
	sb.applied.Mechanisms = append(sb.applied.Mechanisms, MechanismCheck{Name: name, Applied: ok, Reason: reason})
}

// namespaceKinds are checked in /proc/<pid>/ns against our own.
var namespaceKinds = []struct{ file, name string }{
	{"mnt", "mount-namespace"}, {"pid", "pid-namespace"}, {"net", "network-namespace"},
	{"ipc", "ipc-namespace"}, {"uts", "uts-namespace"}, {"user", "user-namespace"},
}

// verify inspects the parked init (pid) from the host side. Each
// confinement claimed needs its kernel evidence; a missing one fails Start
// with ErrNotVerified, so no receipt can ever be stronger than what runs.
func (sb *Sandbox) verify(pid int, rootless bool, plan *netpolicy.Plan) error {
	s := &sb.spec
	ns := map[string]uint64{}
	differs := map[string]bool{}
	ourNS := ownNamespaces()
	for _, k := range namespaceKinds {
		theirs, err1 := nsInode(fmt.Sprintf("/proc/%d/ns/%s", pid, k.file))
		ours, err2 := ourNS[k.file], error(nil)
		if ours == 0 {
			err2 = fmt.Errorf("own %s namespace unreadable", k.file)
		}
		if err1 != nil || err2 != nil {
			sb.addMechanism(k.name, false, "unreadable")
			continue
		}
		ns[k.file] = theirs
		differs[k.file] = theirs != ours
		want := k.file != "user" || s.UserNamespace
		switch {
		case !want:
			sb.addMechanism(k.name, false, "not-requested")
		case theirs != ours:
			sb.addMechanism(k.name, true, "ok")
		default:
			sb.addMechanism(k.name, false, "same-as-host")
			return stepErr("verify", k.name, fmt.Errorf("%w: %s namespace of pid %d is the host's (inode %d)", ErrNotVerified, k.file, pid, theirs))
		}
	}
	sb.evidence.Namespaces = ns
	sb.evidence.UserNamespace = s.UserNamespace
	sb.evidence.UID, sb.evidence.GID = s.UID, s.GID
	if s.UserNamespace {
		sb.evidence.HostUID, sb.evidence.HostGID = sb.hostUID, sb.hostGID
	}

	// Filesystem: a different mount namespace, a root that is not ours
	// (pivot_root happened), and the mapped root is what the subject will
	// see at its working directory.
	procRoot := fmt.Sprintf("/proc/%d/root", pid)
	hostRoot, err1 := statID("/")
	theirRoot, err2 := statID(procRoot + "/")
	if err1 != nil || err2 != nil || hostRoot == theirRoot {
		return stepErr("verify", "pivot-root", fmt.Errorf("%w: sandbox root is the host's (%v %v)", ErrNotVerified, err1, err2))
	}
	sb.addMechanism("pivot-root", true, "ok")
	fs := Confinement{Confined: true, Checks: []string{"mount-namespace", "pivot-root"}}
	// What is compared is the inode behind the descriptor Start opened and
	// had libcontainer mount, never what the host path names now.
	if sb.root != nil {
		got, err := statID(procRoot + Workdir)
		if err != nil || got != sb.root.id {
			return stepErr("verify", "workdir", fmt.Errorf("%w: %s is not the mapped root that was opened (%v)", ErrNotVerified, Workdir, err))
		}
		fs.Checks = append(fs.Checks, "workdir-bound")
	}
	if s.scratchTmpfs() {
		if err := checkScratch(procRoot+Workdir, s.Limits.ScratchBytes); err != nil {
			return stepErr("verify", "scratch", fmt.Errorf("%w: %w", ErrNotVerified, err))
		}
		fs.Checks = append(fs.Checks, "scratch-tmpfs")
	}
	if len(sb.binds) > 0 {
		if err := sb.verifyBinds(procRoot); err != nil {
			return err
		}
		fs.Checks = append(fs.Checks, "binds")
	}
	if sb.rootfs != nil {
		for _, e := range sb.rootfsEntries {
			dst := procRoot + "/" + filepath.Base(e.path)
			got, err := statID(dst)
			if err != nil || got != e.id {
				return stepErr("verify", "rootfs", fmt.Errorf("%w: /%s is not the rootfs entry that was opened (%v)", ErrNotVerified, filepath.Base(e.path), err))
			}
		}
		fs.Checks = append(fs.Checks, "rootfs")
	}
	sb.applied.Filesystem = fs

	// Network: a different network namespace whose only interface is lo,
	// plus the forwarders for an allow-list.
	ifaces, err := netInterfaces(pid)
	if err != nil || len(ifaces) != 1 || ifaces[0] != "lo" || !differs["net"] {
		return stepErr("verify", "network-namespace", fmt.Errorf("%w: interfaces %v (%v)", ErrNotVerified, ifaces, err))
	}
	nw := Confinement{Confined: true, Checks: []string{"network-namespace", "loopback-only"}}
	if plan.Policy.Mode == netpolicy.AllowList {
		nw.Checks = append(nw.Checks, "allow-list-forwarders")
	}
	sb.applied.Network = nw

	sb.verifyCgroups(pid, rootless)
	sb.openProcs(pid)
	return sb.enforceLimits()
}

// verifyCredentials reads the reaper's credentials and seccomp mode from
// the host once it has exec'd and installed its filter, just before it
// forks the subject, which inherits exactly these. It cannot be done on
// the parked libcontainer init: after nsexec's raw clone, glibc's setxid
// broadcast misses the thread-group leader, so /proc/<pid>/status (the
// leader's view) still shows uid 0 there, while the thread that execs
// has the right ids; execve makes that thread the leader.
func (sb *Sandbox) verifyCredentials(pid int, rootless bool) error {
	st, err := procStatus(pid)
	if err != nil {
		return stepErr("verify", "credentials", err)
	}
	// /proc shows ids as seen from our namespace: with a user namespace,
	// what the subject's ids map to.
	wantUID, wantGID := sb.hostUID, sb.hostGID
	if err := checkIDs(st, wantUID, wantGID); err != nil {
		return err
	}
	// A per-sandbox id is named by a fixed word (the number is in the
	// evidence): nothing in Applied depends on the random draw.
	uidReason, unpriv := sb.uidReason(wantUID), true
	if rootless {
		// 0 inside a user namespace that maps only our own host uid.
		uidReason = "uid-0-in-userns-as-caller"
		if os.Geteuid() == 0 {
			// Root without CAP_SYS_ADMIN nor the caps to map a range:
			// the caller is host uid 0, and so is the subject (with no
			// capability anywhere). Said, never claimed as unprivileged.
			uidReason, unpriv = "uid-0-in-userns-is-host-root", false
		}
	}
	sb.addMechanism("unprivileged-uid", unpriv, uidReason)
	return sb.verifyConfinement(st, true)
}

// checkIDs requires all four of the real, effective, saved and
// filesystem uids and gids in a /proc status to be uid and gid.
func checkIDs(st map[string]string, uid, gid int) error {
	for _, k := range []struct {
		key  string
		want int
	}{{"Uid", uid}, {"Gid", gid}} {
		w := strconv.Itoa(k.want)
		f := strings.Fields(st[k.key])
		if len(f) != 4 || f[0] != w || f[1] != w || f[2] != w || f[3] != w {
			return stepErr("verify", strings.ToLower(k.key), fmt.Errorf("%w: %s %q, want %s", ErrNotVerified, k.key, st[k.key], w))
		}
	}
	return nil
}

// noCaps is an empty capability set as /proc/<pid>/status shows it.
const noCaps = "0000000000000000"

// verifyConfinement checks, in a process's /proc status, what every
// subject inherits in both isolation levels: no capabilities,
// no_new_privs, our seccomp filter. emptyBounding requires the bounding
// set empty too; the direct runner empties it only when it may (with
// CAP_SETPCAP), and with no_new_privs no exec can raise a capability from
// it, so there a kept bounding set is reported, not refused.
func (sb *Sandbox) verifyConfinement(st map[string]string, emptyBounding bool) error {
	sets := []string{"CapInh", "CapPrm", "CapEff", "CapAmb"}
	if emptyBounding {
		sets = append(sets, "CapBnd")
	}
	for _, k := range sets {
		if st[k] != noCaps {
			return stepErr("verify", "capabilities", fmt.Errorf("%w: %s %s", ErrNotVerified, k, st[k]))
		}
	}
	if st["CapBnd"] == noCaps {
		sb.addMechanism("capabilities-dropped", true, "ok")
	} else {
		sb.addMechanism("capabilities-dropped", true, "bounding-set-kept")
	}
	if st["NoNewPrivs"] != "1" {
		return stepErr("verify", "no-new-privs", fmt.Errorf("%w: NoNewPrivs %q", ErrNotVerified, st["NoNewPrivs"]))
	}
	sb.addMechanism("no-new-privs", true, "ok")
	if st["Seccomp"] != "2" {
		return stepErr("verify", "seccomp", fmt.Errorf("%w: seccomp mode %q", ErrNotVerified, st["Seccomp"]))
	}
	sb.addMechanism("seccomp", true, "filter")
	return nil
}

// verifyCgroups records which limits are in force. A rootless v1 host has
// none (not delegated): that is reported, not treated as failure, because
// the PID namespace still bounds the sandbox's life.
func (sb *Sandbox) verifyCgroups(pid int, rootless bool) {
	s := &sb.spec
	paths := sb.evidence.CgroupPaths // the container's (cgroupPaths)
	check := func(name, ctrl, file string, want int64) {
		if want == 0 {
			sb.addMechanism(name, false, "not-requested")
			return
		}
		dir, ok := paths[ctrl]
		if !ok {
			reason := "no-controller"
			if rootless {
				reason = "rootless-not-delegated"
			} else if r := sb.cg.reason(ctrl); r != "" {
				reason = r
			}
			sb.addMechanism(name, false, reason)
			return
		}
		if !inCgroup(pid, dir) {
			sb.addMechanism(name, false, "init-not-in-cgroup")
			return
		}
		got, err := readInt(filepath.Join(dir, file))
		// The kernel rounds memory limits down to whole pages.
		if err != nil || got > want || got <= want-int64(os.Getpagesize()) {
			sb.addMechanism(name, false, "limit-mismatch")
			return
		}
		sb.addMechanism(name, true, "ok")
	}
	check("cgroup-memory", "memory", "memory.limit_in_bytes", s.Limits.MemoryBytes)
	check("cgroup-pids", "pids", "pids.max", s.Limits.Pids)
	cpu := int64(0)
	if s.Limits.CPUs > 0 {
		cpu = s.Limits.cpuQuota()
	}
	check("cgroup-cpu", "cpu", "cpu.cfs_quota_us", cpu)
	// The device allow-list lives in the devices cgroup (v1) or in an
	// eBPF program on the container's cgroup (v2). Without it, what
	// holds is said instead of claimed.
	devCtrl := "devices"
	if cgroups.IsCgroup2UnifiedMode() {
		devCtrl = ""
	}
	if dir, ok := paths[devCtrl]; ok && (devCtrl == "" || inCgroup(pid, dir)) {
		sb.addMechanism("device-allow-list", true, "ok")
	} else {
		sb.addMechanism("device-allow-list", false, "no-devices-cgroup (only the six /dev nodes exist; mknod needs CAP_MKNOD, which is dropped)")
	}
}

// enforceLimits fails the start when Limits.Enforce is set and a limit
// that was asked for is not verified in force.
func (sb *Sandbox) enforceLimits() error {
	if !sb.spec.Limits.Enforce {
		return nil
	}
	if u := sb.applied.Unenforced(); len(u) > 0 {
		m := u[0]
		if d := sb.cg.detail; d != "" {
			return stepErr("limits", m.Name, fmt.Errorf("%w: %s: %s: %s; %s", ErrLimitNotEnforced, m.Name, m.Reason, d, cgroupHint))
		}
		return stepErr("limits", m.Name, fmt.Errorf("%w: %s: %s (drop --limits enforce to run without it, or run where the cgroup can be made)", ErrLimitNotEnforced, m.Name, m.Reason))
	}
	return nil
}

// collectStats reads the memory cgroup's peak and OOM-kill count; called
// by Wait before Destroy removes the cgroup.
func (sb *Sandbox) collectStats() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	dir, ok := sb.evidence.CgroupPaths["memory"]
	if !ok {
		return
	}
	if v, err := readInt(filepath.Join(dir, "memory.max_usage_in_bytes")); err == nil {
		sb.evidence.PeakMemoryBytes = v
	} else if v, err := readInt(filepath.Join(dir, "memory.peak")); err == nil {
		sb.evidence.PeakMemoryBytes = v
	}
	for _, f := range []string{"memory.oom_control", "memory.events"} {
		kv, err := readKV(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		if v, ok := kv["oom_kill"]; ok {
			sb.evidence.OOMKills = v
			return
		}
	}
}

// ownNamespaces reads this thread's namespaces on a locked thread.
// /proc/self/ns names the thread-group leader's, and libcontainer leaves
// a locked thread inside a container's mount namespace for good (its
// mount-source helper never unlocks); when that thread is the main thread
// /proc/self/ns/mnt is the container's, not ours. A pool thread we lock is
// never such a thread: the runtime kills those.
func ownNamespaces() map[string]uint64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := map[string]uint64{}
	for _, k := range namespaceKinds {
		if ino, err := nsInode("/proc/thread-self/ns/" + k.file); err == nil {
			m[k.file] = ino
		}
	}
	return m
}

func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{st.Dev, st.Ino}, nil
}

// netInterfaces lists the interfaces of pid's network namespace.
func netInterfaces(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return nil, err
	}
	var names []string
	for i, line := range strings.Split(string(b), "\n") {
		if i < 2 {
			continue // headers
		}
		if name, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names, nil
}

func procStatus(pid int) (map[string]string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, sc.Err()
}

// inCgroup reports whether pid is listed in dir/cgroup.procs.
func inCgroup(pid int, dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	want := strconv.Itoa(pid)
	for _, f := range strings.Fields(string(b)) {
		if f == want {
			return true
		}
	}
	return false
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func readKV(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[f[0]] = v
			}
		}
	}
	return m, nil
}

// checkScratch requires dir, the sandbox's Workdir as the host reaches
// it, to be a tmpfs of size bytes (0: any size): the scratch root, which
// is no host filesystem and holds no more than that.
func checkScratch(dir string, size int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	if st.Type != unix.TMPFS_MAGIC {
		return fmt.Errorf("%s is filesystem type %#x, not a tmpfs", Workdir, st.Type)
	}
	if size > 0 {
		// tmpfs rounds its size up to whole pages.
		page := int64(os.Getpagesize())
		want := (size + page - 1) / page * page
		if got := int64(st.Blocks) * st.Bsize; got != want {
			return fmt.Errorf("%s is a tmpfs of %d bytes, want %d", Workdir, got, want)
		}
	}
	return nil
}
