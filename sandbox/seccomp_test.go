package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFilterShape checks the program's invariants: it starts with the
// architecture check, every jump lands inside the program, and it ends
// in a return.
func TestFilterShape(t *testing.T) {
	for _, unixSockets := range []bool{false, true} {
		p, err := buildFilter(unixSockets)
		if err != nil {
			t.Skipf("no filter on this architecture: %v", err)
		}
		checkFilterShape(t, p)
	}
	if len(SeccompPolicy()) < 40 {
		t.Errorf("policy lists %d lines", len(SeccompPolicy()))
	}
}

func checkFilterShape(t *testing.T, p []unix.SockFilter) {
	t.Helper()
	if p[0].Code != unix.BPF_LD|unix.BPF_W|unix.BPF_ABS || p[0].K != offArch {
		t.Errorf("first instruction %+v does not load the architecture", p[0])
	}
	for i, ins := range p {
		if ins.Code&0x07 == unix.BPF_JMP {
			for _, off := range []uint8{ins.Jt, ins.Jf} {
				if i+1+int(off) >= len(p) {
					t.Errorf("instruction %d jumps past the end", i)
				}
			}
		}
	}
	if last := p[len(p)-1]; last.Code != unix.BPF_RET|unix.BPF_K || last.K != unix.SECCOMP_RET_ALLOW {
		t.Errorf("last instruction %+v", last)
	}
}

