package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFilterShape checks the program's invariants: it starts with the
// architecture check, every jump lands inside the program, and it ends
// in a return.
func TestFilterShape(t *testing.T) {
	p, err := buildFilter()
	if err != nil {
		t.Skipf("no filter on this architecture: %v", err)
	}
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
	if len(SeccompPolicy()) < 40 {
		t.Errorf("policy lists %d lines", len(SeccompPolicy()))
	}
}

// TestFilterEval runs the program through a tiny classic-BPF evaluator
// for the calls the containment suite cannot reach directly.
func TestFilterEval(t *testing.T) {
	p, err := buildFilter()
	if err != nil {
		t.Skipf("no filter on this architecture: %v", err)
	}
	arch, _ := auditArch()
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	cases := []struct {
		name string
		arch uint32
		nr   uint32
		args [2]uint64
		want uint32
	}{
		{"read allowed", arch, unix.SYS_READ, [2]uint64{}, unix.SECCOMP_RET_ALLOW},
		{"fork-style clone allowed", arch, unix.SYS_CLONE, [2]uint64{uint64(unix.SIGCHLD)}, unix.SECCOMP_RET_ALLOW},
		{"thread clone allowed", arch, unix.SYS_CLONE, [2]uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, unix.SECCOMP_RET_ALLOW},
		{"clone newuser", arch, unix.SYS_CLONE, [2]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, errno(unix.EPERM)},
		{"unshare files allowed", arch, unix.SYS_UNSHARE, [2]uint64{unix.CLONE_FILES}, unix.SECCOMP_RET_ALLOW},
		{"unshare newtime", arch, unix.SYS_UNSHARE, [2]uint64{unix.CLONE_NEWTIME}, errno(unix.EPERM)},
		{"ioctl tiocsti", arch, unix.SYS_IOCTL, [2]uint64{0, unix.TIOCSTI}, errno(unix.EPERM)},
		{"ioctl tiocsti high bits", arch, unix.SYS_IOCTL, [2]uint64{0, 1<<32 | unix.TIOCSTI}, errno(unix.EPERM)},
		{"ioctl tcgets allowed", arch, unix.SYS_IOCTL, [2]uint64{0, unix.TCGETS}, unix.SECCOMP_RET_ALLOW},
		{"io_uring enosys", arch, unix.SYS_IO_URING_SETUP, [2]uint64{}, errno(unix.ENOSYS)},
		{"foreign arch killed", unix.AUDIT_ARCH_I386, 1, [2]uint64{}, unix.SECCOMP_RET_KILL_PROCESS},
	}
	if hasX32 {
		cases = append(cases, struct {
			name string
			arch uint32
			nr   uint32
			args [2]uint64
			want uint32
		}{"x32 enosys", arch, x32SyscallBit | unix.SYS_READ, [2]uint64{}, errno(unix.ENOSYS)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := evalBPF(t, p, tc.arch, tc.nr, tc.args); got != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
}

// evalBPF interprets the subset of classic BPF buildFilter emits.
func evalBPF(t *testing.T, p []unix.SockFilter, arch, nr uint32, args [2]uint64) uint32 {
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
