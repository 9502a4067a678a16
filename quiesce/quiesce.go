package quiesce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnsupportedArch: no syscall table for this architecture.
var ErrUnsupportedArch = errors.New("quiesce: no syscall table for this architecture")

// DefaultShortTimeout is the longest wait rule 6 lets fire before it
// closes an epoch: vim's Escape timeout and event-loop ticks are below
// it, a shell's or pager's wait is infinite.
const DefaultShortTimeout = 2 * time.Second

// maxPass is how many times Evaluate repeats its two passes when a task
// ran between them, before it answers "not yet".
const maxPass = 3

// The cost bounds of one Evaluate. It tries again after a task ran
// between its passes only while another try keeps it within retryReads
// /proc files and it has spent at most retryTime: with a thousand
// threads or more one try is all (two passes of two files a thread). A
// verdict that is not quiet after more than costFloor has RetryAfter at
// least the time it took, so a caller evaluating again after RetryAfter
// spends at most about half its time evaluating, and its epoch deadline
// stays the backstop.
const (
	retryReads = 4096
	retryTime  = 100 * time.Millisecond
	costFloor  = 100 * time.Millisecond
)

// maxKeptFDs bounds the /proc files the first pass keeps open for the
// second (reading an open one again costs a third to a half of opening
// it); threads beyond it are opened again.
const maxKeptFDs = 4096

// pollRdNorm is POLLRDNORM (asm-generic/poll.h), which x/sys lacks.
const pollRdNorm = 0x40

// maxShortWaits bounds the short waits remembered across evaluations.
const maxShortWaits = 64

// Bounds on what is read from a task's memory.
const (
	maxPollFDs  = 4096
	maxSelectFD = 1 << 16
)

// Verdict is one evaluation.
type Verdict struct {
	// Quiet: the programs wait for input; the epoch may close.
	Quiet bool
	// Why says, when not quiet, what is still going on; when quiet,
	// which task waits in which call. For diagnostics, not for parsing.
	Why string
	// RetryAfter, when not zero, is how long to wait before evaluating
	// again (unless something happens meanwhile, such as output): the
	// short timeout of the call the programs wait in (rule 6), or, when
	// the evaluation itself cost more than costFloor, at least what it
	// cost, so that the caller's back-off follows the cost.
	RetryAfter time.Duration
}

// A Judge evaluates one terminal. It is not safe for concurrent use.
type Judge struct {
	master, slave int
	slaveDev      devNum
	// slaveID is the slave's file identity (inode and filesystem), what
	// an epoll instance's fdinfo names a watched file by.
	slaveID fileID
	tasks   func() ([]int, error)
	// ShortTimeout is rule 6's bound (DefaultShortTimeout when zero).
	ShortTimeout time.Duration
	// ttyFDs caches, for one evaluation, each process's descriptors that
	// are the terminal: one listing of /proc/<pid>/fd per process, so
	// that a hostile fd_set or pollfd array costs lookups, not a stat per
	// bit (review finding: threads blocked in select on 65536 bits made
	// one evaluation take seconds).
	ttyFDs map[int]*ttyFiles
	// shortWaits remembers the short waits seen by earlier evaluations,
	// with the task's run counter then: the same wait again after
	// the task ran is a periodic tick.
	shortWaits map[waitKey][2]uint64
	// haveSchedstat: the kernel keeps /proc/<tid>/schedstat, the
	// cheapest file that changes whenever a thread ran.
	haveSchedstat bool
	// reads counts the /proc files (and task listings) the current or
	// last Evaluate read: its retry budget, and what tests check.
	reads int
	// buf is the read buffer of readProcFile.
	buf []byte
	// threadCount is how many threads the last listing found.
	threadCount int
	// maxKept is how many /proc files a first pass keeps open for the
	// second: maxKeptFDs, or a quarter of our descriptor limit.
	maxKept int
}

// waitKey identifies a task's wait: the same task, call and timeout.
type waitKey struct {
	tid     int
	call    uint64
	timeout time.Duration
}

// devNum is a device number as major and minor.
type devNum struct{ major, minor uint32 }

func devOf(rdev uint64) devNum { return devNum{unix.Major(rdev), unix.Minor(rdev)} }

// devTTY is /dev/tty, the controlling terminal's alias.
var devTTY = devNum{5, 0}

// fileID is a file's identity: its inode number and the device of its
// filesystem (stat's st_ino and st_dev).
type fileID struct {
	ino uint64
	dev devNum
}

// ttyFiles is what one process has open that is the terminal: the
// descriptor numbers, and the identities of the files behind them.
type ttyFiles struct {
	fds map[int]bool
	ids map[fileID]bool
}

