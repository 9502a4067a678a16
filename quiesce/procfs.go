package quiesce

// This file is what one pass reads of the tasks in /proc: their threads,
// each thread's state, process group, terminal and run counters, the
// files kept open from the first pass for the second.

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxKeptFDs bounds the /proc files the first pass keeps open for the
// second (reading an open one again costs a third to a half of opening
// it); threads beyond it are opened again.
const maxKeptFDs = 4096

// task is what one pass reads of one thread.
type task struct {
	pid, tid int
	state    byte
	pgrp     int
	tty      devNum
	// ran counts the thread's runs: schedstat's time on a CPU and times
	// it was put on one (or status's context switches where the kernel
	// keeps no schedstat). It changes whenever the thread ran.
	ran [2]uint64
	// statFD and ranFD are the thread's stat and counter files, kept
	// open from the first pass for the second (-1: not kept).
	statFD, ranFD int
}

// threads lists the threads of every listed process (pid and tid, sorted
// by tid). A process that exits meanwhile is left out (the second pass
// then differs).
func (j *Judge) threads() ([]task, error) {
	pids, err := j.tasks()
	if err != nil {
		return nil, fmt.Errorf("quiesce: list tasks: %w", err)
	}
	var out []task
	for _, pid := range pids {
		j.reads++
		f, err := os.Open(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue // gone
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			continue
		}
		for _, name := range names {
			if tid, err := strconv.Atoi(name); err == nil {
				out = append(out, task{pid: pid, tid: tid, statFD: -1, ranFD: -1})
			}
		}
	}
	slices.SortFunc(out, func(a, b task) int { return a.tid - b.tid })
	j.threadCount = len(out)
	return out, nil
}

// firstPass reads every thread's run counter, then its stat (in that
// order: a thread that runs after its counter was read changes it). It
// stops at the first thread that is runnable or in uninterruptible sleep
// (busy: rule 2 fails, the rest need not be read). Up to maxKeptFDs of
// the files stay open for the second pass; the caller closes them
// (closeTasks).
func (j *Judge) firstPass() (ts []task, busy *task, err error) {
	ts, err = j.threads()
	if err != nil {
		return nil, nil, err
	}
	out := ts[:0]
	kept := 0
	for _, t := range ts {
		keep := kept+2 <= j.maxKept
		ok, err := j.readRan(&t, keep)
		if err == nil && ok {
			ok, err = j.readStat(&t, keep)
		}
		if err != nil || !ok {
			closeTask(t)
			if err != nil {
				return out, nil, err
			}
			continue // gone
		}
		if t.statFD >= 0 {
			kept += 2
		}
		out = append(out, t)
		if busyState(t.state) {
			return out, &out[len(out)-1], nil
		}
	}
	return out, nil, nil
}

// secondPass reads the threads again, stat first, then the run counter:
// the same threads, none runnable or in uninterruptible sleep, none run
// since the first pass.
func (j *Judge) secondPass(first []task) (bool, error) {
	now, err := j.threads()
	if err != nil {
		return false, err
	}
	if !slices.EqualFunc(first, now, func(a, b task) bool { return a.tid == b.tid && a.pid == b.pid }) {
		return false, nil
	}
	for _, f := range first {
		t := f
		ok, err := j.readStat(&t, false)
		if err == nil && ok {
			ok, err = j.readRan(&t, false)
		}
		if err != nil || !ok {
			return false, err
		}
		if busyState(t.state) || t.ran != f.ran {
			return false, nil
		}
	}
	return true, nil
}

func closeTasks(ts []task) {
	for _, t := range ts {
		closeTask(t)
	}
}

