// The sandbox's PID 1 (and, with isolation none, the subject's subreaper),
// run from an ELF constructor so that no Go runtime starts in it. See
// reaper.go for the protocol; the constants below must match it (the
// package's tests compare them).

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "reaper.h"

// say writes one report line in a single write(2): the supervisor reads
// lines, and a failed write only means it is gone (liveness handles that).
static void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof buf - 2)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	while (write(TVS_FD_REPORT, buf, n) < 0 && errno == EINTR)
		;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

// install_filter decodes the program the supervisor built (8 bytes per
// instruction, little-endian struct sock_filter, lower-case hex) and
// installs it on this process; the subject inherits it across fork and
// execve. In a sandbox libcontainer has set no_new_privs already; we set it
// again so the call cannot fail for want of it (and, direct, because no
// one else does).
static int install_filter(const char *hex)
{
	size_t n = strlen(hex);
	if (n == 0 || n % 16 != 0 || n / 16 > BPF_MAXINSNS) {
		say(TVS_REPORT_ERROR " seccomp: filter of %zu hex digits", n);
		return -1;
	}
	size_t len = n / 16;
	struct sock_filter prog[BPF_MAXINSNS];
	unsigned char *b = (unsigned char *)prog;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			say(TVS_REPORT_ERROR " seccomp: bad hex at %zu", 2 * i);
			return -1;
		}
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	struct sock_fprog fprog = {.len = (unsigned short)len, .filter = prog};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		say(TVS_REPORT_ERROR " seccomp: prctl no_new_privs: %s", strerror(errno));
		return -1;
	}
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
		say(TVS_REPORT_ERROR " seccomp: set filter: %s", strerror(errno));
		return -1;
	}
	return 0;
}

// seccomp_mode reads this process's mode (2 = filter) back from the
// kernel, so the report states what is in force, not what was attempted.
static void seccomp_mode(char *out, size_t n)
{
	snprintf(out, n, "unknown");
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "Seccomp:", 8) == 0) {
			char *v = line + 8;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = 0;
			snprintf(out, n, "%s", v);
			break;
		}
	}
	fclose(f);
}

// lookpath is the shell's rule: a name with a slash is a path, returned as
// it is (never copied, so an over-long one fails in execve with
// ENAMETOOLONG instead of being cut to a shorter path that may name another
// file); anything else is searched in $PATH, an empty entry meaning the
// working directory, skipping candidates too long for buf for the same
// reason. NULL: not found.
static const char *lookpath(const char *name, char *buf, size_t n)
{
	if (strchr(name, '/'))
		return name;
	const char *path = getenv("PATH");
	if (!path)
		path = "";
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		int dl = (int)(end - p);
		int w;
		if (dl == 0)
			w = snprintf(buf, n, "./%s", name);
		else
			w = snprintf(buf, n, "%.*s/%s", dl, p, name);
		struct stat st;
		if (w >= 0 && (size_t)w < n && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(buf, X_OK) == 0)
			return buf;
		if (*end == 0)
			break;
		p = end;
	}
	return NULL;
}

// mark_cloexec makes every descriptor above 2 close-on-exec, so the subject
// inherits exactly 0, 1 and 2. Without close_range (Linux < 5.11) it marks
// what /proc/self/fd lists (any number, not only those below 1024; the
// listing's own descriptor is close-on-exec already).
static void mark_cloexec(void)
{
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		for (int fd = 3; fd < 1024; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (fd > 2)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(d);
}

// kill_descendants SIGKILLs our children until none is left. As a
// subreaper every orphaned descendant becomes our child, so repeating until
// wait reports ECHILD reaches the whole tree, forks racing us included.
static void kill_descendants(void)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	for (;;) {
		FILE *f = fopen(path, "re");
		if (f) {
			int pid;
			while (fscanf(f, "%d", &pid) == 1)
				kill(pid, SIGKILL);
			fclose(f);
		}
		int st;
		if (wait4(-1, &st, 0, NULL) < 0 && errno == ECHILD)
			return;
	}
}

// parse_ids reads "UID:GID" (decimal, both non-zero: the subject is never
// switched to root).
static int parse_ids(const char *s, uid_t *uid, gid_t *gid)
{
	char *end;
	errno = 0;
	unsigned long u = strtoul(s, &end, 10);
	if (errno || end == s || *end != ':' || u == 0 || u >= (unsigned long)(uid_t)-1)
		return -1;
	const char *g = end + 1;
	unsigned long v = strtoul(g, &end, 10);
	if (errno || end == g || *end != 0 || v == 0 || v >= (unsigned long)(gid_t)-1)
		return -1;
	*uid = (uid_t)u;
	*gid = (gid_t)v;
	return 0;
}

