package sandbox

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// The seccomp filter is a classic-BPF program built here in Go, handed to
// our PID-1 reaper (internal/reaper, C) in its argv, and installed by the
// reaper on itself before it forks the subject, which inherits it across
// fork and execve. Building it in Go avoids libcontainer's seccomp
// path, which needs cgo libseccomp (-tags seccomp, libseccomp-dev and a
// runtime libseccomp.so); a deny-list is a few dozen instructions, small
// enough to read and test directly.
//
// Policy: a deny-list (default allow), because the subject is arbitrary
// user code (compilers, interpreters, test suites) and an allow-list would
// break it in ways that look like bugs in the subject. What is denied is
// what a capability-less, no_new_privs process in fresh namespaces could
// still use to attack the kernel or reach outside the sandbox.

// syscallRule denies one system call with an errno.
type syscallRule struct {
	name  string
	nr    uint32
	errno unix.Errno
	why   string
}

// SeccompPolicy describes the filter for humans: one line per denied call
// ("name: errno (why)"), the argument-checked calls last. docs/SANDBOX.md
// reproduces it.
func SeccompPolicy() []string {
	var lines []string
	for _, r := range deniedSyscalls() {
		lines = append(lines, fmt.Sprintf("%s: %s (%s)", r.name, unix.ErrnoName(r.errno), r.why))
	}
	return append(lines,
		"clone: EPERM when flags carry CLONE_NEW* (no new namespaces)",
		"unshare: EPERM when flags carry CLONE_NEW* incl. CLONE_NEWTIME",
		"ioctl: EPERM for TIOCSTI and TIOCLINUX (terminal input injection)",
		"any non-native ABI (i386 int 0x80): process killed; x32 numbers: ENOSYS",
	)
}

// nsFlags are every CLONE_NEW* flag a clone or unshare may not carry.
// CLONE_NEWTIME (0x80) shares bits with clone's exit signal byte, so it is
// only checked for unshare.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// seccomp_data offsets (include/uapi/linux/seccomp.h).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian
	offArg1 = 24
)

// x32SyscallBit marks the x32 ABI's system call numbers on x86_64.
const x32SyscallBit = 0x40000000

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}
func retErrno(e unix.Errno) unix.SockFilter {
	return stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|(uint32(e)&unix.SECCOMP_RET_DATA))
}

var retAllow = stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW)

// buildFilter assembles the program. Every deny is a two-instruction
// "jeq nr, ret errno" pair and every argument check ends in returns, so all
// jumps are short and no jump offset can overflow its 8 bits.
func buildFilter() ([]unix.SockFilter, error) {
	arch, ok := auditArch()
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedArch, runtime.GOARCH)
	}
	p := []unix.SockFilter{
		// A foreign ABI (e.g. i386 via int 0x80 on x86_64) would see other
		// syscall numbers: kill it rather than filter it wrongly.
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, arch, 1, 0),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_KILL_PROCESS),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr),
	}
	if hasX32 {
		// x32 numbers would bypass the checks below: ENOSYS for all of them.
		p = append(p, jump(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, x32SyscallBit, 0, 1), retErrno(unix.ENOSYS))
	}
	for _, r := range deniedSyscalls() {
		p = append(p, jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, r.nr, 0, 1), retErrno(r.errno))
	}
	// clone: namespace flags in arg0 → EPERM. The block reloads nothing
	// after it, so it ends in returns and goes last but two.
	argBlock := func(nr uint32, off uint32, body []unix.SockFilter) []unix.SockFilter {
		b := []unix.SockFilter{
			jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, nr, 0, uint8(len(body)+1)),
			stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off),
		}
		return append(b, body...)
	}
	nsBody := func(mask uint32) []unix.SockFilter {
		return []unix.SockFilter{
			jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, mask, 0, 1),
			retErrno(unix.EPERM),
			retAllow,
		}
	}
	// After an argument block A no longer holds the number: reload it.
	reload := stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr)
	p = append(p, argBlock(unix.SYS_CLONE, offArg0, nsBody(nsFlags))...)
	p = append(p, reload)
	p = append(p, argBlock(unix.SYS_UNSHARE, offArg0, nsBody(nsFlags|unix.CLONE_NEWTIME))...)
	p = append(p, reload)
	// ioctl: TIOCSTI (type into the controlling terminal) and TIOCLINUX
	// (console selection paste) push input into another process's
	// terminal. The command is an unsigned int: the low word is all of it.
	p = append(p, argBlock(unix.SYS_IOCTL, offArg1, []unix.SockFilter{
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.TIOCSTI, 2, 0),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.TIOCLINUX, 1, 0),
		retAllow,
		retErrno(unix.EPERM),
	})...)
	p = append(p, retAllow)
	if len(p) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp filter too long: %d instructions", len(p))
	}
	return p, nil
}
