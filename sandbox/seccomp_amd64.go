package sandbox

import "golang.org/x/sys/unix"

const hasX32 = true

func auditArch() (uint32, bool) { return unix.AUDIT_ARCH_X86_64, true }

// deniedSyscalls is the amd64 deny-list. EPERM is what the kernel itself
// would say to a process without the capability; ENOSYS is used where
// callers are known to fall back (clone3 → clone in glibc and Go, io_uring
// → ordinary I/O).
func deniedSyscalls() []syscallRule {
	eperm := func(name string, nr uintptr, why string) syscallRule {
		return syscallRule{name, uint32(nr), unix.EPERM, why}
	}
	enosys := func(name string, nr uintptr, why string) syscallRule {
		return syscallRule{name, uint32(nr), unix.ENOSYS, why}
	}
	return []syscallRule{
		eperm("mount", unix.SYS_MOUNT, "filesystem view is fixed"),
		eperm("umount2", unix.SYS_UMOUNT2, "filesystem view is fixed"),
		eperm("pivot_root", unix.SYS_PIVOT_ROOT, "filesystem view is fixed"),
		eperm("chroot", unix.SYS_CHROOT, "filesystem view is fixed"),
		eperm("open_tree", unix.SYS_OPEN_TREE, "new mount API"),
		eperm("move_mount", unix.SYS_MOVE_MOUNT, "new mount API"),
		eperm("fsopen", unix.SYS_FSOPEN, "new mount API"),
		eperm("fsconfig", unix.SYS_FSCONFIG, "new mount API"),
		eperm("fsmount", unix.SYS_FSMOUNT, "new mount API"),
		eperm("fspick", unix.SYS_FSPICK, "new mount API"),
		eperm("mount_setattr", unix.SYS_MOUNT_SETATTR, "new mount API"),
		eperm("setns", unix.SYS_SETNS, "no way back into another namespace"),
		enosys("clone3", unix.SYS_CLONE3, "flags are in memory, not checkable; libc falls back to clone"),
		eperm("ptrace", unix.SYS_PTRACE, "no tracing, even of same-uid processes"),
		eperm("process_vm_readv", unix.SYS_PROCESS_VM_READV, "cross-process memory access"),
		eperm("process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, "cross-process memory access"),
		eperm("pidfd_getfd", unix.SYS_PIDFD_GETFD, "stealing another process's descriptors"),
		eperm("kcmp", unix.SYS_KCMP, "kernel pointer comparison oracle"),
		eperm("keyctl", unix.SYS_KEYCTL, "kernel keyrings are not namespaced"),
		eperm("add_key", unix.SYS_ADD_KEY, "kernel keyrings are not namespaced"),
		eperm("request_key", unix.SYS_REQUEST_KEY, "kernel keyrings are not namespaced"),
		eperm("bpf", unix.SYS_BPF, "kernel attack surface"),
		eperm("perf_event_open", unix.SYS_PERF_EVENT_OPEN, "kernel attack surface, side channels"),
		eperm("userfaultfd", unix.SYS_USERFAULTFD, "stalls kernel paths in exploit races"),
		enosys("openat2", unix.SYS_OPENAT2, "its mode is in memory, where the set-id check cannot look; callers fall back to openat"),
		enosys("io_uring_setup", unix.SYS_IO_URING_SETUP, "kernel attack surface; callers fall back"),
		enosys("io_uring_enter", unix.SYS_IO_URING_ENTER, "kernel attack surface; callers fall back"),
		enosys("io_uring_register", unix.SYS_IO_URING_REGISTER, "kernel attack surface; callers fall back"),
		eperm("open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, "opens files outside the mount namespace (shocker)"),
		eperm("name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, "pairs with open_by_handle_at"),
		eperm("kexec_load", unix.SYS_KEXEC_LOAD, "host kernel replacement"),
		eperm("kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, "host kernel replacement"),
		eperm("init_module", unix.SYS_INIT_MODULE, "kernel modules"),
		eperm("finit_module", unix.SYS_FINIT_MODULE, "kernel modules"),
		eperm("delete_module", unix.SYS_DELETE_MODULE, "kernel modules"),
		eperm("reboot", unix.SYS_REBOOT, "host state"),
		eperm("swapon", unix.SYS_SWAPON, "host state"),
		eperm("swapoff", unix.SYS_SWAPOFF, "host state"),
		eperm("acct", unix.SYS_ACCT, "host state"),
		eperm("syslog", unix.SYS_SYSLOG, "kernel log leaks addresses"),
		eperm("quotactl", unix.SYS_QUOTACTL, "host state"),
		eperm("settimeofday", unix.SYS_SETTIMEOFDAY, "host clock"),
		eperm("clock_settime", unix.SYS_CLOCK_SETTIME, "host clock"),
		eperm("clock_adjtime", unix.SYS_CLOCK_ADJTIME, "host clock"),
		eperm("iopl", unix.SYS_IOPL, "raw I/O ports"),
		eperm("ioperm", unix.SYS_IOPERM, "raw I/O ports"),
		eperm("uselib", unix.SYS_USELIB, "obsolete loader path"),
		eperm("vhangup", unix.SYS_VHANGUP, "terminal hijack"),
		eperm("lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE, "kernel attack surface"),
	}
}

// setIDRules are the calls that can set S_ISUID or S_ISGID on a file, with
// the offsets of their flags (open family) and mode arguments.
func setIDRules() []setIDRule {
	return []setIDRule{
		{"chmod", unix.SYS_CHMOD, 0, offArg1},
		{"fchmod", unix.SYS_FCHMOD, 0, offArg1},
		{"fchmodat", unix.SYS_FCHMODAT, 0, offArg2},
		{"fchmodat2", unix.SYS_FCHMODAT2, 0, offArg2},
		{"creat", unix.SYS_CREAT, 0, offArg1},
		{"mknod", unix.SYS_MKNOD, 0, offArg1},
		{"mknodat", unix.SYS_MKNODAT, 0, offArg2},
		{"open", unix.SYS_OPEN, offArg1, offArg2},
		{"openat", unix.SYS_OPENAT, offArg2, offArg3},
	}
}