// confine_direct is isolation none's confinement of this process, which
// the subject inherits across fork and execve: no core dumps, the
// unprivileged ids (ids "UID:GID", as root; "-" keeps the caller's),
// no capabilities, no_new_privs and the seccomp filter (filter "-": none,
// only no_new_privs; the supervisor refuses a start without Seccomp 2).
//
// The ids are switched here, in the reaper, before it parks on FDGo and
// so before the supervisor moves it into its cgroup (root may move a
// process of any uid), rather than in the subject's child only:
//   - the supervisor verifies the parked reaper's /proc status (ids,
//     groups, capabilities, NoNewPrivs, Seccomp) before it releases it,
//     so nothing of the subject runs until what it will inherit is checked;
//   - nothing running as root is left beside hostile code: the subject
//     can kill its reaper (it could as the same uid before, and that is
//     reported as InitLost; the cgroup and the supervisor's Kill still end
//     the tree), but there is no root process of ours for it to attack;
//   - the reaper still kills the whole tree: every descendant has the same
//     uid (no_new_privs: no setuid or file-capability exec can change it),
//     and an unprivileged process may SIGKILL processes of its own uid.
static int confine_direct(const char *ids, const char *fsize, const char *filter)
{
	// A core file would be written as the subject into its working
	// directory, or handed to a core_pattern helper that runs as root.
	struct rlimit core = {0, 0};
	if (setrlimit(RLIMIT_CORE, &core) != 0) {
		say(TVS_REPORT_ERROR " rlimit core: %s", strerror(errno));
		return -1;
	}
	// The per-file size limit, set while we may still lower our own hard
	// limit for good; the supervisor could not set it on us once we are
	// another uid (that needs CAP_SYS_RESOURCE).
	if (strcmp(fsize, "-") != 0) {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(fsize, &end, 10);
		struct rlimit fl = {(rlim_t)n, (rlim_t)n};
		if (errno != 0 || *end != '\0' || n == 0 || setrlimit(RLIMIT_FSIZE, &fl) != 0) {
			say(TVS_REPORT_ERROR " rlimit fsize %s: %s", fsize, strerror(errno ? errno : EINVAL));
			return -1;
		}
	}
	int drop = strcmp(ids, "-") != 0;
	uid_t uid = 0;
	gid_t gid = 0;
	char cwd[PATH_MAX];
	struct stat before;
	if (drop) {
		if (parse_ids(ids, &uid, &gid) != 0) {
			say(TVS_REPORT_ERROR " ids: %s is not UID:GID, both non-zero", ids);
			return -1;
		}
		if (!getcwd(cwd, sizeof cwd) || stat(".", &before) != 0) {
			say(TVS_REPORT_ERROR " workdir: %s", strerror(errno));
			return -1;
		}
	}
	// The bounding set first, while we may still have CAP_SETPCAP: no
	// exec can give a capability back (no_new_privs already forbids it;
	// this is the second lock). Without CAP_SETPCAP (EPERM), or past the
	// last capability (EINVAL), we stop; the supervisor records the set.
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0)
			break;
	if (drop) {
		// Groups, then gid, then uid: each step needs what the next drops.
		if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
			say(TVS_REPORT_ERROR " drop to uid %u gid %u: %s", (unsigned)uid, (unsigned)gid, strerror(errno));
			return -1;
		}
		// The id change set dumpable to fs.suid_dumpable, which may be 1.
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	}
	// setresuid from root clears the permitted, effective and ambient sets
	// but not the inheritable one; an unprivileged caller may hold any of
	// them (file capabilities). Lowering them needs no privilege.
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) != 0) {
		say(TVS_REPORT_ERROR " capset: %s", strerror(errno));
		return -1;
	}
	if (drop) {
		// Root entered the working directory (os/exec's chdir); the new
		// uid must be able to, by its whole path, or the subject would
		// run in a directory it cannot use under the name it is given.
		// It must also still be the same directory.
		struct stat after;
		if (chdir(cwd) != 0) {
			say(TVS_REPORT_ERROR " workdir %s: uid %u gid %u cannot enter it: %s", cwd, (unsigned)uid,
			    (unsigned)gid, strerror(errno));
			return -1;
		}
		if (stat(".", &after) != 0 || after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
			say(TVS_REPORT_ERROR " workdir %s: replaced while the reaper started", cwd);
			return -1;
		}
	}
	if (strcmp(filter, "-") == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
			say(TVS_REPORT_ERROR " prctl no_new_privs: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	return install_filter(filter);
}

// join_cgroups moves this process into the cgroup directories whose
// descriptors fds lists ("-": none; else decimal descriptors joined by
// commas) by writing 0 to each one's tasks file. That moves the calling
// thread, which is the whole process here (the reaper runs before any
// runtime starts a thread), and a thread that moves itself needs none of
// the global lock a move by pid takes, whose RCU grace period costs
// milliseconds. Each descriptor is closed after use. What failed is
// appended to out as " cgroups-failed=FD:ERRNO,..." (empty when all
// succeeded); the supervisor checks the membership itself.
static void join_cgroups(const char *fds, char *out, size_t n)
{
	out[0] = '\0';
	if (strcmp(fds, "-") == 0)
		return;
	size_t used = 0;
	const char *p = fds;
	while (*p) {
		char *end;
		errno = 0;
		long fd = strtol(p, &end, 10);
		if (errno != 0 || end == p || fd < 3 || fd > 65535 || (*end != ',' && *end != '\0')) {
			snprintf(out + used, n - used, "%s0:%d", used ? "," : " cgroups-failed=", EINVAL);
			return;
		}
		int t = openat((int)fd, "tasks", O_WRONLY | O_CLOEXEC);
		int err = 0;
		if (t < 0 || write(t, "0", 1) != 1)
			err = errno ? errno : EIO;
		if (t >= 0)
			close(t);
		close((int)fd);
		if (err != 0 && used < n) {
			int w = snprintf(out + used, n - used, "%s%ld:%d", used ? "," : " cgroups-failed=", fd, err);
			if (w > 0)
				used += (size_t)w;
		}
		p = *end ? end + 1 : end;
	}
}

// take_terminal makes the terminal on fd 0 our controlling terminal if it
// is not yet (libcontainer's init made us a session leader without one)
// and says whether it is now: only a controlling terminal has a foreground
// process group to give the subject. One that is another session's stays
// theirs (TIOCSCTTY fails with EPERM) and nothing changes.
static int take_terminal(void)
{
	pid_t sid = getsid(0);
	if (tcgetsid(0) == sid)
		return 1;
	if (ioctl(0, TIOCSCTTY, 0) != 0)
		return 0;
	return tcgetsid(0) == sid;
}

// spawn is what the subject's child needs, and where it leaves why it
// failed. It lives in the parent's memory, which the child shares until it
// execs (spawn_subject); the child writes only what and err.
struct spawn {
	const char *path;
	char **argv;
	int argc; // entries of argv before its NULL
	char **envp;
	const sigset_t *mask; // the subject's signal mask
	const struct sigaction *pipe_old; // and its SIGPIPE disposition
	int tty;
	// Set by the child before it _exits; what stays CHILD_NONE when it
	// exec'd.
	enum { CHILD_NONE, CHILD_EXEC, CHILD_TERMINAL } what;
	int err;
};

// spawn_child runs in the subject's child on a stack of its own, sharing
// the reaper's memory (CLONE_VM) while the reaper is suspended
// (CLONE_VFORK). Only async-signal-safe calls, no malloc, no stdio, and no
// write to memory the reaper uses except sp->what and sp->err (errno is
// the reaper's too: it reads it only after calls of its own). It never
// returns: it execs or _exits.
static int spawn_child(void *arg)
{
	struct spawn *sp = arg;
	// Every signal is blocked (spawn_subject): none can be handled here,
	// on the reaper's memory, before the exec. The dispositions are the
	// child's own copy (no CLONE_SIGHAND): this one does not reach ours.
	sigaction(SIGPIPE, sp->pipe_old, NULL);
	if (sp->tty) {
		// Done here, before execve, so the subject's first read finds the
		// terminal its own. tcsetpgrp from what is now a background group
		// raises SIGTTOU unless it is blocked, as it is until the mask
		// below.
		if (setpgid(0, 0) != 0 || tcsetpgrp(0, getpid()) != 0) {
			sp->err = errno;
			sp->what = CHILD_TERMINAL;
			_exit(125);
		}
	}
	sigprocmask(SIG_SETMASK, sp->mask, NULL);
	execve(sp->path, sp->argv, sp->envp);
	int e = errno;
	if (e == ENOEXEC) {
		// execvp's rule: a file without a recognised header is a script:
		// sh PATH ARGS... Built on this stack (spawn_subject sized it),
		// never in the reaper's argv.
		char *sh[sp->argc + 2];
		sh[0] = "sh";
		sh[1] = (char *)sp->path;
		for (int i = 1; i <= sp->argc; i++)
			sh[i + 1] = sp->argv[i];
		execve("/bin/sh", sh, sp->envp);
		e = errno;
	}
	sp->err = e;
	sp->what = CHILD_EXEC;
	_exit(127);
}

// spawn_subject starts sp's subject as posix_spawn does: clone with
// CLONE_VM|CLONE_VFORK, so nothing of the reaper's memory is copied and we
// resume once the child has exec'd or died. A fork copied our page tables
// and then took a copy-on-write fault for every page either side wrote
// before the exec, each a trap to the hypervisor on a PVM guest. The
// child's stack is a mapping of its own, big enough for the sh fallback's
// argv; every signal is blocked across the clone. Returns the child's pid,
// or -1 with errno set when the clone failed.
static pid_t spawn_subject(struct spawn *sp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = 64 * 1024 + (size_t)(sp->argc + 2) * sizeof(char *);
	size = (size + page - 1) / page * page;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	sigset_t all, cur;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &cur);
	sp->what = CHILD_NONE;
	pid_t pid = clone(spawn_child, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, sp);
	int e = errno;
	sigprocmask(SIG_SETMASK, &cur, NULL);
	munmap(stack, size);
	errno = e;
	return pid;
}

