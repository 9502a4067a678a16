// Command echo-subject is a termverify.control/v1 subject that plays a
// third-party program for termverify-sandbox's tests and bundled example.
//
// Run without arguments it is well behaved: it answers session.hello with
// session.ready, closes every epoch with one observation whose state echoes
// what it received (text buffer, last key chord, terminal size, manual time)
// and the delivered environment it saw (TERMVERIFY_*, TZ, LANG, LC_*, its
// working directory), renders that state as a frame of exactly the
// negotiated size, and on input.stop finishes with run.finished exit 0.
// Its state is deterministic: no wall time, no pids, and its only
// randomness is drawn from TERMVERIFY_SEED.
//
// The first argument selects a misbehaviour mode (hang, crash, flood, …)
// for the supervisor's failure tests; examples/README.md lists them all and
// modes.go implements each in a few lines.
//
// It imports only the standard library, like any third-party subject; it
// must not import termverify-sandbox's packages.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"
)

// Hidden first arguments of the daemon mode's re-executions.
const (
	daemonForkArg  = "__echo-subject-daemon-fork"  // the middle process: starts the grandchild, exits
	daemonSleepArg = "__echo-subject-daemon-sleep" // the setsid grandchild: sleeps forever
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case daemonForkArg:
			os.Exit(daemonFork())
		case daemonSleepArg:
			for {
				time.Sleep(time.Hour)
			}
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "getwd: " + err.Error()
	}
	os.Exit(Run(context.Background(), Options{
		Args:      os.Args[1:],
		Environ:   os.Environ(),
		Dir:       cwd,
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		Abort:     abort,
		Daemonize: daemonize,
	}))
}

// abort kills the process with SIGABRT, as C's abort() does: the signal's
// default action, raised on this thread. The Go runtime keeps its own
// SIGABRT handler (signal.Reset does not remove it), which prints a stack
// dump and exits with status 2; its "crash" traceback level does die by
// SIGABRT, but only after relaying SIGQUIT through every thread, a relay
// that now and then stalls for its 5-second watchdog (caught by an epoch
// deadline under load). So the handler is replaced by SIG_DFL with a raw
// rt_sigaction, behind the runtime's back, and the signal raised with
// tgkill: the kernel ends the process at once. RLIMIT_CORE 0 keeps a core
// file out of the working directory (the sandbox's mapped root).
func abort() {
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	// A zeroed struct kernel_sigaction is SIG_DFL with no flags and an
	// empty mask; 64 bytes cover its size on every Linux architecture.
	var dfl [8]uint64
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGABRT),
		uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	_ = syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), syscall.SIGABRT)
	select {} // not reached: the default action of SIGABRT ends the process
}

// daemonize leaves a daemon behind the classic way: a middle process starts
// a grandchild in a new session and exits at once, so the grandchild is
// reparented away from this process and outside its process group.
func daemonize() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	cmd := exec.Command(exe, daemonForkArg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

// daemonFork is the middle process of daemonize. It reports the grandchild's
// pid on stderr (never on the protocol) so a test outside a sandbox can find
// and kill it.
func daemonFork() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	cmd := exec.Command(exe, daemonSleepArg) // stdio: /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "echo-subject: daemon pid %d\n", cmd.Process.Pid)
	return 0
}
