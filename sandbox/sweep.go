package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// ownerFile records which supervisor process owns a state directory:
// "<pid> <start time in clock ticks since boot>". The start time makes a
// recycled pid harmless: an entry is stale only if no live process has
// both.
const ownerFile = "owner"

func writeOwner(dir string) error {
	pid := os.Getpid()
	start, err := procStartTime(pid)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %d\n", pid, start), 0o644)
}

// scratchFile, in a state entry, names the entry's scratch root.
const scratchFile = "scratch"

// scratchPrefix starts the name of every scratch root, which is made in
// the temporary directory (the subject's files belong with temporary
// files, not on the small tmpfs /run often is), not in the state entry.
const scratchPrefix = "termverify-scratch-"

// scratchWorkdir is the directory, inside a scratch root, that is mapped
// as the subject's /sandbox.
const scratchWorkdir = "sandbox"

// makeScratchRoot makes isolation none's scratch root for the sandbox
// id and returns it and the directory in it that the subject gets
// (Spec.Root). (An os sandbox's scratch root is a tmpfs of its own mount
// namespace, standardMounts, and needs none of this.) Its path is
// recorded in the state entry first, so that a Sweep after a crash at any
// point finds and removes it.
//
// Other local users must not reach it. The scratch root is made fresh
// (mkdirat on a checked descriptor of the temporary directory: a planted
// entry or symlink fails it), owned by us and 0711 (traversable, not
// listable) where the subject walks the host path as another uid (root,
// which drops to the sandbox's own id, uid.go), 0700 when the subject is
// us; the workdir inside it belongs to the subject's uid, mode 0700, so
// that no other sandbox's subject can enter it either. The temporary
// directory itself must pass the state directory's path check (root's or
// ours, sticky if others can write it), so no one else can rename the
// scratch root away.
func makeScratchRoot(entry, id string, s *Spec) (scratch, workdir string, err error) {
	tmp := os.TempDir()
	scratch = filepath.Join(tmp, scratchPrefix+id)
	workdir = filepath.Join(scratch, scratchWorkdir)
	tmpFD, err := openTrustedDir(tempDirWhat, tmp, false, false)
	if err != nil {
		return scratch, workdir, err
	}
	defer unix.Close(tmpFD)
	if err := os.WriteFile(filepath.Join(entry, scratchFile), []byte(scratch), 0o600); err != nil {
		return scratch, workdir, err
	}
	mode, uid, gid := scratchOwner(s)
	if err := unix.Mkdirat(tmpFD, scratchPrefix+id, 0o700); err != nil {
		return scratch, workdir, &os.PathError{Op: "mkdir", Path: scratch, Err: err}
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(scratch)
		}
	}()
	// Ours, just made, in a directory where no one else can rename it.
	fd, err := openTrustedComponent(tempDirWhat, tmpFD, scratchPrefix+id, scratch, false, 0)
	if err != nil {
		return scratch, workdir, err
	}
	defer unix.Close(fd)
	if err := checkTrustedComponent(tempDirWhat, fd, scratch, os.Geteuid(), true); err != nil {
		return scratch, workdir, err
	}
	// fchmodat by name: the name is in the sticky temporary directory and
	// ours, so it is still this directory (chmod cannot take an O_PATH fd).
	if err := unix.Fchmodat(tmpFD, scratchPrefix+id, mode, 0); err != nil {
		return scratch, workdir, &os.PathError{Op: "chmod", Path: scratch, Err: err}
	}
	if err := unix.Mkdirat(fd, scratchWorkdir, 0o700); err != nil {
		return scratch, workdir, &os.PathError{Op: "mkdir", Path: workdir, Err: err}
	}
	if uid != os.Geteuid() || gid != os.Getegid() {
		if err := unix.Fchownat(fd, scratchWorkdir, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return scratch, workdir, &os.PathError{Op: "chown", Path: workdir, Err: err}
		}
	}
	return scratch, workdir, nil
}