// The signals passed on to the subject. SIGCHLD drives reaping; SIGPIPE
// and the terminal stop signals are about our own I/O.
static const int forwarded[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
	SIGALRM, SIGWINCH, SIGCONT, SIGVTALRM, SIGPROF, SIGXCPU,
};

// proc_trial is the namespace trial's child (argv: [any, Arg, mode]). In
// the fresh namespaces it was cloned into it does the two steps of a
// sandbox start that are refused for good in common containers, so that
// the trial sees the refusal before anything is set up: it mounts a
// procfs over /proc exactly as libcontainer mounts the sandbox's (refused
// under a container's masked /proc: mount_too_revealing), and sets a
// hostname in its UTS namespace (refused by a default seccomp profile to
// a process without CAP_SYS_ADMIN in the initial user namespace). It
// first unshares a mount and a UTS namespace of its own, whoever started
// it, so neither step can touch its caller's (cloned into fresh ones by
// the trial, these nest inside them and die with the child).
// Exit 0: both done; 3: a step failed, "<step> <errno number>" on stderr
// (step: unshare, proc or hostname); 2: usage.
static int proc_trial(int argc, char **argv)
{
	(void)argv;
	if (argc != 3)
		return 2;
	if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) {
		fprintf(stderr, "unshare %d\n", errno);
		return 3;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
		fprintf(stderr, "proc %d\n", errno);
		return 3;
	}
	static const char name[] = "tvs-trial";
	if (sethostname(name, sizeof name - 1) != 0) {
		fprintf(stderr, "hostname %d\n", errno);
		return 3;
	}
	return 0;
}

