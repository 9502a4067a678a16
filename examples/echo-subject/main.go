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
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"
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

// abort kills the process with SIGABRT, as C's abort() would. signal.Reset
// alone is not enough: the Go runtime keeps its own SIGABRT handler, which
// prints a stack dump and exits with status 2. With the "crash" traceback
// level the runtime re-raises the signal with the default action instead,
// so the process really dies by SIGABRT. RLIMIT_CORE 0 keeps a core file out
// of the working directory (the sandbox's mapped root).
func abort() {
	signal.Reset(syscall.SIGABRT)
	debug.SetTraceback("crash")
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	_ = syscall.Kill(os.Getpid(), syscall.SIGABRT)
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