// scratchOwner returns the scratch root's mode and the host uid and gid
// the workdir belongs to: the ids isolation none's subject runs as.
func scratchOwner(s *Spec) (mode uint32, uid, gid int) {
	if os.Geteuid() != 0 {
		return 0o700, os.Geteuid(), os.Getegid()
	}
	return 0o711, s.UID, s.GID
}

// sweepScratch removes the scratch root a dead entry records, if it is
// one of ours by name.
func sweepScratch(entry string) error {
	b, err := os.ReadFile(filepath.Join(entry, scratchFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	root := string(b)
	if !filepath.IsAbs(root) || !strings.HasPrefix(filepath.Base(root), scratchPrefix) {
		return fmt.Errorf("scratch record %q is not a scratch root", root)
	}
	return os.RemoveAll(root)
}

// procStartTime is field 22 of /proc/<pid>/stat.
func procStartTime(pid int) (uint64, error) {
	_, start, err := procStat(pid)
	return start, err
}

// procStat returns fields 3 (state: R, S, Z, ...) and 22 (start time) of
// /proc/<pid>/stat.
func procStat(pid int) (state string, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// comm (field 2) may contain spaces and parentheses: cut after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return f[0], start, err
}

// ownerAlive reports whether the supervisor recorded in dir still runs.
// An unreadable record counts as alive unless the directory is old enough
// that no Start can still be writing it.
//
// Start makes the directory and writes the record a few microseconds
// apart; a Sweep from another supervisor can land in between, and must
// not take the directory from under it.
func ownerAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	var pid int
	var start uint64
	if err == nil {
		_, err = fmt.Sscanf(string(b), "%d %d", &pid, &start)
	}
	if err != nil {
		fi, statErr := os.Stat(dir)
		return statErr == nil && time.Since(fi.ModTime()) < ownerGrace
	}
	// A zombie (or a dying task) is an owner that has ended and not yet
	// been reaped: as dead as one that is gone.
	state, now, err := procStat(pid)
	return err == nil && now == start && state != "Z" && state != "X"
}

// ownerGrace is how long a state directory without a readable owner
// record is presumed to belong to a Start still writing it.
const ownerGrace = time.Minute

// SweepReport lists what Sweep removed.
type SweepReport struct {
	Removed []string // sandbox ids whose owner was dead
	Skipped []string // sandbox ids with a live owner
}

// Sweep removes what supervisors that died without Destroy left in
// stateDir: it kills their sandboxes' processes, removes their cgroups and
// libcontainer state and their directories, and then frees the
// per-sandbox ids (uid.go) whose entries are gone. Entries whose owner
// process is alive (another supervisor, or this one) are left alone, so
// Sweep is safe to run next to live sandboxes. An empty stateDir means
// DefaultStateDir(); a missing one is not an error, and one that another
// user could write is refused (ErrUnsafeDir) with nothing touched.
func Sweep(stateDir string) (SweepReport, error) {
	var rep SweepReport
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	// Entries in a directory someone else can write could be planted:
	// their records would make Sweep kill and remove what they name.
	err := ensureStateDir(stateDir, false)
	if errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("sweep: %w", err)
	}
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("sweep %s: %w", stateDir, err)
	}
	var errs []error
	claims := false
	for _, e := range entries {
		if e.Name() == uidsDir {
			claims = true
		}
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "tvs-") {
			continue
		}
		dir := filepath.Join(stateDir, e.Name())
		if ownerAlive(dir) {
			rep.Skipped = append(rep.Skipped, e.Name())
			continue
		}
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			// Its live owner's Destroy removed it after the listing and
			// took the record with it: nothing was left, nothing swept.
			continue
		}
		if err := sweepOne(dir, e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Removed = append(rep.Removed, e.Name())
	}
	// After the entries: a dead entry's processes are killed and the
	// entry removed before its per-sandbox id is free again; an entry
	// that could not be swept keeps its claim. Without a claims directory
	// there is nothing to free, and the exclusive lock sweepClaims takes
	// (every exec and run sweeps at start; concurrent scratch starts claim
	// under the shared one) is not taken for nothing.
	if claims {
		if err := sweepClaims(stateDir); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func sweepOne(dir, id string) error {
	lc := filepath.Join(dir, "lc")
	if ct, err := libcontainer.Load(lc, id); err == nil {
		// A parked or running init: SIGKILL it (the PID namespace takes the
		// rest with it), then let libcontainer remove cgroups and state.
		if st, err := ct.State(); err == nil && st.InitProcessPid > 0 {
			killAndWait(st.InitProcessPid, st.InitProcessStartTime, sweepKillWait)
		}
		if err := ct.Destroy(); err != nil {
			return fmt.Errorf("sweep %s: destroy container: %w", id, err)
		}
	}
	sweepCgroups(id)
	if err := sweepScratch(dir); err != nil {
		return fmt.Errorf("sweep %s: %w", id, err)
	}
	// Pins first: a supervisor killed between pin and start leaves a
	// caller's directory bound under the entry (hostpath.go).
	if err := removeEntry(dir); err != nil {
		return fmt.Errorf("sweep %s: %w", id, err)
	}
	return nil
}

// sweepKillWait bounds how long Sweep waits for a killed init to exit.
const sweepKillWait = 5 * time.Second

// killAndWait SIGKILLs pid if it is still the process that started at
// start (clock ticks since boot), and waits up to d for it to exit.
// libcontainer's Destroy refuses a container whose init still runs, and an
// init on its way out can run a while: as PID 1 its exit first kills and
// waits for everything else in its namespace. A pidfd makes both the
// signal and the wait safe against the pid being reused.
func killAndWait(pid int, start uint64, d time.Duration) {
	killAndWaitWith(unix.PidfdOpen, pid, start, d)
}

// killAndWaitWith is killAndWait with the pidfd_open to use; a test passes
// one that fails, to take the fallback.
func killAndWaitWith(pidfdOpen func(pid, flags int) (int, error), pid int, start uint64, d time.Duration) {
	fd, err := pidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone already
	}
	if err != nil {
		// No pidfd: a kernel before 5.3 (ENOSYS), or a seccomp filter
		// around the supervisor that denies pidfd_open (EPERM). The init
		// must still be killed, or Destroy refuses it as running.
		killAndPoll(pid, start, d)
		return
	}
	defer unix.Close(fd)
	if now, err := procStartTime(pid); err != nil || now != start {
		return // the pid names another process now
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	// A pidfd polls readable once the process has exited (a zombie
	// counts, which is also what libcontainer counts as stopped).
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != unix.EINTR {
			return
		}
	}
}