static int reaper(int argc, char **argv, char **envp)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[2];
	if (strcmp(mode, TVS_MODE_NOOP) == 0)
		return 0;
	if (strcmp(mode, TVS_MODE_PROC_TRIAL) == 0)
		return proc_trial(argc, argv);
	int sandboxed = strcmp(mode, TVS_MODE_SANDBOX) == 0;
	// direct-terminal is direct with fd 0 a terminal the supervisor made
	// for this subject alone (a host pty it opened): the reaper must make
	// it its controlling terminal and the subject its foreground group,
	// or fail. A plain direct reaper never touches a terminal on fd 0,
	// which could be the caller's own.
	int direct_terminal = strcmp(mode, TVS_MODE_DIRECT_TERMINAL) == 0;
	int direct = strcmp(mode, TVS_MODE_DIRECT) == 0 || direct_terminal;
	if ((!sandboxed && !direct) || argc < 9 || strcmp(argv[7], "--") != 0)
		return 2;
	const char *filter = argv[3];
	const char *ids = argv[4];
	const char *fsize = argv[5];
	const char *cgroups = argv[6];
	char **sargv = argv + 8;

	// The subject runs as our uid: without this it could ptrace us or
	// open /proc/1/mem (seccomp also denies ptrace; this is the second lock).
	// confine_direct sets it again after a uid change, which resets it.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	// A report write after the supervisor died must fail with EPIPE, not
	// kill us before liveness does; the subject gets the disposition back.
	struct sigaction ign = {.sa_handler = SIG_IGN}, pipe_old;
	sigaction(SIGPIPE, &ign, &pipe_old);
	// The subject inherits exactly 0, 1 and 2.
	mark_cloexec();

	if (sandboxed) {
		if (install_filter(filter) != 0)
			return 125;
		char m[256];
		seccomp_mode(m, sizeof m);
		say(TVS_REPORT_SECCOMP " %s", m);
	} else {
		// Orphans of the subject re-parent to us, not to the host's init,
		// so we can reap them and kill them on the way out.
		if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
			say(TVS_REPORT_ERROR " subreaper: %s", strerror(errno));
			return 125;
		}
		// Into the cgroup while still root, before anything is forked.
		char joined[256];
		join_cgroups(cgroups, joined, sizeof joined);
		if (confine_direct(ids, fsize, filter) != 0)
			return 125;
		// The supervisor checks our /proc status on this report, then
		// places us in the cgroup and releases us. The identity of our
		// working directory goes with it: a root supervisor without
		// CAP_SYS_PTRACE (a container's default) may not follow
		// /proc/<pid>/cwd into a process of another uid.
		char m[256];
		seccomp_mode(m, sizeof m);
		struct stat cw;
		if (stat(".", &cw) != 0) {
			say(TVS_REPORT_ERROR " workdir: %s", strerror(errno));
			return 125;
		}
		say(TVS_REPORT_SECCOMP " %s cwd=%llu:%llu%s", m, (unsigned long long)cw.st_dev,
		    (unsigned long long)cw.st_ino, joined);
		char b;
		ssize_t r;
		while ((r = read(TVS_FD_GO, &b, 1)) < 0 && errno == EINTR)
			;
		if (r != 1)
			return 125; // the supervisor went away before releasing us
		close(TVS_FD_GO);
	}

	// An inherited SIGCHLD disposition of SIG_IGN (or SA_NOCLDWAIT) would
	// make the kernel reap the subject for us, and its end would never be
	// reported. (The Go reaper always had its own handler.) The subject
	// inherits this default too, as it did from Go.
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, NULL);

	// Signals are blocked before the subject starts and read from a
	// signalfd, so none sent in between is lost; the child gets the old
	// mask back.
	// Blocked signals also reach a PID 1 that has no handler for them.
	sigset_t set, old;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		say(TVS_REPORT_ERROR " signalfd: %s", strerror(errno));
		return 125;
	}

	// A terminal on fd 0 (a sandbox's pty): the subject gets its own
	// process group and becomes the terminal's foreground group, so the
	// terminal's ^C, ^Z and reads reach it as they reach a shell's job.
	// Pipes (and, plain direct, the caller's terminal) change nothing.
	// direct-terminal: we are the session leader os/exec made us
	// (setsid), without a controlling terminal, and fd 0 is the pty the
	// supervisor opened for us: it must become ours, or the subject
	// would run without ^C and job control.
	int tty = sandboxed && isatty(0) && take_terminal();
	if (direct_terminal) {
		if (!isatty(0)) {
			say(TVS_REPORT_ERROR " terminal: fd 0 is not a terminal");
			return 125;
		}
		if (!take_terminal()) {
			say(TVS_REPORT_ERROR " terminal: make it the controlling terminal: %s", strerror(errno));
			return 125;
		}
		tty = 1;
	}

	char buf[PATH_MAX];
	const char *path = lookpath(sargv[0], buf, sizeof buf);
	if (!path) {
		say(TVS_REPORT_EXEC_ERR " 127 %s: command not found", sargv[0]);
		return 127;
	}
	struct spawn sp = {
		.path = path,
		.argv = sargv,
		.argc = argc - 7,
		.envp = envp,
		.mask = &old,
		.pipe_old = &pipe_old,
		.tty = tty,
	};
	pid_t pid = spawn_subject(&sp);
	if (pid < 0) {
		say(TVS_REPORT_ERROR " clone: %s", strerror(errno));
		return 125;
	}
	// The subject's stdio must exist only in the subject: our copies would
	// keep its stdin readable after it closed it (a late write succeeds
	// instead of EPIPE) and hide its closing stdout or stderr until we
	// exit. We never read or write 0, 1 or 2 ourselves (reports go to
	// FDReport), so they become /dev/null, keeping the numbers taken.
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd <= 2; fd++) {
		if (fd == null)
			continue;
		if (null < 0 || dup2(null, fd) < 0)
			close(fd);
	}
	if (null > 2)
		close(null);

	if (sp.what != CHILD_NONE) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (sp.what == CHILD_TERMINAL) {
			say(TVS_REPORT_ERROR " terminal: make the subject the foreground group: %s", strerror(sp.err));
			return 125;
		}
		int code = (sp.err == ENOENT || sp.err == ENOTDIR) ? 127 : 126;
		say(TVS_REPORT_EXEC_ERR " %d %s: %s", code, sargv[0], strerror(sp.err));
		return code;
	}
	say(TVS_REPORT_STARTED " %d", (int)pid);

	struct pollfd fds[2] = {
		{.fd = sfd, .events = POLLIN},
		{.fd = TVS_FD_LIVENESS, .events = POLLIN},
	};
	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			say(TVS_REPORT_ERROR " poll: %s", strerror(errno));
			// Without us nothing would end the subject's tree in direct
			// mode (as PID 1 our exit ends the namespace).
			if (direct)
				kill_descendants();
			return 125;
		}
		if (fds[1].revents) {
			// Liveness: the supervisor holds the write end. EOF (or any
			// error) means it died; our exit as PID 1 makes the kernel
			// SIGKILL every process in the namespace.
			char b;
			ssize_t n = read(TVS_FD_LIVENESS, &b, 1);
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
				if (direct)
					kill_descendants();
				return 137;
			}
		}
		if (!fds[0].revents)
			continue;
		struct signalfd_siginfo si;
		int chld = 0;
		while (read(sfd, &si, sizeof si) == sizeof si) {
			if (si.ssi_signo == SIGCHLD)
				chld = 1;
			else
				kill(pid, (int)si.ssi_signo);
		}
		if (!chld)
			continue;
		int st;
		pid_t w;
		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			if (w != pid)
				continue; // an orphan: reaped, nothing to report
			int status;
			if (WIFEXITED(st)) {
				say(TVS_REPORT_EXITED " %d", WEXITSTATUS(st));
				status = WEXITSTATUS(st);
			} else if (WIFSIGNALED(st)) {
				say(TVS_REPORT_SIGNALED " %d", WTERMSIG(st));
				status = 128 + WTERMSIG(st);
			} else {
				continue;
			}
			if (direct)
				kill_descendants();
			// As PID 1 our exit ends the namespace: every leftover
			// process, setsid daemons included, is killed by the kernel.
			return status;
		}
	}
}

