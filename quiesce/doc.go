// Package quiesce decides, from kernel state, whether the programs on a
// pseudoterminal are waiting for input: the rule that closes an input
// epoch in PTY mode (docs/PTY.md), instead of a quiet window that guesses.
//
// A Judge looks at one terminal (the master, and a slave descriptor the
// caller keeps, e.g. from TIOCGPTPEER) and at the tasks the caller says
// belong to it (a sandbox's processes: its cgroup's listing, or
// TasksInPIDNamespace where it has no cgroup). One
// Evaluate call is quiet only when all of this holds:
//
//  1. Pending input has been pushed through the line discipline: a poll
//     of the slave runs the tty's flip-buffer work, so bytes written to
//     the master a moment ago are in the line discipline's queue, where
//     the next checks see them, and not in a kernel work item, where
//     they would look like idleness.
//  2. No task is runnable or in uninterruptible sleep: state R or D in
//     /proc/<tid>/stat (or "running" in /proc/<tid>/syscall, read for
//     the foreground group's threads).
//  3. Some task of the terminal's foreground process group (TIOCGPGRP on
//     the master) is blocked reading the terminal: read/readv on a
//     descriptor that is the slave (or /dev/tty while the slave is its
//     controlling terminal), or poll/ppoll/select/pselect6 whose set has
//     the terminal for input (the pollfd array or fd_set read from the
//     task's memory), or epoll_wait/epoll_pwait/epoll_pwait2 on an epoll
//     instance watching the terminal for input (its fdinfo, whose
//     watched files are matched by inode and device, not by the number
//     they were registered with, which a dup2 may have reused).
//  4. The slave's input queue is empty (TIOCINQ: in canonical mode only
//     complete lines count, so a half-typed line is rightly quiet) and
//     nothing is waiting to be read on the master (TIOCINQ there; the
//     caller drains the master itself).
//  5. A second pass sees the same tasks, none runnable, with the same
//     run counts (/proc/<tid>/schedstat's time on a CPU and times put on
//     one, read before stat in the first pass and after it in the
//     second; status's context switches where there is no schedstat):
//     nothing ran while the first pass looked.
//  6. Timers: when the waiting call has a short timeout (at most
//     ShortTimeout, such as vim's Escape timeout or an event loop's tick),
//     the verdict is "not yet" with the timeout, so the caller evaluates
//     again after it fires; the epoch closes at the next quiet point whose
//     wait is infinite or long, or when the same task returns to the same
//     short wait after it fired (a periodic tick: nothing more will come).
//
// The caller evaluates on events — after each write to the master, when
// the master becomes readable, when a returned timeout has passed — never
// in a spin loop, and keeps an epoch deadline as the backstop for what
// this cannot see (work outside the watched tasks, long timers, a program
// busy-polling the terminal with a zero timeout), saying so when it fires.
//
// Cost: a pass reads two small /proc files a thread (kept open from the
// first pass for the second) and a syscall file only for the foreground
// group's threads until the waiter is found, main threads first. An
// evaluation that finds tasks ran between its passes tries again only
// while it is cheap; one that is not quiet and cost more than 100 ms
// says in RetryAfter to wait at least as long, so the evaluations of a
// program with thousands of threads take at most about half the time.
//
// Reading another task's syscall, memory and file descriptors needs
// ptrace access to it: root, or the owner of the sandbox's user
// namespace. Syscall numbers are per architecture; on one without a table
// Evaluate returns ErrUnsupportedArch.
package quiesce
