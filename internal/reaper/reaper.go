// Package reaper is the PID 1 of every sandbox and, with isolation none,
// the subject's subreaper. It is written in C and runs from an ELF
// constructor, before the Go runtime starts: a process exec'd with argv[1]
// == Arg never becomes a Go program. Linking this package into a binary
// (package sandbox imports it) is all it takes; no dispatch in main or
// TestMain is needed.
//
// Why C: the reaper is the third program started for every sandbox (after
// the supervisor and libcontainer's init). As a Go program it would pay a
// runtime start of our large binary, a large share of a sandboxed
// /bin/true (docs/BENCHMARKS.md, "Sandbox start"), before it could
// fork the subject.
// As PID 1 it must also be simple about signals: one thread, every
// forwarded signal and SIGCHLD read from a signalfd, no runtime threads or
// preemption signals.
//
// Invocation: argv = [any, Arg, mode, filter, ids, fsize, cgroups, "--", subject argv...]
// (noop: [any, Arg, ModeNoop]). filter is the seccomp program as lower-case
// hex of little-endian struct sock_filter, installed before the fork ("-":
// none; required in ModeSandbox). ids is "UID:GID" (both non-zero) for a
// direct reaper started as root to switch to, "-" otherwise; fsize the
// RLIMIT_FSIZE in bytes a direct reaper sets before it drops ("-": none);
// cgroups the inherited descriptors of cgroup v1 directories a direct
// reaper moves itself into first, as root, by writing 0 to their tasks
// files ("-": none; else decimal, joined by commas), and reports the ones
// that failed in its seccomp line as cgroups-failed=FD:ERRNO,... In
// ModeDirect the reaper confines itself before it parks on FDGo: RLIMIT_CORE
// 0, the ids with no supplementary groups, every capability set emptied
// (the bounding set when it may), no_new_privs, the filter; the subject
// inherits all of it. Then it reports "seccomp", so the supervisor can
// check its /proc status before it releases it. In ModeSandbox, when fd 0
// is a terminal, the subject is made the terminal's foreground process
// group; in ModeDirectTerminal it must be, or the reaper fails. Either way the reaper's own stdio become /dev/null once the
// subject is forked: its pipe ends exist only in the subject.
// Descriptors: FDLiveness (read end; EOF means
// the supervisor is gone: exit, killing the namespace or, direct, every
// descendant), FDReport (one line per event, see the Report* words),
// FDGo (direct only: one byte once the supervisor placed us in a cgroup).
// Exit status: the subject's (128+signal for a signal death), 125 set-up
// failure, 126/127 exec failure as shells report it, 137 supervisor gone,
// 2 usage.
package reaper

/*
#cgo CFLAGS: -O2 -Wall -Wextra -Wno-unused-parameter
#include "reaper.h"
*/
import "C"

import (
	"encoding/hex"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Arg is argv[1] of a reaper process.
const Arg = "__termverify-sandbox-reaper"

// Modes (argv[2]).
const (
	ModeSandbox = "sandbox" // PID 1 of the sandbox: seccomp, then the subject
	ModeDirect  = "direct"  // isolation none: subreaper, waits for a byte on FDGo
	// ModeDirectTerminal is ModeDirect with fd 0 a terminal the
	// supervisor opened for the subject alone (a host pty): the reaper,
	// a session leader without one, makes it its controlling terminal
	// and the subject its foreground process group, or fails with
	// "error terminal: …". Plain ModeDirect never touches a terminal on
	// fd 0 (it could be the caller's).
	ModeDirectTerminal = "direct-terminal"
	ModeNoop           = "noop" // exits 0 at once: the probe's stand-in subject
	// ModeProcTrial ([any, Arg, ModeProcTrial]) unshares a mount and a
	// UTS namespace of its own, mounts a fresh procfs over /proc and sets
	// a hostname there, then exits 0, or 3 with "<step> <errno number>"
	// on stderr (step: unshare, proc, hostname): the namespace trial's
	// test of the two steps a nested sandbox is refused for good.
	ModeProcTrial = "proc-trial"
)

// Descriptors the reaper receives beyond stdio.
const (
	FDLiveness = 3
	FDReport   = 4
	FDGo       = 5
)

// Report words, one per line from the reaper to the supervisor.
const (
	ReportSeccomp  = "seccomp"  // "seccomp <mode from /proc/self/status>" (direct: then "cwd=DEV:INO" of its working directory)
	ReportStarted  = "started"  // "started <pid in the reaper's PID namespace>"
	ReportExecErr  = "exec-err" // "exec-err <126|127> <message>"
	ReportExited   = "exited"   // "exited <code>"
	ReportSignaled = "signaled" // "signaled <signal number>"
	ReportError    = "error"    // "error <message>": the reaper could not set up
)

// IDs are the unprivileged user and group a direct reaper started as root
// switches to (and the subject with it). Neither may be 0.
type IDs struct{ UID, GID int }

// Args is the argv (from argv[1]) that runs the subject argv under a
// reaper in mode, with the seccomp program filter (nil: none) and, in
// ModeDirect as root, the ids to switch to (nil: keep the caller's).
//
// fileBytes > 0 (ModeDirect) is the RLIMIT_FSIZE the reaper sets on itself
// before it drops its ids, for the subject to inherit: a root supervisor
// without CAP_SYS_RESOURCE cannot set it on a process of another uid
// afterwards, and os/exec has no way to set it in the child.
//
// cgroupDirs (ModeDirect) are the reaper's descriptor numbers of cgroup v1
// directories it moves itself into before it confines itself (nil: none).
func Args(mode string, filter []unix.SockFilter, ids *IDs, fileBytes int64, cgroupDirs []int, subject []string) []string {
	f := "-"
	if len(filter) > 0 {
		f = EncodeFilter(filter)
	}
	i := "-"
	if ids != nil {
		i = strconv.Itoa(ids.UID) + ":" + strconv.Itoa(ids.GID)
	}
	fs := "-"
	if fileBytes > 0 {
		fs = strconv.FormatInt(fileBytes, 10)
	}
	cg := "-"
	if len(cgroupDirs) > 0 {
		parts := make([]string, len(cgroupDirs))
		for k, fd := range cgroupDirs {
			parts[k] = strconv.Itoa(fd)
		}
		cg = strings.Join(parts, ",")
	}
	return append([]string{Arg, mode, f, i, fs, cg, "--"}, subject...)
}

// EncodeFilter is the hex form of a seccomp program that the reaper reads.
func EncodeFilter(prog []unix.SockFilter) string {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = append(b, byte(in.Code), byte(in.Code>>8), in.Jt, in.Jf,
			byte(in.K), byte(in.K>>8), byte(in.K>>16), byte(in.K>>24))
	}
	return hex.EncodeToString(b)
}

// cConstants returns the C side's strings and descriptors in the order of
// tvs_constant and tvs_fd, for the test that keeps both sides in step.
func cConstants() (strs []string, fds []int) {
	for i := 0; ; i++ {
		p := C.tvs_constant(C.int(i))
		if p == nil {
			break
		}
		strs = append(strs, C.GoString(p))
	}
	for i := 0; ; i++ {
		fd := int(C.tvs_fd(C.int(i)))
		if fd < 0 {
			break
		}
		fds = append(fds, fd)
	}
	return strs, fds
}
