package sandbox

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
)

// directRunner is isolation none: the subject runs on the host, under our
// reaper in its own session, as a child subreaper. What it can guarantee:
//
//   - never root: as root, the reaper switches to the Spec's unprivileged
//     uid and gid (by default the sandbox's own, uid.go, shared with no
//     other sandbox and no host account; no supplementary groups, no
//     capabilities) before it forks the subject, and a root supervisor
//     that cannot switch (ErrCannotDropRoot) refuses to start; not as
//     root, the subject is the caller, with its capabilities dropped;
//   - no_new_privs, our seccomp filter and RLIMIT_CORE 0, all inherited
//     from the reaper and checked from the host before the subject runs;
//   - as root, a cgroup (memory/pids limits, and Kill empties it, so even
//     a daemon that escaped the reaper dies);
//   - otherwise the reaper, as subreaper, inherits every orphaned
//     descendant and SIGKILLs its children until none is left when the
//     subject ends, the supervisor dies or Kill is called.
//
// What it cannot: a descendant that another process adopts (e.g. via a
// second subreaper it sets up itself) or that escapes while the reaper is
// itself SIGKILLed survives without a cgroup; nothing is hidden from the
// subject beyond what its uid cannot reach (no filesystem or network
// isolation).
type directRunner struct {
	cmd     *exec.Cmd
	live    *os.File          // our end of the liveness pipe (Sandbox.liveW)
	cgPaths map[string]string // the cgroup Kill empties; nil when none was joined
	// group is the subject's own process group under a terminal (the
	// reaper makes it the foreground group: reaper.ModeDirectTerminal),
	// which the reaper's group no longer holds; 0 without a terminal.
	group atomic.Int64
	// reaperGone: the reaper has exited (endGroups), so a group stored
	// after it is killed by whoever stores it.
	reaperGone atomic.Bool
	killMu     sync.Mutex // a Kill in progress finishes before Destroy removes the cgroup
	waitErr    error
	state      *os.ProcessState
	done       chan struct{}
}