// tvs_reaper_constructor runs before the Go runtime. Any process started
// with argv[1] == TVS_REAPER_ARG is the reaper and never reaches Go; every
// other invocation returns at once.
__attribute__((constructor)) static void tvs_reaper_constructor(int argc, char **argv, char **envp)
{
	if (argc >= 2 && argv[1] && strcmp(argv[1], TVS_REAPER_ARG) == 0)
		_exit(reaper(argc, argv, envp));
}

const char *tvs_constant(int i)
{
	static const char *names[] = {
		TVS_REAPER_ARG, TVS_MODE_SANDBOX, TVS_MODE_DIRECT, TVS_MODE_NOOP,
		TVS_MODE_PROC_TRIAL, TVS_MODE_DIRECT_TERMINAL,
		TVS_REPORT_SECCOMP, TVS_REPORT_STARTED, TVS_REPORT_EXEC_ERR,
		TVS_REPORT_EXITED, TVS_REPORT_SIGNALED, TVS_REPORT_ERROR,
	};
	if (i < 0 || i >= (int)(sizeof names / sizeof names[0]))
		return NULL;
	return names[i];
}

int tvs_fd(int i)
{
	static const int fds[] = {TVS_FD_LIVENESS, TVS_FD_REPORT, TVS_FD_GO};
	if (i < 0 || i >= 3)
		return -1;
	return fds[i];
}
