package sandbox

import (
	"fmt"
	"runtime"
	"strings"

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
//
// socket(2) and socketpair(2) are the exception: their address family is
// an allow-list (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK with
// NETLINK_ROUTE or NETLINK_SOCK_DIAG), because the network namespace only
// confines the families it namespaces. AF_VSOCK shares the host's port
// space (bind there meets host listeners) and NETLINK_KOBJECT_UEVENT
// delivers the host's device events into a namespace owned by the initial
// user namespace; the long tail of families (packet, alg, bluetooth, key,
// xdp, tipc, rds, ...) reaches nothing a subject needs and has a history
// of kernel bugs. Programs need exactly the allowed four, whatever the
// network mode, and the same filter is correct for the direct runner too
// (isolation none): there it costs a host subject vsock and uevents only.
//
// Under isolation os, socket(AF_UNIX) itself is refused (EPERM);
// socketpair(AF_UNIX) stays. A pathname unix socket is a file: one in
// the mapped root (or anywhere a host process can also reach) is the same
// socket on both sides of the network namespace, so a host process
// listening there is a host service the subject can talk to, and either
// side can pass the other a descriptor over SCM_RIGHTS, a connected host
// TCP socket included: a network-deny receipt would be false. Seccomp
// cannot see the address of bind or connect (it is in memory), so the
// socket is refused where it is made, as sandbox-runtime does by default.
// socketpair needs no address and connects only the two descriptors it
// returns, which stay in the sandbox (its stdio are pipes, and nothing
// else of the host is handed in). The reaper and libcontainer's init use
// no unix socket of their own after the filter is installed; programs
// that listen on or connect to one (tmux's server, gpg-agent, ssh's
// ControlMaster, git's credential-cache, a local database server, Python
// multiprocessing managers, syslog to /dev/log, nscd) lose it.

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
		fmt.Sprintf("socket, socketpair: %s when the family is not one of %s (AF_VSOCK reaches the host, not namespaced; the rest is kernel attack surface)",
			unix.ErrnoName(errFamily), ruleNames(socketFamilies())),
		fmt.Sprintf("socket, socketpair AF_NETLINK: %s when the protocol is not one of %s (NETLINK_KOBJECT_UEVENT carries host uevents; the rest is host state or attack surface)",
			unix.ErrnoName(errNetlinkProto), ruleNames(netlinkProtocols())),
		fmt.Sprintf("socket AF_UNIX (isolation os): %s; socketpair stays (a pathname socket in the mapped root is the same socket on both sides of the network namespace)",
			unix.ErrnoName(errUnixSocket)),
		"ioctl: EPERM for TIOCSTI and TIOCLINUX (terminal input injection)",
		fmt.Sprintf("%s: EPERM when the mode carries S_ISUID or S_ISGID (for the open family only when creating): no set-id file leaves the sandbox", ruleNames(setIDArgRules())),
		"any non-native ABI (i386 int 0x80): process killed; x32 numbers: ENOSYS",
	)
}

// setIDRule is a call that can give a file the set-user-ID or
// set-group-ID bit: where its mode argument is, and for the open family
// where its flags are (0: the mode always applies).
type setIDRule struct {
	name              string
	nr                uint32
	flagsOff, modeOff uint32
}

// setIDBits are S_ISUID and S_ISGID.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// creatingFlags are the open flags under which the mode argument is used:
// O_CREAT, and O_TMPFILE's own bit (O_TMPFILE also carries O_DIRECTORY,
// which alone creates nothing).
const creatingFlags = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// Why no set-id file: a subject that runs as host uid 0 without
// capabilities (the rootless path as root: a container's root lacking one
// of rootfulCaps) could otherwise chmod 4755 a copy of a shell in the
// mapped root, and any local user who can reach that directory would run
// it as root; a non-root caller's subject could plant set-user-ID-caller
// files the same way. The sandbox's own mounts are nosuid, so nothing
// inside needs such a file; the mode bits are refused wherever they would
// be set (chmod family; open, creat, mknod families when creating).
// openat2 carries its mode in memory, where a filter cannot look: it is
// ENOSYS, and callers fall back to openat.

// setIDArgRules is setIDRules for the policy text (name only).
func setIDArgRules() []argRule {
	var rs []argRule
	for _, r := range setIDRules() {
		rs = append(rs, argRule{name: r.name})
	}
	return rs
}

// argRule is one allowed value of a checked argument.
type argRule struct {
	name string
	val  uint32
}

// The errnos of the socket rule are those the kernel itself gives for a
// family it was built without (EAFNOSUPPORT, from __sock_create) and for
// a netlink protocol nobody registered (EPROTONOSUPPORT, from
// netlink_create): every program that probes for an optional family
// already treats them as "not here" and falls back, where EPERM would read
// as "retry with privileges" or a hard error.
const (
	errFamily       = unix.EAFNOSUPPORT
	errNetlinkProto = unix.EPROTONOSUPPORT
)

// errUnixSocket is what socket(AF_UNIX) gets under isolation os: EPERM,
// because the family exists and works (socketpair) and policy refuses
// it; a program then says "Operation not permitted", not that the kernel
// lacks unix sockets.
const errUnixSocket = unix.EPERM