// New returns a Judge of the terminal whose master and slave are given
// (the caller keeps both open for the Judge's life; the slave is only
// polled and queried, never read). tasks lists the process ids (not
// threads) of every process that may be involved, for example the
// sandbox's PID namespace (TasksInPIDNamespace).
func New(master, slave *os.File, tasks func() ([]int, error)) (*Judge, error) {
	if len(waitCalls) == 0 {
		return nil, ErrUnsupportedArch
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(slave.Fd()), &st); err != nil {
		return nil, fmt.Errorf("quiesce: stat slave: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return nil, fmt.Errorf("quiesce: slave is not a character device (mode %o)", st.Mode)
	}
	return &Judge{
		master: int(master.Fd()), slave: int(slave.Fd()),
		slaveDev: devOf(st.Rdev), slaveID: fileID{st.Ino, devOf(st.Dev)}, tasks: tasks,
		shortWaits: map[waitKey][2]uint64{}, haveSchedstat: schedstatWorks(),
		maxKept: keptLimit(),
	}, nil
}

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

// Evaluate applies the rules once and says whether the programs wait for
// input. When a task ran between the two passes it tries again, up to
// maxPass times while the evaluation is cheap (retryReads files,
// retryTime); an evaluation that cost more than costFloor and is not
// quiet says, in RetryAfter, to wait at least as long as it took.
func (j *Judge) Evaluate() (Verdict, error) {
	start := time.Now()
	j.reads = 0
	v, err := j.evaluate()
	if cost := time.Since(start); err == nil && !v.Quiet && cost > costFloor {
		v.RetryAfter = max(v.RetryAfter, cost)
	}
	return v, err
}

func (j *Judge) evaluate() (Verdict, error) {
	start := time.Now()
	short := j.ShortTimeout
	if short == 0 {
		short = DefaultShortTimeout
	}
	for range maxPass {
		v, again, err := j.try(short)
		// Another try reads two files a thread in each pass: only when
		// that stays within retryReads (however soon this one stopped).
		if !again || j.reads+4*j.threadCount > retryReads || time.Since(start) > retryTime {
			return v, err
		}
	}
	return Verdict{Why: "tasks kept running between two passes"}, nil
}

// try is one evaluation: again true when a task ran between its passes.
func (j *Judge) try(short time.Duration) (v Verdict, again bool, err error) {
	// Rule 1: a poll of the slave runs the flip-buffer work.
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(j.slave), Events: unix.POLLIN}}, 0)

	// Rule 2, as the first pass reads.
	first, busy, err := j.firstPass()
	defer closeTasks(first)
	if v, ok := unreadable(err); ok {
		return v, false, nil
	} else if err != nil {
		return Verdict{}, false, err
	}
	if busy != nil {
		return Verdict{Why: fmt.Sprintf("task %d is %s", busy.tid, stateWord(busy.state))}, false, nil
	}
	// Rule 3.
	j.ttyFDs = map[int]*ttyFiles{}
	fg, err := unix.IoctlGetInt(j.master, unix.TIOCGPGRP)
	if err != nil {
		return Verdict{}, false, fmt.Errorf("quiesce: foreground process group: %w", err)
	}
	w, running := j.waiter(first, fg)
	if running != 0 {
		return Verdict{Why: fmt.Sprintf("task %d is running", running)}, false, nil
	}
	if w == nil {
		return Verdict{Why: fmt.Sprintf("no task of the foreground process group %d waits for the terminal", fg)}, false, nil
	}
	// Rule 4.
	if n, err := unix.IoctlGetInt(j.slave, unix.TIOCINQ); err != nil {
		return Verdict{}, false, fmt.Errorf("quiesce: slave input queue: %w", err)
	} else if n > 0 {
		return Verdict{Why: fmt.Sprintf("%d bytes of input not yet read", n)}, false, nil
	}
	// The program's output reaches the master through the same kind of
	// flip-buffer work: a poll of the master runs it, and a readable
	// master means output the caller has not drained yet. (TIOCINQ
	// alone misses output still in the work item: a shell that echoed,
	// ran the command and waits again looked quiet with nothing drawn.)
	pfd := []unix.PollFd{{Fd: int32(j.master), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, 0); err != nil && err != unix.EINTR {
		return Verdict{}, false, fmt.Errorf("quiesce: poll master: %w", err)
	} else if n > 0 && pfd[0].Revents&unix.POLLIN != 0 {
		return Verdict{Why: "output not yet drained from the master"}, false, nil
	}
	// Rule 5.
	if same, err := j.secondPass(first); err != nil {
		if v, ok := unreadable(err); ok {
			return v, false, nil
		}
		return Verdict{}, false, err
	} else if !same {
		return Verdict{Why: "tasks ran between two passes"}, true, nil
	}
	// Rule 6.
	why := fmt.Sprintf("task %d waits in %s", w.tid, w.call)
	if w.timeout < 0 || w.timeout > short {
		clear(j.shortWaits)
		return Verdict{Quiet: true, Why: why}, false, nil
	}
	if len(j.shortWaits) > maxShortWaits {
		// A program varying its short timeouts would grow this
		// without end; forgetting only delays the periodic verdict.
		clear(j.shortWaits)
	}
	key := waitKey{w.tid, w.nr, w.timeout}
	ran, seen := j.shortWaits[key]
	j.shortWaits[key] = w.ran
	if seen && ran != w.ran {
		clear(j.shortWaits)
		return Verdict{Quiet: true, Why: why + " again after it fired (periodic)"}, false, nil
	}
	return Verdict{Why: why + fmt.Sprintf(" with a %v timeout", w.timeout), RetryAfter: max(w.timeout, time.Millisecond)}, false, nil
}