// TestFilterEval runs the program through a tiny classic-BPF evaluator
// for the calls the containment suite cannot reach directly.
func TestFilterEval(t *testing.T) {
	p, err := buildFilter(false)
	if err != nil {
		t.Skipf("no filter on this architecture: %v", err)
	}
	arch, _ := auditArch()
	cases := []struct {
		name string
		arch uint32
		nr   uint32
		args [4]uint64
		want uint32
	}{
		{"read allowed", arch, unix.SYS_READ, [4]uint64{}, unix.SECCOMP_RET_ALLOW},
		{"fork-style clone allowed", arch, unix.SYS_CLONE, [4]uint64{uint64(unix.SIGCHLD)}, unix.SECCOMP_RET_ALLOW},
		{"thread clone allowed", arch, unix.SYS_CLONE, [4]uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, unix.SECCOMP_RET_ALLOW},
		{"clone newuser", arch, unix.SYS_CLONE, [4]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, seccompErrno(unix.EPERM)},
		{"unshare files allowed", arch, unix.SYS_UNSHARE, [4]uint64{unix.CLONE_FILES}, unix.SECCOMP_RET_ALLOW},
		{"unshare newtime", arch, unix.SYS_UNSHARE, [4]uint64{unix.CLONE_NEWTIME}, seccompErrno(unix.EPERM)},
		{"ioctl tiocsti", arch, unix.SYS_IOCTL, [4]uint64{0, unix.TIOCSTI}, seccompErrno(unix.EPERM)},
		{"ioctl tiocsti high bits", arch, unix.SYS_IOCTL, [4]uint64{0, 1<<32 | unix.TIOCSTI}, seccompErrno(unix.EPERM)},
		{"ioctl tcgets allowed", arch, unix.SYS_IOCTL, [4]uint64{0, unix.TCGETS}, unix.SECCOMP_RET_ALLOW},
		{"io_uring enosys", arch, unix.SYS_IO_URING_SETUP, [4]uint64{}, seccompErrno(unix.ENOSYS)},
		{"foreign arch killed", unix.AUDIT_ARCH_I386, 1, [4]uint64{}, unix.SECCOMP_RET_KILL_PROCESS},
		// socket(2): family in arg0, type (with flags) in arg1, protocol in arg2.
		{"socket vsock", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, seccompErrno(unix.EAFNOSUPPORT)},
		{"socket vsock high bits ignored like the kernel", arch, unix.SYS_SOCKET, [4]uint64{1<<32 | unix.AF_VSOCK, unix.SOCK_STREAM, 0}, seccompErrno(unix.EAFNOSUPPORT)},
		{"socketpair vsock", arch, unix.SYS_SOCKETPAIR, [4]uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, seccompErrno(unix.EAFNOSUPPORT)},
		{"socket packet", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, seccompErrno(unix.EAFNOSUPPORT)},
		{"socket alg", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_ALG, unix.SOCK_SEQPACKET, 0}, seccompErrno(unix.EAFNOSUPPORT)},
		{"socket negative family", arch, unix.SYS_SOCKET, [4]uint64{0xffffffff, unix.SOCK_STREAM, 0}, seccompErrno(unix.EAFNOSUPPORT)},
		{"socket netlink uevent", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_NETLINK, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT}, seccompErrno(unix.EPROTONOSUPPORT)},
		{"socket netlink audit", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, seccompErrno(unix.EPROTONOSUPPORT)},
		{"socket netlink generic", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC}, seccompErrno(unix.EPROTONOSUPPORT)},
		{"socket netlink route high bits", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_NETLINK, unix.SOCK_RAW, 1<<32 | unix.NETLINK_ROUTE}, unix.SECCOMP_RET_ALLOW},
		{"socketpair netlink uevent", arch, unix.SYS_SOCKETPAIR, [4]uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT}, seccompErrno(unix.EPROTONOSUPPORT)},
		{"socket unix refused", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, 0}, seccompErrno(unix.EPERM)},
		{"socket unix high bits refused like the kernel", arch, unix.SYS_SOCKET, [4]uint64{1<<32 | unix.AF_UNIX, unix.SOCK_DGRAM, 0}, seccompErrno(unix.EPERM)},
		{"socketpair unix allowed", arch, unix.SYS_SOCKETPAIR, [4]uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0}, unix.SECCOMP_RET_ALLOW},
		{"socket inet allowed", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, unix.IPPROTO_TCP}, unix.SECCOMP_RET_ALLOW},
		{"socket inet6 allowed", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_INET6, unix.SOCK_DGRAM, 0}, unix.SECCOMP_RET_ALLOW},
		{"socket netlink route allowed", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, unix.SECCOMP_RET_ALLOW},
		{"socket netlink sock_diag allowed", arch, unix.SYS_SOCKET, [4]uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG}, unix.SECCOMP_RET_ALLOW},
		// The socket block sits between others: their checks still hold.
		{"ioctl after socket block", arch, unix.SYS_IOCTL, [4]uint64{0, unix.TIOCSTI}, seccompErrno(unix.EPERM)},
		{"connect not checked", arch, unix.SYS_CONNECT, [4]uint64{3, 0, 0}, unix.SECCOMP_RET_ALLOW},
		// No set-id file: a host-uid-0 subject could plant a
		// set-user-ID-root shell for local users.
		{"chmod 4755", arch, unix.SYS_CHMOD, [4]uint64{0, 0o4755}, seccompErrno(unix.EPERM)},
		{"chmod 2755", arch, unix.SYS_CHMOD, [4]uint64{0, 0o2755}, seccompErrno(unix.EPERM)},
		{"chmod 755 allowed", arch, unix.SYS_CHMOD, [4]uint64{0, 0o755}, unix.SECCOMP_RET_ALLOW},
		{"chmod 1777 allowed (sticky)", arch, unix.SYS_CHMOD, [4]uint64{0, 0o1777}, unix.SECCOMP_RET_ALLOW},
		{"fchmod 4755", arch, unix.SYS_FCHMOD, [4]uint64{3, 0o4755}, seccompErrno(unix.EPERM)},
		{"fchmodat u+s", arch, unix.SYS_FCHMODAT, [4]uint64{unix.AT_FDCWD & 0xffffffff, 0, 0o4700}, seccompErrno(unix.EPERM)},
		{"fchmodat 644 allowed", arch, unix.SYS_FCHMODAT, [4]uint64{unix.AT_FDCWD & 0xffffffff, 0, 0o644}, unix.SECCOMP_RET_ALLOW},
		{"fchmodat2 g+s", arch, unix.SYS_FCHMODAT2, [4]uint64{3, 0, 0o2750, 0}, seccompErrno(unix.EPERM)},
		{"creat 4755", arch, unix.SYS_CREAT, [4]uint64{0, 0o4755}, seccompErrno(unix.EPERM)},
		{"mknod 4644", arch, unix.SYS_MKNOD, [4]uint64{0, unix.S_IFREG | 0o4644}, seccompErrno(unix.EPERM)},
		{"mknodat fifo allowed", arch, unix.SYS_MKNODAT, [4]uint64{3, 0, unix.S_IFIFO | 0o644}, unix.SECCOMP_RET_ALLOW},
		{"open creating 4755", arch, unix.SYS_OPEN, [4]uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, seccompErrno(unix.EPERM)},
		{"open creating 644 allowed", arch, unix.SYS_OPEN, [4]uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o644}, unix.SECCOMP_RET_ALLOW},
		{"open not creating, garbage mode allowed", arch, unix.SYS_OPEN, [4]uint64{0, unix.O_RDONLY, 0o4755}, unix.SECCOMP_RET_ALLOW},
		{"openat creating 4755", arch, unix.SYS_OPENAT, [4]uint64{3, 0, unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, 0o4755}, seccompErrno(unix.EPERM)},
		{"openat tmpfile 2755", arch, unix.SYS_OPENAT, [4]uint64{3, 0, unix.O_TMPFILE | unix.O_RDWR, 0o2755}, seccompErrno(unix.EPERM)},
		{"openat directory only allowed", arch, unix.SYS_OPENAT, [4]uint64{3, 0, unix.O_DIRECTORY | unix.O_RDONLY, 0o4755}, unix.SECCOMP_RET_ALLOW},
		{"openat creating 600 allowed", arch, unix.SYS_OPENAT, [4]uint64{3, 0, unix.O_CREAT | unix.O_WRONLY, 0o600}, unix.SECCOMP_RET_ALLOW},
		{"openat2 enosys", arch, unix.SYS_OPENAT2, [4]uint64{3, 0, 0, 24}, seccompErrno(unix.ENOSYS)},
	}
	if hasX32 {
		cases = append(cases, struct {
			name string
			arch uint32
			nr   uint32
			args [4]uint64
			want uint32
		}{"x32 enosys", arch, x32SyscallBit | unix.SYS_READ, [4]uint64{}, seccompErrno(unix.ENOSYS)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := evalBPF(t, p, tc.arch, tc.nr, tc.args); got != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestFilterSocketFamilies sweeps every family and every netlink protocol
// the kernel knows (and some beyond): exactly the allow-lists pass, for
// socket and socketpair alike, and everything else gets the documented
// errno.
//
// The sandbox's filter (unixSockets false) also refuses socket(AF_UNIX)
// with EPERM, and keeps socketpair(AF_UNIX); the direct runner's keeps
// both (TestUnixSocketCrossesNoNamespace).
func TestFilterSocketFamilies(t *testing.T) {
	for _, unixSockets := range []bool{false, true} {
		p, err := buildFilter(unixSockets)
		if err != nil {
			t.Skipf("no filter on this architecture: %v", err)
		}
		checkSocketFamilies(t, p, unixSockets)
	}
}

func checkSocketFamilies(t *testing.T, p []unix.SockFilter, unixSockets bool) {
	t.Helper()
	arch, _ := auditArch()
	allowedFam := map[uint32]bool{unix.AF_UNIX: true, unix.AF_INET: true, unix.AF_INET6: true, unix.AF_NETLINK: true}
	allowedProto := map[uint32]bool{unix.NETLINK_ROUTE: true, unix.NETLINK_SOCK_DIAG: true}
	for _, nr := range []uint32{unix.SYS_SOCKET, unix.SYS_SOCKETPAIR} {
		for fam := uint32(0); fam < 2*unix.AF_MAX; fam++ {
			want := seccompErrno(unix.EAFNOSUPPORT)
			switch {
			case fam == unix.AF_UNIX && nr == unix.SYS_SOCKET && !unixSockets:
				want = seccompErrno(unix.EPERM)
			case allowedFam[fam]:
				want = unix.SECCOMP_RET_ALLOW
			}
			if got := evalBPF(t, p, arch, nr, [4]uint64{uint64(fam), unix.SOCK_STREAM, 0}); got != want {
				t.Errorf("unix sockets %v: nr %d family %d: got %#x, want %#x", unixSockets, nr, fam, got, want)
			}
		}
		for proto := uint32(0); proto < 64; proto++ {
			want := seccompErrno(unix.EPROTONOSUPPORT)
			if allowedProto[proto] {
				want = unix.SECCOMP_RET_ALLOW
			}
			if got := evalBPF(t, p, arch, nr, [4]uint64{unix.AF_NETLINK, unix.SOCK_RAW, uint64(proto)}); got != want {
				t.Errorf("nr %d netlink protocol %d: got %#x, want %#x", nr, proto, got, want)
			}
		}
	}
}

// seccompErrno is the return value of a filter that fails the call with e.
func seccompErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// evalBPF interprets the subset of classic BPF buildFilter emits.
func evalBPF(t *testing.T, p []unix.SockFilter, arch, nr uint32, args [4]uint64) uint32 {
	t.Helper()
	var a uint32
	for pc := 0; pc < len(p); pc++ {
		ins := p[pc]
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch ins.K {
			case offNr:
				a = nr
			case offArch:
				a = arch
			case offArg0:
				a = uint32(args[0])
			case offArg1:
				a = uint32(args[1])
			case offArg2:
				a = uint32(args[2])
			case offArg3:
				a = uint32(args[3])
			default:
				t.Fatalf("load of offset %d", ins.K)
			}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var cond bool
			switch ins.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				cond = a == ins.K
			case unix.BPF_JGE:
				cond = a >= ins.K
			case unix.BPF_JSET:
				cond = a&ins.K != 0
			}
			if cond {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return ins.K
		default:
			t.Fatalf("instruction %+v not modelled", ins)
		}
	}
	t.Fatal("fell off the end")
	return 0
}