func closeTask(t task) {
	for _, fd := range []int{t.statFD, t.ranFD} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// readStat reads the thread's stat: state, process group, controlling
// terminal.
func (j *Judge) readStat(t *task, keep bool) (bool, error) {
	b, ok, err := j.readProcFile(t, "stat", &t.statFD, keep)
	if !ok || err != nil {
		return ok, err
	}
	// Fields from the state on: state, ppid, pgrp, session, tty_nr.
	f, ok := fieldsAfterComm(b)
	if !ok || len(f) < 5 || len(f[0]) != 1 {
		return false, nil
	}
	t.state = f[0][0]
	t.pgrp, _ = strconv.Atoi(f[2])
	ttyNr, _ := strconv.ParseUint(f[4], 10, 32)
	t.tty = devNum{uint32(ttyNr>>8) & 0xfff, uint32(ttyNr&0xff) | uint32(ttyNr>>12)&0xfff00}
	return true, nil
}

// readRan reads the thread's run counter: schedstat's run time and run
// count, or, where the kernel keeps no schedstat, status's context
// switches (a file several times larger).
func (j *Judge) readRan(t *task, keep bool) (bool, error) {
	name := "schedstat"
	if !j.haveSchedstat {
		name = "status"
	}
	b, ok, err := j.readProcFile(t, name, &t.ranFD, keep)
	if !ok || err != nil {
		return ok, err
	}
	if j.haveSchedstat {
		f := strings.Fields(string(b))
		if len(f) < 3 {
			return false, nil
		}
		t.ran[0], _ = strconv.ParseUint(f[0], 10, 64)
		t.ran[1], _ = strconv.ParseUint(f[2], 10, 64)
		return true, nil
	}
	t.ran = [2]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			t.ran[0] += n
		}
	}
	return true, nil
}

// keptLimit is maxKeptFDs, or a quarter of the soft descriptor limit when
// that is lower: keeping files open is an optimisation, never a reason
// for another open to fail.
func keptLimit() int {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return int(min(uint64(maxKeptFDs), rl.Cur/4))
}

// schedstatWorks: this kernel keeps per-task schedstat (CONFIG_SCHED_INFO):
// our own thread has been put on a CPU at least once.
func schedstatWorks() bool {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) >= 3 && f[2] != "0"
}

// readProcFile reads /proc/<pid>/task/<tid>/<name> with one pread: from
// *fd when it is open (a seq_file read again at offset 0 is generated
// anew), else opened now, and left open in *fd when keep. ok false: the
// thread is gone. Other errors are returned: a thread that cannot be
// read must not pass for one that has exited.
func (j *Judge) readProcFile(t *task, name string, fd *int, keep bool) ([]byte, bool, error) {
	j.reads++
	if *fd < 0 {
		path := fmt.Sprintf("/proc/%d/task/%d/%s", t.pid, t.tid, name)
		n, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if err == unix.ENOENT || err == unix.ESRCH {
				return nil, false, nil
			}
			return nil, false, procError{fmt.Errorf("quiesce: %s: %w", path, err)}
		}
		if keep {
			*fd = n
		} else {
			defer unix.Close(n)
		}
		return j.pread(n, t, name)
	}
	return j.pread(*fd, t, name)
}

func (j *Judge) pread(fd int, t *task, name string) ([]byte, bool, error) {
	if j.buf == nil {
		j.buf = make([]byte, 8192)
	}
	for {
		n, err := unix.Pread(fd, j.buf, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ESRCH || err == unix.ENOENT:
			return nil, false, nil // exited since it was opened
		case err != nil:
			return nil, false, procError{fmt.Errorf("quiesce: /proc/%d/task/%d/%s: %w", t.pid, t.tid, name, err)}
		case n == 0:
			return nil, false, nil
		}
		return j.buf[:n], true, nil
	}
}

// statFields reads a /proc/<pid>/stat (or a task's) and returns its
// fields from the state on.
func statFields(path string) ([]string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	return fieldsAfterComm(b)
}

// fieldsAfterComm splits a stat file's fields from the state on: the
// command name before them may hold anything, spaces and parentheses
// included, so they start after the last ')'.
func fieldsAfterComm(b []byte) ([]string, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}