// socketFamilies is the allow-list of address families for socket(2) and
// socketpair(2); AF_NETLINK is always allowed and further checked against
// netlinkProtocols. The family is an int: the kernel reads the low 32 bits
// of the register, and so does the filter.
func socketFamilies() []argRule {
	return []argRule{
		{"AF_UNIX", unix.AF_UNIX},       // local IPC, socketpair; paths are the mount namespace's
		{"AF_INET", unix.AF_INET},       // the network namespace: loopback, or the allow-list forwarders
		{"AF_INET6", unix.AF_INET6},     // likewise
		{"AF_NETLINK", unix.AF_NETLINK}, // protocol checked against netlinkProtocols
	}
}

// netlinkProtocols is the allow-list of AF_NETLINK protocols. Both are
// network-namespaced: they see only the sandbox's own interfaces and
// sockets.
func netlinkProtocols() []argRule {
	return []argRule{
		// getifaddrs (glibc, also behind getaddrinfo's AI_ADDRCONFIG), Go's
		// net.Interfaces, ip: the namespace's own interfaces and routes;
		// changing them needs CAP_NET_ADMIN.
		{"NETLINK_ROUTE", unix.NETLINK_ROUTE},
		// ss: the namespace's own sockets (inet, unix, netlink, packet
		// diag all filter by netns); SOCK_DESTROY needs CAP_NET_ADMIN.
		{"NETLINK_SOCK_DIAG", unix.NETLINK_SOCK_DIAG},
	}
}

func ruleNames(rs []argRule) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.name
	}
	return strings.Join(names, ", ")
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
	offArg2 = 32
	offArg3 = 40
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
// "jeq nr, ret errno" pair and every argument check ends in returns (or,
// for socket(AF_UNIX), falls through to a reload), so all jumps are short
// and no jump offset can overflow its 8 bits. unixSockets keeps
// socket(AF_UNIX): the direct runner's filter, whose subject shares the
// host's network and filesystem anyway; a sandbox's filter refuses it.
func buildFilter(unixSockets bool) ([]unix.SockFilter, error) {
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
	if !unixSockets {
		// socket(AF_UNIX) → EPERM; any other family falls through to the
		// reload and the family check below.
		p = append(p, argBlock(unix.SYS_SOCKET, offArg0, []unix.SockFilter{
			jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_UNIX, 0, 1),
			retErrno(errUnixSocket),
		})...)
		p = append(p, reload)
	}
	// socket and socketpair share one body: "jeq socket" jumps over
	// "jeq socketpair" into it, and a miss on both skips it whole.
	sock := socketBody()
	p = append(p, jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SOCKET, 1, 0))
	p = append(p, argBlock(unix.SYS_SOCKETPAIR, offArg0, sock)...)
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
	p = append(p, reload)
	for _, r := range setIDRules() {
		if r.flagsOff == 0 {
			p = append(p, argBlock(r.nr, r.modeOff, modeBody())...)
		} else {
			p = append(p, argBlock(r.nr, r.flagsOff, createBody(r.modeOff))...)
		}
		p = append(p, reload)
	}
	p = append(p, retAllow)
	if len(p) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp filter too long: %d instructions", len(p))
	}
	return p, nil
}

// modeBody refuses a mode (in A) with a set-id bit.
func modeBody() []unix.SockFilter {
	return []unix.SockFilter{
		jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, setIDBits, 0, 1),
		retErrno(unix.EPERM),
		retAllow,
	}
}

// createBody refuses an open whose flags (in A) create a file and whose
// mode (at modeOff) has a set-id bit; without creating flags the mode is
// ignored by the kernel, and so here.
func createBody(modeOff uint32) []unix.SockFilter {
	return []unix.SockFilter{
		jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, creatingFlags, 0, 3),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, modeOff),
		jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, setIDBits, 0, 1),
		retErrno(unix.EPERM),
		retAllow,
	}
}

// socketBody checks a socket or socketpair call whose family (arg0) is in
// A. Allowed families jump to the shared allow; AF_NETLINK goes on to load
// the protocol (arg2) and check it; every other family falls through to
// the family errno. The type (arg1) is not looked at: it carries
// SOCK_CLOEXEC/SOCK_NONBLOCK, and no type of an allowed family reaches
// outside the namespace (raw and packet-like types need CAP_NET_RAW,
// which is dropped). The body is a few dozen instructions at most, so its
// 8-bit offsets cannot overflow.
//
// Layout: family checks, netlink check, load arg2, protocol checks,
// ret protocol errno, ret allow, ret family errno.
//
// Sockets have no other way in on amd64: its only socketcall(2) is in the
// i386 ABI, which the architecture check kills, and io_uring (whose
// IORING_OP_SOCKET would bypass this check) is denied. A port to an
// architecture with a native socketcall (s390x) must deny it as well.
func socketBody() []unix.SockFilter {
	var fams, protos []uint32
	for _, r := range socketFamilies() {
		if r.val != unix.AF_NETLINK {
			fams = append(fams, r.val)
		}
	}
	for _, r := range netlinkProtocols() {
		protos = append(protos, r.val)
	}
	n := len(fams) + 2 + len(protos) + 1 // instructions before the allow
	allow := n
	deny := n + 1
	b := make([]unix.SockFilter, 0, n+2)
	to := func(target int) uint8 { return uint8(target - len(b) - 1) } // offset from the next instruction
	for _, f := range fams {
		b = append(b, jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, f, to(allow), 0))
	}
	b = append(b, jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_NETLINK, 0, to(deny)))
	b = append(b, stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg2))
	for _, pr := range protos {
		b = append(b, jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, pr, to(allow), 0))
	}
	b = append(b, retErrno(errNetlinkProto), retAllow, retErrno(errFamily))
	return b
}
