package quiesce

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// TasksInPIDNamespace lists the processes whose PID namespace is the one
// with this inode (a sandbox's: it exists even where no cgroup can be
// made), as seen in our /proc.
func TasksInPIDNamespace(inode uint64) ([]int, error) {
	want := "pid:[" + strconv.FormatUint(inode, 10) + "]"
	buf := make([]byte, 64)
	return scanProc(func(pid int) bool {
		// readlink spells the namespace's inode number ("pid:[N]", as
		// nsfs names it) without looking up and pinning the nsfs dentry
		// that stat would: the same number, at a third of the cost in a
		// PTY epoch (docs/BENCHMARKS.md).
		n, err := unix.Readlink("/proc/"+strconv.Itoa(pid)+"/ns/pid", buf)
		return err == nil && string(buf[:n]) == want
	})
}

// SandboxTasks is the task list of a sandbox for New: its exact listing
// (list; ok false where it has none, such as a sandbox without a cgroup)
// when it has one, else the processes of its PID namespace (pidNS, the
// namespace's inode), which every sandbox has.
func SandboxTasks(list func() (pids []int, ok bool, err error), pidNS uint64) func() ([]int, error) {
	if _, ok, err := list(); ok && err == nil {
		return func() ([]int, error) {
			pids, _, err := list()
			return pids, err
		}
	}
	return func() ([]int, error) { return TasksInPIDNamespace(pidNS) }
}

// ProcessTree lists root and every process descended from it (by parent
// links read now: a daemon that was reparented away is not found; in a
// sandbox, use TasksInPIDNamespace).
func ProcessTree(root int) ([]int, error) {
	parents := map[int]int{}
	pids, err := scanProc(func(pid int) bool {
		f, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid))
		if !ok || len(f) < 2 {
			return false
		}
		parents[pid], _ = strconv.Atoi(f[1])
		return true
	})
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		for p, hops := pid, 0; p > 0 && hops < 1<<16; p, hops = parents[p], hops+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}

// scanProc lists the numeric entries of /proc that keep returns true for.
func scanProc(keep func(pid int) bool) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !keep(pid) {
			continue
		}
		out = append(out, pid)
	}
	return out, nil
}
