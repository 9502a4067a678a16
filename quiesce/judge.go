package quiesce

import (
	"errors"
	"fmt"
	"os"
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

// maxShortWaits bounds the short waits remembered across evaluations.
const maxShortWaits = 64

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
	// bit (threads blocked in select on 65536 bits would otherwise make
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
