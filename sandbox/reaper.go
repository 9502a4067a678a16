package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// InitArg is argv[1] of libcontainer's own container-setup process.
const InitArg = "init"

// ReaperArg is argv[1] of our PID-1 reaper mode.
const ReaperArg = "__termverify-sandbox-reaper"

// Reaper modes (argv[2]).
const (
	reaperSandbox = "sandbox" // PID 1 of the sandbox: seccomp, then the subject
	reaperDirect  = "direct"  // isolation none: subreaper, waits for a go byte on fd 5
	reaperNoop    = "noop"    // exits 0 at once: probe's stand-in subject
)

// Descriptors the reaper receives beyond stdio.
const (
	fdLiveness = 3 // read end; EOF means the supervisor is gone
	fdReport   = 4 // write end; one line per event, see the report* words
	fdGo       = 5 // direct mode only: one byte once the cgroup is joined
)

// Report words, one per line from the reaper to the supervisor.
const (
	reportSeccomp = "seccomp"  // "seccomp <mode from /proc/self/status>"
	reportStarted = "started"  // "started <pid in the sandbox's PID namespace>"
	reportExecErr = "exec-err" // "exec-err <126|127> <message>"
	reportExited  = "exited"   // "exited <code>"
	reportSignal  = "signaled" // "signaled <signal number>"
	reportError   = "error"    // "error <message>": the reaper could not set up
)

// LibcontainerInit runs libcontainer's container-setup code. The binary's
// only init() calls it when argv[1] is InitArg; it never returns.
func LibcontainerInit() {
	libcontainer.Init()
}

// ReaperMain runs the PID-1 reaper; the binary's init() calls it when
// argv[1] is ReaperArg. It never returns: as a separate process whose exit
// ends the sandbox, it may exit on its own.
func ReaperMain() {
	os.Exit(reaper(os.Args[2:]))
}

// forwardedSignals are passed on to the subject. SIGCHLD drives reaping,
// SIGURG is the Go runtime's preemption signal, SIGPIPE and the terminal
// stop signals are about the reaper's own I/O.
var forwardedSignals = []os.Signal{
	unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGALRM, unix.SIGWINCH, unix.SIGCONT, unix.SIGVTALRM, unix.SIGPROF, unix.SIGXCPU,
}

func reaper(args []string) int {
	if len(args) == 0 {
		return 2
	}
	mode := args[0]
	if mode == reaperNoop {
		return 0
	}
	if len(args) < 3 || args[1] != "--" {
		return 2
	}
	argv := args[2:]
	// The subject runs as our uid: without this it could ptrace us or open
	// /proc/1/mem (seccomp also denies ptrace; this is the second lock).
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// The subject must inherit exactly 0, 1 and 2.
	for _, fd := range []int{fdLiveness, fdReport, fdGo} {
		unix.CloseOnExec(fd)
	}
	report := os.NewFile(fdReport, "report")
	say := func(word string, rest ...any) {
		// A failed write means the supervisor is gone; liveness handles it.
		_, _ = fmt.Fprintln(report, append([]any{word}, rest...)...)
	}

	switch mode {
	case reaperSandbox:
		if err := installFilter(); err != nil {
			say(reportError, "seccomp:", err)
			return 125
		}
		say(reportSeccomp, seccompMode())
	case reaperDirect:
		// Orphans of the subject re-parent to us, not to the host's init,
		// so we can reap them and kill them on the way out.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			say(reportError, "subreaper:", err)
			return 125
		}
		var b [1]byte
		if n, _ := unix.Read(fdGo, b[:]); n != 1 {
			return 125 // the supervisor went away before releasing us
		}
		unix.Close(fdGo)
	default:
		return 2
	}

	// Signals are registered before the fork so none sent in between is lost.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)

	pid, code, err := startSubject(argv)
	if err != nil {
		say(reportExecErr, code, err)
		return code
	}
	say(reportStarted, pid)

	go func() {
		// Liveness: the supervisor holds the write end. EOF (or any error)
		// means it died; exiting as PID 1 makes the kernel SIGKILL every
		// process in the namespace.
		var b [1]byte
		for {
			if _, err := unix.Read(fdLiveness, b[:]); err != unix.EINTR {
				if mode == reaperDirect {
					killDescendants()
				}
				os.Exit(137)
			}
		}
	}()
	go func() {
		for s := range sigs {
			_ = unix.Kill(pid, s.(syscall.Signal))
		}
	}()

	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			say(reportError, "wait:", err)
			return 125
		}
		if wpid != pid {
			continue // an orphan: reaped, nothing to report
		}
		status := 0
		switch {
		case ws.Exited():
			say(reportExited, ws.ExitStatus())
			status = ws.ExitStatus()
		case ws.Signaled():
			say(reportSignal, int(ws.Signal()))
			status = 128 + int(ws.Signal())
		default:
			continue // stopped/continued: not an exit
		}
		if mode == reaperDirect {
			killDescendants()
		}
		// As PID 1 our exit ends the namespace: every leftover process,
		// setsid daemons included, is killed by the kernel.
		return status
	}
}

// startSubject resolves argv[0] as a shell would and starts it with our
// environment, working directory and stdio. On failure it returns the
// shell's status: 127 not found, 126 not executable.
func startSubject(argv []string) (int, int, error) {
	path, err := lookPath(argv[0])
	if err != nil {
		return 0, 127, err
	}
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}}
	pid, err := syscall.ForkExec(path, argv, attr)
	if errors.Is(err, unix.ENOEXEC) {
		// execvp's rule: a file without a recognised header is a script.
		pid, err = syscall.ForkExec("/bin/sh", append([]string{"sh", path}, argv[1:]...), attr)
	}
	switch {
	case err == nil:
		return pid, 0, nil
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return 0, 127, fmt.Errorf("%s: %w", argv[0], err)
	default:
		return 0, 126, fmt.Errorf("%s: %w", argv[0], err)
	}
}

// lookPath is the shell's rule: a name with a slash is a path, anything
// else is searched in $PATH (an empty entry meaning the working directory).
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// seccompMode reads this process's seccomp mode (2 = filter) back from the
// kernel: the report states what is in force, not what was attempted.
func seccompMode() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// killDescendants SIGKILLs our children until none is left. As a subreaper
// every orphaned descendant becomes our child, so repeating until wait
// reports ECHILD reaches the whole tree, forks racing us included.
func killDescendants() {
	for {
		for _, pid := range children() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, 0, nil); err == unix.ECHILD {
			return
		}
	}
}

// children lists our direct children from /proc/self/task/*/children.
func children() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// reaperEvent is one parsed report line.
type reaperEvent struct {
	word string
	args []string
	line string
}

func readEvent(r *bufio.Reader) (reaperEvent, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && line == "" {
			return reaperEvent{}, io.EOF
		}
		if line == "" {
			return reaperEvent{}, err
		}
	}
	line = strings.TrimSuffix(line, "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return reaperEvent{}, fmt.Errorf("reaper report: empty line")
	}
	return reaperEvent{word: f[0], args: f[1:], line: line}, nil
}