// killAndPoll is killAndWait without a pidfd: kill(2) after the start-time
// check (a pid reused in between is the race a pidfd closes), then
// /proc/<pid>/stat until the process is a zombie or gone.
func killAndPoll(pid int, start uint64, d time.Duration) {
	if now, err := procStartTime(pid); err != nil || now != start {
		return
	}
	_ = unix.Kill(pid, unix.SIGKILL)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		st, now, err := procStat(pid)
		if err != nil || now != start || st == "Z" || st == "X" {
			return
		}
	}
}

// sweepCgroups removes the id's cgroup directories that libcontainer's
// state did not name (a supervisor killed between cgroup creation and
// saving its state, or a direct runner's cgroup): <own cgroup>/
// termverify-sandbox/<id> in each hierarchy.
func sweepCgroups(id string) {
	name := cgroupParent + "/" + id
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		ctrl := strings.TrimPrefix(f[1], "name=")
		if f[1] == "" {
			ctrl = "unified"
		} else if i := strings.IndexByte(ctrl, ','); i >= 0 {
			ctrl = ctrl[:i]
		}
		p := filepath.Join("/sys/fs/cgroup", ctrl, f[2], name)
		if ctrl == "unified" {
			if _, err := os.Stat("/sys/fs/cgroup/unified"); err != nil {
				p = filepath.Join("/sys/fs/cgroup", f[2], name)
			}
		}
		killCgroup(p)
		_ = os.Remove(p)
	}
}

func killCgroup(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}
