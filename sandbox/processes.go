package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// procsControllers is the order in which a cgroup directory is chosen
// for Processes: any holds every process of the sandbox (libcontainer
// puts the init in all of them, and its children inherit them); "" is
// the unified hierarchy of cgroup v2.
var procsControllers = [...]string{"", "pids", "memory", "cpu", "freezer", "devices"}

// openProcs keeps one cgroup directory that the init pid is verified to
// be in, for Processes. None is kept where there is no such directory
// (a rootless host without delegation): Processes then says so and the
// caller lists the PID namespace instead.
//
// The directory is ours (made by libcontainer under the host's cgroup
// file system, which the subject cannot write: it has no cgroupfs mount
// and no capability), and it is opened once: every listing reads
// cgroup.procs relative to this descriptor.
func (sb *Sandbox) openProcs(pid int) {
	paths := sb.evidence.CgroupPaths
	for _, ctrl := range procsControllers {
		dir, ok := paths[ctrl]
		if !ok || !inCgroup(pid, dir) {
			continue
		}
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		sb.procs = os.NewFile(uintptr(fd), dir)
		return
	}
}

// Processes lists the sandbox's processes, as pids of the caller's PID
// namespace, from its cgroup's cgroup.procs: one read, exact, and
// independent of how many processes the host runs. ok is false when the
// sandbox has no cgroup that was verified to hold its init (then list
// the processes of its PID namespace, which exists in every os sandbox).
// After Destroy it returns an error.
func (sb *Sandbox) Processes() (pids []int, ok bool, err error) {
	if sb.procs == nil {
		return nil, false, nil
	}
	if sb.destroyed.Load() {
		return nil, true, ErrDestroyed
	}
	fd, err := unix.Openat(int(sb.procs.Fd()), "cgroup.procs", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, true, fmt.Errorf("sandbox %s: open cgroup.procs: %w", sb.id, err)
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var data []byte
	for {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, true, fmt.Errorf("sandbox %s: read cgroup.procs: %w", sb.id, err)
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
	}
	return parsePids(data)
}

// parsePids reads cgroup.procs: one decimal pid per line.
func parsePids(data []byte) ([]int, bool, error) {
	pids := make([]int, 0, bytes.Count(data, []byte{'\n'}))
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if len(line) == 0 {
			continue
		}
		pid, err := strconv.Atoi(string(line))
		if err != nil || pid <= 0 {
			return nil, true, fmt.Errorf("cgroup.procs: bad pid %q", line)
		}
		pids = append(pids, pid)
	}
	return pids, true, nil
}