func (sb *Sandbox) startDirect(c *cleanup) error {
	s := &sb.spec
	ids, err := directIDs(s)
	if err != nil {
		return err // before anything runs
	}
	// As root the cgroup is made first (probed, created with no process
	// in it, its limits set) and the reaper is started in it: it moves
	// itself into the v1 hierarchies (cgroupDirs), and the kernel places
	// it in the unified one as it is cloned (CLONE_INTO_CGROUP). Neither
	// is a move of another process by pid, which waits for an RCU grace
	// period (docs/SANDBOX.md, Isolation none). A start that fails from
	// here on, and Destroy, remove the cgroup once the reaper is gone.
	var cg *directCgroup
	var dirs *cgroupDirs
	if os.Geteuid() == 0 {
		cg = makeDirectCgroup(sb.id, s.Limits, s.hook)
		c.add(cg.remove)
		if cg.usable() {
			if dirs, err = openCgroupDirs(cg.paths); err != nil {
				return stepErr("cgroup", sb.id, err)
			}
			defer dirs.close()
			s.hook(hookDirectCgroupOpen, sb.id)
		}
	}
	// Spec.Terminal: a host pty for this subject alone (console_direct.go),
	// the reaper's stdio; our copy of the slave is closed once it runs.
	var tty *hostTerminal
	if s.Terminal != nil {
		uid := -1
		if ids != nil {
			uid = ids.UID
		}
		if tty, err = openHostTerminal(c, *s.Terminal, uid); err != nil {
			return err
		}
		defer tty.slave.Close()
	}
	args, err := directReaperArgs(s.Args, ids, s.Limits.FileBytes, dirs.childFDs(reaper.FDGo+1), tty != nil)
	if err != nil {
		return stepErr("seccomp", "", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return stepErr("direct", "executable", err)
	}
	liveR, reportW, err := sb.reaperPipes(c)
	if err != nil {
		return err
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		liveR.Close()
		reportW.Close()
		return stepErr("go pipe", "", err)
	}
	defer goW.Close()

	files := append([]*os.File{liveR, reportW, goR}, dirs.v1Files()...)
	command := func(cgroupFD int) *exec.Cmd {
		cmd := sb.reaperCommand(exe, args, files, cgroupFD)
		if tty != nil {
			cmd.Stdin, cmd.Stdout, cmd.Stderr = tty.slave, tty.slave, tty.slave
		}
		return cmd
	}
	cmd := command(dirs.unifiedFD())
	err = cmd.Start()
	if err != nil && dirs.unifiedFD() >= 0 && clone3Refused(err) {
		// clone3 denied (an older container runtime's seccomp profile
		// answers ENOSYS or EPERM): start without CLONE_INTO_CGROUP; the
		// unified hierarchy is then joined by pid (verifyJoined).
		dirs.cloneRefused = true
		cmd = command(-1)
		err = cmd.Start()
	}
	liveR.Close()
	reportW.Close()
	goR.Close()
	dirs.close()
	if tty != nil {
		// The reaper and the subject hold the slave from now on: the
		// master reads EIO once they (and whoever the caller gives a
		// ConsolePeer) have closed it.
		tty.slave.Close()
	}
	if err != nil {
		return stepErr("start reaper", exe, err)
	}
	if tty != nil {
		sb.console = tty.master
	}
	d := &directRunner{cmd: cmd, live: sb.liveW, done: make(chan struct{})}
	go func() {
		// Owned by the Sandbox: its Wait (in Destroy, or in Start's
		// release on failure) waits on done.
		defer close(d.done)
		d.endGroups(cmd.Process.Pid)
		d.waitErr = cmd.Wait()
		d.state = cmd.ProcessState
	}()
	// From here on the reaper runs: Destroy (or Start's release on
	// failure) kills and reaps it before it undoes anything else, the
	// cgroup included.
	sb.run = d
	pid := cmd.Process.Pid
	sb.evidence.InitPID = pid
	sb.mark("reaper-started")

	// The reaper confines itself (ids, capabilities, no_new_privs,
	// seccomp), says "seccomp" and parks on the go pipe: what the subject
	// will inherit is checked, the reaper placed in its cgroup, and only
	// then is it released to fork the subject.
	err = sb.awaitSubject(func(ev reaperEvent) error {
		s.hook(hookDirectParked, strconv.Itoa(pid))
		if err := sb.verifyDirect(pid, ids, reportedCwd(ev), d.done); err != nil {
			return err
		}
		sb.mark("verified")
		limited := s.Limits.MemoryBytes > 0 || s.Limits.Pids > 0 || s.Limits.CPUs > 0
		if cg != nil {
			// Best-effort: a read-only or undelegated cgroupfs (normal
			// in containers) leaves the subreaper and the process group
			// to end the tree, and the limits unenforced, said so.
			sb.cg = cg.access
			err := cg.err
			if cg.usable() {
				// Kill empties it from now on, should the join have
				// stopped half-way.
				d.cgPaths = cg.paths
				err = dirs.verifyJoined(cg.paths, pid, ev)
			}
			if err != nil && !permissionError(err) {
				return stepErr("cgroup", sb.id, err)
			}
			if err != nil {
				sb.cg = cgroupAccess{denied: map[string]string{"": "cgroup-not-writable"}, detail: err.Error()}
				if errors.Is(err, unix.EROFS) {
					sb.cg.denied[""] = "cgroup-read-only"
				}
			}
			if sb.cg.any() {
				reason := sb.cg.reason(firstKey(sb.cg.denied))
				sb.evidence.CgroupError = sb.cg.detail
				sb.addMechanism("cgroup", false, reason)
				if s.Limits.Enforce && limited {
					return stepErr("limits", "cgroup", fmt.Errorf("%w: cgroup: %s: %s; %s", ErrLimitNotEnforced, reason, sb.cg.detail, cgroupHint))
				}
			} else {
				sb.evidence.CgroupPaths = maps.Clone(cg.paths)
				sb.addMechanism("cgroup", true, "ok")
				// Processes lists this cgroup, where the reaper was
				// verified to be (quiesce's tasks under a terminal).
				sb.openProcs(pid)
			}
		} else {
			sb.addMechanism("cgroup", false, "not-root")
			if s.Limits.Enforce && limited {
				return stepErr("limits", "cgroup", fmt.Errorf("%w: cgroup: not-root (isolation none makes a cgroup only as root; drop --limits enforce to run without one)", ErrLimitNotEnforced))
			}
		}
		// The per-file size limit (the reaper set it on itself before
		// it dropped its ids) is checked like the credentials.
		// /proc/<pid>/limits, not prlimit(2): reading another uid's limits
		// through prlimit needs CAP_SYS_RESOURCE, which a root supervisor in
		// a container often lacks.
		if n := s.Limits.FileBytes; n > 0 {
			if cur, max, err := procLimit(pid, "Max file size"); err != nil || cur != n || max != n {
				return stepErr("verify", "RLIMIT_FSIZE", fmt.Errorf("%w: file size limit %d/%d, want %d (%v)", ErrNotVerified, cur, max, n, err))
			}
		}
		if tty != nil {
			// Read on the master before the subject exists: nothing of
			// its can have changed it.
			// Recorded as the os backend records it: a receipt reads it.
			ok, reason := tty.checkSize()
			sb.addMechanism(MechanismTerminalSize, ok, reason)
		}
		sb.applied.Filesystem = Confinement{Reason: "isolation-none"}
		sb.applied.Network = Confinement{Reason: "isolation-none"}
		if _, err := goW.Write([]byte{1}); err != nil {
			return stepErr("release reaper", "", err)
		}
		sb.mark("released")
		return nil
	})
	if tty != nil && sb.evidence.SubjectPID > 0 {
		// The subject leads its own group (setpgid before its exec, so
		// by "started" it does). A reaper that died before this store
		// found no group to kill (endGroups): it is killed here instead.
		d.group.Store(int64(sb.evidence.SubjectPID))
		if d.reaperGone.Load() {
			if g := int(d.group.Swap(0)); g > 0 {
				_ = unix.Kill(-g, unix.SIGKILL)
			}
		}
	}
	return err
}

// reaperCommand is the reaper's exec.Cmd: args from directReaperArgs,
// files its descriptors from 3 on, and cgroupFD (>= 0) the unified
// cgroup directory the kernel starts it in (CLONE_INTO_CGROUP).
func (sb *Sandbox) reaperCommand(exe string, args []string, files []*os.File, cgroupFD int) *exec.Cmd {
	s := &sb.spec
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = "termverify-sandbox-reaper"
	// The working directory is the root opened once (hostpath.go), never
	// its name again: the forked child, before exec, still has our
	// descriptor table, so /proc/self/fd/N there is exactly that inode.
	cmd.Dir, cmd.Env = s.Root, s.Env
	if cmd.Env == nil {
		// A nil Env would make os/exec add PWD=<Dir> to the subject's.
		cmd.Env = []string{}
	}
	if sb.root != nil {
		cmd.Dir = "/proc/self/fd/" + strconv.Itoa(int(sb.root.file.Fd()))
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.stdio()
	cmd.ExtraFiles = files
	// Own session: no terminal signals from ours, and a process group the
	// kill can address. No Pdeathsig: it fires when the creating OS thread
	// exits, not the process; the liveness pipe covers supervisor death.
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	if cgroupFD >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroupFD
	}
	return cmd
}

// clone3Refused: the reaper's start failed the way a clone3 with
// CLONE_INTO_CGROUP fails where it is not allowed (a seccomp profile
// without clone3, a unified hierarchy that refuses the cgroup); the start
// is tried again without it.
func clone3Refused(err error) bool {
	for _, e := range []unix.Errno{unix.ENOSYS, unix.EPERM, unix.EACCES, unix.EINVAL, unix.EOPNOTSUPP, unix.EBUSY} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// cgroupDirs are isolation none's cgroup directories, opened for the
// reaper to start in: the v1 hierarchies' as O_PATH descriptors it
// inherits and moves itself into (reaper.Args), the unified one's as the
// descriptor clone3 places it in. The methods work on nil (no cgroup).
type cgroupDirs struct {
	names   []string   // the v1 hierarchies, in the order of v1
	v1      []*os.File // O_PATH directories
	unified *os.File   // O_RDONLY directory; nil where there is none
	// base is the reaper's descriptor number of v1[0] (childFDs).
	base int
	// cloneRefused: clone3 with CLONE_INTO_CGROUP was refused, so the
	// unified hierarchy is joined by pid after the start.
	cloneRefused bool
}

// openCgroupDirs opens the directories of paths the reaper joins: every
// hierarchy but devices, which a runner without device rules never makes.
func openCgroupDirs(paths map[string]string) (*cgroupDirs, error) {
	d := &cgroupDirs{}
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if name == "" {
			flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		} else if name == "devices" {
			continue
		}
		fd, err := unix.Open(paths[name], flags, 0)
		if err != nil {
			d.close()
			return nil, fmt.Errorf("open cgroup %s: %w", paths[name], err)
		}
		f := os.NewFile(uintptr(fd), paths[name])
		if name == "" {
			d.unified = f
			continue
		}
		d.names = append(d.names, name)
		d.v1 = append(d.v1, f)
	}
	return d, nil
}

// childFDs are the reaper's numbers of the v1 directories when they
// follow its first base descriptors.
func (d *cgroupDirs) childFDs(base int) []int {
	if d == nil {
		return nil
	}
	d.base = base
	fds := make([]int, len(d.v1))
	for i := range d.v1 {
		fds[i] = base + i
	}
	return fds
}

func (d *cgroupDirs) v1Files() []*os.File {
	if d == nil {
		return nil
	}
	return d.v1
}

// unifiedFD is the unified directory's descriptor, -1 when none.
func (d *cgroupDirs) unifiedFD() int {
	if d == nil || d.unified == nil {
		return -1
	}
	return int(d.unified.Fd())
}

// close closes our descriptors (the reaper has its own); idempotent.
func (d *cgroupDirs) close() {
	if d == nil {
		return
	}
	for _, f := range d.v1 {
		_ = f.Close()
	}
	if d.unified != nil {
		_ = d.unified.Close()
	}
}

// verifyJoined checks, from the cgroups' own listings, that the parked
// reaper is in every hierarchy it must be in (paths, as made), joining
// the unified one by pid where clone3 was refused. What the reaper could
// not join it reported in ev (cgroups-failed=FD:ERRNO), which is the
// error's cause; the named v1 hierarchies (name=systemd, misc) and the
// hybrid layout's unified one are joined where possible, as libcontainer
// joins them.
func (d *cgroupDirs) verifyJoined(paths map[string]string, pid int, ev reaperEvent) error {
	failed := reportedCgroupFailures(ev)
	unified := cgroups.IsCgroup2UnifiedMode()
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		if name == "devices" {
			continue
		}
		optional := !unified && (name == "name=systemd" || name == "misc" || name == "")
		dir := paths[name]
		if name == "" && d.cloneRefused {
			if err := cgroups.WriteCgroupProc(dir, pid); err != nil && !optional {
				return err
			}
			continue
		}
		if optional || inCgroup(pid, dir) {
			continue
		}
		if i := slices.Index(d.names, name); i >= 0 {
			if errno, ok := failed[d.base+i]; ok {
				return fmt.Errorf("join cgroup %s: %w", dir, errno)
			}
		}
		return fmt.Errorf("%w: the reaper is not in cgroup %s after joining it", ErrNotVerified, dir)
	}
	return nil
}