// procError is a thread's /proc file that could not be read, and not
// because the thread is gone: nothing can be said of it, so the verdict
// is "not yet" (the epoch deadline ends the wait, saying why).
type procError struct{ err error }

func (e procError) Error() string { return e.err.Error() }

func unreadable(err error) (Verdict, bool) {
	var pe procError
	if errors.As(err, &pe) {
		return Verdict{Why: "cannot tell: " + pe.Error()}, true
	}
	return Verdict{}, false
}

func stateWord(state byte) string {
	switch state {
	case 'D':
		return "in uninterruptible sleep"
	default:
		return "running"
	}
}

func busyState(state byte) bool { return state == 'R' || state == 'D' }

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

// parseSyscall reads /proc/<tid>/syscall: "running", "-1 sp pc" (blocked
// outside a call), or the number and six arguments (then sp and pc).
func parseSyscall(s string) (call []uint64, running bool) {
	s = strings.TrimSpace(s)
	if s == "running" {
		return nil, true
	}
	f := strings.Fields(s)
	if len(f) < 7 || f[0] == "-1" {
		return nil, false
	}
	call = make([]uint64, 7)
	for i := range 7 {
		base := 16 // the arguments are 0x-prefixed hex, the number decimal
		if i == 0 {
			base = 10
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(f[i], "0x"), base, 64)
		if err != nil {
			return nil, false
		}
		call[i] = v
	}
	return call, false
}

// wait is a task blocked on the terminal.
type wait struct {
	tid     int
	nr      uint64
	call    string
	timeout time.Duration // < 0: none
	ran     [2]uint64
}

// waitKind is how a call's arguments name descriptors and a timeout.
type waitKind int

const (
	waitRead waitKind = iota + 1
	waitPoll
	waitPpoll
	waitSelect
	waitPselect
	waitEpoll
	waitEpoll2
)

var waitNames = map[waitKind]string{
	waitRead: "read", waitPoll: "poll", waitPpoll: "ppoll", waitSelect: "select",
	waitPselect: "pselect6", waitEpoll: "epoll_wait", waitEpoll2: "epoll_pwait2",
}