// reportedCgroupFailures reads the reaper's cgroups-failed=FD:ERRNO,...
// from its seccomp report.
func reportedCgroupFailures(ev reaperEvent) map[int]unix.Errno {
	out := map[int]unix.Errno{}
	for _, a := range ev.args {
		v, ok := strings.CutPrefix(a, "cgroups-failed=")
		if !ok {
			continue
		}
		for _, pair := range strings.Split(v, ",") {
			f, e, ok := strings.Cut(pair, ":")
			fd, err1 := strconv.Atoi(f)
			n, err2 := strconv.Atoi(e)
			if ok && err1 == nil && err2 == nil {
				out[fd] = unix.Errno(n)
			}
		}
	}
	return out
}

// permissionError: err is a refusal to make or join a cgroup (a
// read-only or undelegated cgroupfs), not a fault.
func permissionError(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// firstKey is the smallest key of m ("" when empty).
func firstKey(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// directIDs is who the direct runner's subject runs as: nil (the caller,
// no other uid is possible) when the supervisor is not root; as root, the
// Spec's ids (the sandbox's own claimed id where the caller left them
// zero, uid.go: no other sandbox, and no host account, has it), never 0,
// and only when the supervisor can switch to them. Isolation none must
// never mean "run the subject as root": a root without CAP_SETUID or
// CAP_SETGID (a pod that dropped every capability) gets
// ErrCannotDropRoot, before anything runs.
func directIDs(s *Spec) (*reaper.IDs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if s.UID <= 0 || s.GID <= 0 {
		return nil, stepErr("direct", "credentials", fmt.Errorf("%w: isolation none never runs the subject with uid or gid 0 (uid %d, gid %d)", ErrInvalidSpec, s.UID, s.GID))
	}
	eff, err := ownCapEff()
	if err != nil {
		return nil, stepErr("direct", "capabilities", err)
	}
	const need = 1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID
	if eff&need != need {
		return nil, stepErr("direct", "capabilities", fmt.Errorf("%w (effective capabilities %016x)", ErrCannotDropRoot, eff))
	}
	return &reaper.IDs{UID: s.UID, GID: s.GID}, nil
}

// verifyDirect is verifyCredentials for the direct runner: it reads the
// parked reaper's status from the host once it has confined itself and
// before it is released to fork the subject, which inherits exactly
// these. ids nil: the caller's own. done is closed once the reaper has
// been reaped, after which its pid may name another process.
// cwd is the working directory's identity as the parked reaper reported
// it (reportedCwd), nil when it reported none.
func (sb *Sandbox) verifyDirect(pid int, ids *reaper.IDs, cwd *fileID, done <-chan struct{}) error {
	st, err := procStatus(pid)
	if err != nil {
		return stepErr("verify", "credentials", err)
	}
	select {
	case <-done:
		return stepErr("verify", "credentials", fmt.Errorf("%w: the reaper ended while parked", ErrNotVerified))
	default:
	}
	// Dead but not yet reaped (its Wait waits for the cgroup work): a
	// zombie keeps the status of the process it was.
	if strings.HasPrefix(st["State"], "Z") || strings.HasPrefix(st["State"], "X") {
		return stepErr("verify", "credentials", fmt.Errorf("%w: the reaper ended while parked (state %s)", ErrNotVerified, st["State"]))
	}
	uid, gid := os.Geteuid(), os.Getegid()
	uidReason := "uid-" + strconv.Itoa(uid) + "-as-caller"
	if ids != nil {
		uid, gid = ids.UID, ids.GID
		uidReason = sb.uidReason(uid)
	}
	if err := checkIDs(st, uid, gid); err != nil {
		return err
	}
	if ids != nil && st["Groups"] != "" {
		return stepErr("verify", "groups", fmt.Errorf("%w: supplementary groups %q", ErrNotVerified, st["Groups"]))
	}
	if sb.root != nil {
		// The reaper re-entered its working directory by name as the new
		// uid (to prove it can): it must still be the root we opened. Its
		// own report says which directory that is (it runs nothing of
		// the subject's yet); /proc/<pid>/cwd would need CAP_SYS_PTRACE,
		// which a root in a container usually lacks.
		if cwd == nil || *cwd != sb.root.id {
			return stepErr("verify", "workdir", fmt.Errorf("%w: working directory %v is not the mapped root %s %v", ErrNotVerified, cwd, sb.root.path, sb.root.id))
		}
	}
	sb.evidence.UID, sb.evidence.GID = uid, gid
	sb.addMechanism("unprivileged-uid", true, uidReason)
	return sb.verifyConfinement(st, false)
}

// directCgroup is isolation none's cgroup as makeDirectCgroup left it.
type directCgroup struct {
	access cgroupAccess      // which directories the probe found cannot be made
	m      cgroups.Manager   // cgroup v2: the cgroup; nil when none is left to remove
	paths  map[string]string // its directories (ours: Destroy empties the manager's)
	made   bool              // v1: directories of paths may exist, to remove
	err    error             // making it failed; not to be used
}

// remove removes the cgroup's directories (it must be empty: the reaper
// and its tree are gone), once; a start's undo and Destroy's.
func (g *directCgroup) remove() error {
	switch {
	case g.m != nil:
		m := g.m
		g.m = nil
		return m.Destroy()
	case g.made:
		g.made = false
		// RemovePaths retries a busy rmdir, as the manager's Destroy does.
		return cgroups.RemovePaths(maps.Clone(g.paths))
	}
	return nil
}

// usable: the cgroup was made in every hierarchy, for the reaper to
// join.
func (g *directCgroup) usable() bool { return g.err == nil && !g.access.any() }

// directHierarchies are the hierarchies isolation none's cgroup is made
// in: those of its limits (memory, pids, cpu), pids also tracking every
// process of the tree for Kill; on cgroup v2 the one unified hierarchy,
// and on the hybrid layout the unified one too (it holds no limit, but it
// is joined the way a v2 host's only hierarchy is, CLONE_INTO_CGROUP, so
// that this path runs and is tested on hybrid hosts). A hierarchy that
// holds no limit would add a directory to make, join and remove on every
// start and nothing the sandbox uses (libcontainer joins them all because
// a container may need any).
var directHierarchies = []string{"memory", "pids", "cpu", ""}

// directPaths keeps the hierarchies of paths that the direct runner uses.
func directPaths(paths map[string]string) map[string]string {
	if cgroups.IsCgroup2UnifiedMode() {
		return paths
	}
	out := make(map[string]string, len(directHierarchies))
	for _, name := range directHierarchies {
		if p, ok := paths[name]; ok {
			out[name] = p
		}
	}
	return out
}

// makeDirectCgroup makes sandbox id's cgroup (directHierarchies) under
// our own, with l's limits and no process in it, unless the probe finds
// it cannot be made; hook is Spec.hook.
func makeDirectCgroup(id string, l Limits, hook func(point, path string)) *directCgroup {
	hook(hookDirectCgroup, id)
	defer hook(hookDirectCgroupEnd, id)
	all, err := sandboxCgroupPathsIn(id, directHierarchies)
	if err != nil {
		return &directCgroup{access: noCgroup(err)}
	}
	paths := directPaths(all)
	g := &directCgroup{access: probeCgroupPaths(paths)}
	if g.access.any() {
		return g
	}
	if !cgroups.IsCgroup2UnifiedMode() {
		// v1 (and the hybrid layout's unified directory, which holds no
		// limit): made and limited here, fd-relative, a few mkdirat and
		// writes; libcontainer's manager would walk every subsystem it
		// knows for each step (NewWithPaths, Apply, Set).
		g.paths, g.made = paths, true
		if g.err = makeV1Cgroup(paths, l); g.err != nil {
			if rerr := g.remove(); rerr != nil {
				g.made = true // the start's undo tries again
			}
		}
		return g
	}
	r := &cgroups.Resources{SkipDevices: true}
	if l.MemoryBytes > 0 {
		r.Memory, r.MemorySwap = l.MemoryBytes, l.MemoryBytes
	}
	if l.Pids > 0 {
		p := l.Pids
		r.PidsLimit = &p
	}
	if l.CPUs > 0 {
		r.CpuPeriod, r.CpuQuota = cpuPeriod, l.cpuQuota()
	}
	m, err := manager.NewWithPaths(&cgroups.Cgroup{Path: cgroupParent + "/" + id, Resources: r}, maps.Clone(paths))
	if err != nil {
		g.err = err
		return g
	}
	// Apply(-1) makes the directories and moves no process.
	if err = m.Apply(-1); err == nil {
		err = m.Set(r)
	}
	g.err = err
	if err == nil || m.Destroy() != nil {
		// Made, or not all removed: the undo in startDirect removes it.
		g.m = m
	}
	g.paths = paths
	return g
}

// makeV1Cgroup makes the directories of paths (each our own cgroup's
// cgroupParent/<id>) and writes l's limits into them: memory (and
// memory+swap where the kernel accounts swap, so that swap is no way
// around the limit), pids, and the CPU quota, the files and values
// libcontainer's fs manager writes for the same Resources. Each step is
// relative to the directory's descriptor, opened without following a
// symbolic link.
func makeV1Cgroup(paths map[string]string, l Limits) error {
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		fd, err := mkdirCgroup(paths[name])
		if err != nil {
			return err
		}
		err = writeV1Limits(fd, name, paths[name], l)
		_ = unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// mkdirCgroup makes dir, whose parent's parent (our own cgroup) exists,
// and returns an O_PATH descriptor of it. An existing cgroupParent is
// the normal case; an existing dir is accepted, as the manager's MkdirAll
// accepts it (the id is random).
func mkdirCgroup(dir string) (int, error) {
	parent := filepath.Dir(dir)
	base, err := unix.Open(filepath.Dir(parent), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open cgroup %s: %w", filepath.Dir(parent), err)
	}
	fd := base
	for _, name := range []string{filepath.Base(parent), filepath.Base(dir)} {
		if err := unix.Mkdirat(fd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("make cgroup %s: %w", dir, os.NewSyscallError("mkdirat", err))
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("open cgroup %s: %w", dir, os.NewSyscallError("openat", err))
		}
		fd = next
	}
	return fd, nil
}

// writeV1Limits writes hierarchy name's part of l into the cgroup open
// at fd (path for messages).
func writeV1Limits(fd int, name, path string, l Limits) error {
	var files [][2]string
	switch {
	case name == "memory" && l.MemoryBytes > 0:
		v := strconv.FormatInt(l.MemoryBytes, 10)
		// The memory limit first: memory+swap may never be below it, and
		// a fresh cgroup's both are unlimited.
		files = [][2]string{{"memory.limit_in_bytes", v}, {"memory.memsw.limit_in_bytes", v}}
	case name == "pids" && l.Pids > 0:
		files = [][2]string{{"pids.max", strconv.FormatInt(l.Pids, 10)}}
	case name == "cpu" && l.CPUs > 0:
		files = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(cpuPeriod)}, {"cpu.cfs_quota_us", strconv.FormatInt(l.cpuQuota(), 10)}}
	}
	for _, f := range files {
		wfd, err := unix.Openat(fd, f[0], unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && f[0] == "memory.memsw.limit_in_bytes" {
			continue // no swap accounting in this kernel: no swap to limit
		}
		if err == nil {
			_, err = unix.Write(wfd, []byte(f[1]))
			_ = unix.Close(wfd)
		}
		if err != nil {
			return fmt.Errorf("set cgroup %s/%s to %s: %w", path, f[0], f[1], err)
		}
	}
	return nil
}

func (d *directRunner) signal(sig unix.Signal) error { return d.cmd.Process.Signal(sig) }

// kill ends the tree. The reaper goes first, by liveness EOF: as child
// subreaper it has adopted every orphaned descendant (setsid daemons
// included) and SIGKILLs them until none is left before it exits. Then
// every process still in the cgroup (root only) is killed until it is
// empty, and finally the reaper's process group, should the reaper
// itself have hung.
func (d *directRunner) kill() error {
	d.killMu.Lock()
	defer d.killMu.Unlock()
	_ = d.live.Close()
	select {
	case <-d.done:
	case <-time.After(time.Second):
	}
	var err error
	if d.cgPaths != nil {
		err = emptyCgroup(d.cgPaths, 2*time.Second)
	}
	select {
	case <-d.done:
		// Reaped: its groups were killed while it was a zombie
		// (endGroups), and their numbers may be someone else's now.
	default:
		// Hung: not reaped, so its pid, and its group's number, are
		// still its own.
		_ = unix.Kill(-d.cmd.Process.Pid, unix.SIGKILL)
	}
	return err
}

// endGroups waits for the reaper to exit without reaping it, then kills
// its process group and, under a terminal, the subject's own: a subject
// that killed its reaper (same uid) and ignores the hangup is still there
// where no cgroup was made. While the reaper is an unreaped zombie its pid
// is taken, so its group's number cannot have been given to another
// session; the subject's group number is forgotten once the reaper has
// reported the subject's end (subjectEnded), after which it may be
// reused. Killing a group by number after the reap would kill whatever
// host process leads a group of that number by then
// (TestDirectKillSparesReusedGroups).
func (d *directRunner) endGroups(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	_ = unix.Kill(-pid, unix.SIGKILL)
	d.reaperGone.Store(true) // before the swap: see startDirect's store
	if g := int(d.group.Swap(0)); g > 0 {
		_ = unix.Kill(-g, unix.SIGKILL)
	}
}

// subjectEnded is told that the reaper reported the subject's end, which
// it reports only once it has killed every descendant: the subject's
// group is empty, and its number is no longer ours to kill.
func (d *directRunner) subjectEnded() { d.group.Store(0) }

// emptyCgroup SIGKILLs the processes listed in cgroup.procs of every
// hierarchy in paths until all are empty or timeout passes. (The fs
// manager's GetAllPids reads the devices hierarchy, which a runner
// without device rules never joins.)
func emptyCgroup(paths map[string]string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := 0
		for _, dir := range paths {
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					left++
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("direct kill: %d processes left in the cgroup after %v", left, timeout)
		}
		// Killed processes leave cgroup.procs only once reaped; poll.
		time.Sleep(2 * time.Millisecond)
	}
}

func (d *directRunner) wait() (*os.ProcessState, error) {
	<-d.done
	var ee *exec.ExitError
	if errors.As(d.waitErr, &ee) {
		return d.state, nil
	}
	if d.waitErr != nil {
		return d.state, fmt.Errorf("wait reaper: %w", d.waitErr)
	}
	return d.state, nil
}

// procLimit reads one limit (soft, hard) from /proc/<pid>/limits, where
// each line is the name, the soft and hard values ("unlimited" is -1) and
// the unit.
func procLimit(pid int, name string) (soft, hard int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		val := func(s string) (int64, error) {
			if s == "unlimited" {
				return -1, nil
			}
			return strconv.ParseInt(s, 10, 64)
		}
		if soft, err = val(f[0]); err == nil {
			hard, err = val(f[1])
		}
		return soft, hard, err
	}
	return 0, 0, fmt.Errorf("no %q in /proc/%d/limits", name, pid)
}

// reportedCwd reads "cwd=DEV:INO" from the direct reaper's seccomp report.
func reportedCwd(ev reaperEvent) *fileID {
	for _, a := range ev.args {
		v, ok := strings.CutPrefix(a, "cwd=")
		if !ok {
			continue
		}
		d, i, ok := strings.Cut(v, ":")
		dev, err1 := strconv.ParseUint(d, 10, 64)
		ino, err2 := strconv.ParseUint(i, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil
		}
		return &fileID{dev: dev, ino: ino}
	}
	return nil
}