// waiter finds a task of the foreground group fg blocked on the
// terminal for input, reading the call of each of the group's threads
// (its processes' main threads first, where programs usually read) until
// one is; running is a thread whose call could not be read because it
// is running.
func (j *Judge) waiter(tasks []task, fg int) (w *wait, running int) {
	var cands []task
	for _, t := range tasks {
		if t.pgrp == fg {
			cands = append(cands, t)
		}
	}
	slices.SortStableFunc(cands, func(a, b task) int {
		return boolInt(a.tid != a.pid) - boolInt(b.tid != b.pid)
	})
	for _, t := range cands {
		call, isRunning, ok := j.readSyscall(t)
		if isRunning {
			return nil, t.tid
		}
		if !ok || call == nil {
			continue
		}
		kind, ok := waitCalls[call[0]]
		if !ok {
			continue
		}
		timeout, onTTY := j.waitsOnTTY(t, call, kind)
		if onTTY {
			return &wait{tid: t.tid, nr: call[0], call: waitNames[kind], timeout: timeout, ran: t.ran}, 0
		}
	}
	return nil, 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readSyscall reads the thread's /proc/<tid>/syscall (ok false when it
// cannot: gone, or no ptrace access).
func (j *Judge) readSyscall(t task) (call []uint64, running, ok bool) {
	fd := -1
	b, ok, err := j.readProcFile(&t, "syscall", &fd, false)
	if err != nil || !ok {
		return nil, false, false
	}
	call, running = parseSyscall(string(b))
	return call, running, true
}

// waitsOnTTY reports whether t's call waits for input from the terminal,
// and its timeout (< 0: none). Anything unreadable counts as "no".
func (j *Judge) waitsOnTTY(t task, call []uint64, kind waitKind) (time.Duration, bool) {
	a := call[1:]
	switch kind {
	case waitRead:
		return j.readTimeout(), j.isTTY(t, int(int32(a[0])))
	case waitPoll, waitPpoll:
		n := min(a[1], maxPollFDs)
		buf, err := readMem(t.pid, a[0], int(n)*8)
		if err != nil {
			return 0, false
		}
		found := false
		for i := 0; i+8 <= len(buf); i += 8 {
			fd := int32(binary.LittleEndian.Uint32(buf[i:]))
			events := binary.LittleEndian.Uint16(buf[i+4:])
			if fd >= 0 && events&(unix.POLLIN|pollRdNorm) != 0 && j.isTTY(t, int(fd)) {
				found = true
				break
			}
		}
		if kind == waitPoll {
			return msTimeout(a[2]), found
		}
		return timespecTimeout(t.pid, a[2]), found
	case waitSelect, waitPselect:
		// No terminal descriptor above the highest one this process has:
		// read only the bytes of the set that can hold one.
		nfds := min(a[0], maxSelectFD, uint64(maxFD(j.ttySet(t))+1))
		if a[1] == 0 || nfds == 0 {
			return 0, false
		}
		set, err := readMem(t.pid, a[1], int((nfds+7)/8))
		if err != nil {
			return 0, false
		}
		found := false
		// Only the terminal's own descriptors matter: look at their bits.
		for fd := range j.ttySet(t) {
			if fd < int(nfds) && set[fd/8]&(1<<(fd%8)) != 0 {
				found = true
				break
			}
		}
		if kind == waitSelect {
			return timevalTimeout(t.pid, a[4]), found
		}
		return timespecTimeout(t.pid, a[4]), found
	case waitEpoll, waitEpoll2:
		found := j.epollWatchesTTY(t, int(int32(a[0])))
		if kind == waitEpoll {
			return msTimeout(a[3]), found
		}
		return timespecTimeout(t.pid, a[3]), found
	}
	return 0, false
}

// readTimeout is a read's timeout on the terminal: none in canonical
// mode or with VMIN > 0; VTIME tenths of a second with VMIN 0.
func (j *Judge) readTimeout() time.Duration {
	tio, err := unix.IoctlGetTermios(j.slave, unix.TCGETS)
	if err != nil || tio.Lflag&unix.ICANON != 0 || tio.Cc[unix.VMIN] > 0 || tio.Cc[unix.VTIME] == 0 {
		return -1
	}
	return time.Duration(tio.Cc[unix.VTIME]) * 100 * time.Millisecond
}

// isTTY reports whether descriptor fd of t is the terminal: the slave
// itself, or /dev/tty while the slave is t's controlling terminal.
func (j *Judge) isTTY(t task, fd int) bool {
	return fd >= 0 && j.ttySet(t)[fd]
}

// ttySet lists t's process's descriptors that are the terminal.
func (j *Judge) ttySet(t task) map[int]bool { return j.ttyFiles(t).fds }

// ttyFiles lists t's process's descriptors that are the terminal, and
// their files' identities, once per evaluation (the cache ttyFDs): each
// entry of /proc/<pid>/fd is looked at once, however many bits a select
// set or a pollfd array names.
func (j *Judge) ttyFiles(t task) *ttyFiles {
	if tf, ok := j.ttyFDs[t.pid]; ok {
		return tf
	}
	tf := &ttyFiles{fds: map[int]bool{}, ids: map[fileID]bool{}}
	if j.ttyFDs != nil {
		j.ttyFDs[t.pid] = tf
	}
	dir := fmt.Sprintf("/proc/%d/fd", t.pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return tf
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(dir+"/"+e.Name(), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if j.isTerminalNode(t, devOf(st.Rdev)) {
			tf.fds[fd] = true
			tf.ids[fileID{st.Ino, devOf(st.Dev)}] = true
		}
	}
	return tf
}

// isTerminalNode: a character device numbered rdev is the terminal for t
// (the slave, or /dev/tty while the slave is t's controlling terminal).
func (j *Judge) isTerminalNode(t task, rdev devNum) bool {
	return rdev == j.slaveDev || (rdev == devTTY && t.tty == j.slaveDev)
}

// isTTYFile reports whether the file with identity id is the terminal
// for t: the slave's own inode; a file t's process has open as the
// terminal (a /dev/tty, or the slave through another node); or the
// /dev/tty of t's root while the slave is t's controlling terminal (a
// /dev/tty open only elsewhere, say in a parent that registered it).
func (j *Judge) isTTYFile(t task, id fileID) bool {
	if id == j.slaveID || j.ttyFiles(t).ids[id] {
		return true
	}
	var st unix.Stat_t
	if t.tty != j.slaveDev || unix.Stat(fmt.Sprintf("/proc/%d/root/dev/tty", t.pid), &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && devOf(st.Rdev) == devTTY && id == fileID{st.Ino, devOf(st.Dev)}
}

// maxFD is the highest descriptor in set, -1 for none.
func maxFD(set map[int]bool) int {
	m := -1
	for fd := range set {
		m = max(m, fd)
	}
	return m
}

// epollWatchesTTY reads the epoll instance's fdinfo: a line per watched
// file,
//
//	tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x
//
// (fs/eventpoll.c) with the descriptor number it was registered by, its
// event mask, and the file's inode and filesystem device. The number is
// only what it was at registration: after a dup2 over it, or a close and
// reuse, it names another file, while the registration stays as long as
// the file it was made for is open anywhere. So the file is matched by
// identity, ino and sdev, against the slave's and the terminal files the
// process has open. A kernel that does not print ino and sdev gets the
// old match by number, exact only while the number was not reused.
func (j *Judge) epollWatchesTTY(t task, epfd int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", t.pid, epfd))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		w, ok := parseEpollLine(line)
		if !ok || w.events&unix.EPOLLIN == 0 {
			continue
		}
		if w.hasID {
			if j.isTTYFile(t, w.id) {
				return true
			}
		} else if j.isTTY(t, w.fd) {
			return true
		}
	}
	return false
}

// epollItem is one watched file of an epoll instance's fdinfo.
type epollItem struct {
	fd     int
	events uint64
	id     fileID
	hasID  bool // ino: and sdev: were present
}

// parseEpollLine parses one "tfd:" line of an epoll instance's fdinfo;
// ok false for any other line.
func parseEpollLine(line string) (it epollItem, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "tfd:" || f[2] != "events:" {
		return it, false
	}
	fd, err1 := strconv.Atoi(f[1])
	ev, err2 := strconv.ParseUint(f[3], 16, 32)
	if err1 != nil || err2 != nil {
		return it, false
	}
	it.fd, it.events = fd, ev
	var ino, sdev uint64
	var hasIno, hasDev bool
	for _, w := range f[4:] {
		if v, ok := strings.CutPrefix(w, "ino:"); ok {
			ino, err1 = strconv.ParseUint(v, 16, 64)
			hasIno = err1 == nil
		} else if v, ok := strings.CutPrefix(w, "sdev:"); ok {
			sdev, err2 = strconv.ParseUint(v, 16, 32)
			hasDev = err2 == nil
		}
	}
	if hasIno && hasDev {
		// sdev is the kernel's internal dev_t: major in the top 12 bits,
		// minor in the low 20.
		it.id = fileID{ino, devNum{uint32(sdev >> 20), uint32(sdev & 0xfffff)}}
		it.hasID = true
	}
	return it, true
}

// msTimeout is a millisecond timeout argument (an int: negative is none).
func msTimeout(arg uint64) time.Duration {
	ms := int32(uint32(arg))
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// timespecTimeout reads a struct timespec argument (NULL: none).
func timespecTimeout(pid int, addr uint64) time.Duration {
	return pairTimeout(pid, addr, time.Nanosecond)
}

// timevalTimeout reads a struct timeval argument (NULL: none).
func timevalTimeout(pid int, addr uint64) time.Duration {
	return pairTimeout(pid, addr, time.Microsecond)
}

// pairTimeout reads {seconds, fraction} of two 64-bit words; unreadable
// counts as none (the deadline is the backstop).
func pairTimeout(pid int, addr uint64, unit time.Duration) time.Duration {
	if addr == 0 {
		return -1
	}
	b, err := readMem(pid, addr, 16)
	if err != nil {
		return -1
	}
	sec := int64(binary.LittleEndian.Uint64(b))
	frac := int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || frac < 0 || sec > int64(time.Hour/time.Second) {
		return -1
	}
	return time.Duration(sec)*time.Second + time.Duration(frac)*unit
}

// readMem reads n bytes at addr of pid's memory.
func readMem(pid int, addr uint64, n int) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(addr)); err != nil {
		return nil, err
	}
	return buf, nil
}
