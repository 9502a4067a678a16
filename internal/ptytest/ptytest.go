// Package ptytest gives tests a pseudoterminal with a program on it, as
// the PTY mode has one: the slave opened through TIOCGPTPEER (never by
// path), the program its session leader with the slave as controlling
// terminal.
package ptytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Open opens a pseudoterminal pair of the given size; both ends are
// closed when the test ends. It skips the test where there are none.
func Open(t testing.TB, cols, rows int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudoterminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatal(err)
	}
	// TIOCGPTPEER's argument is the new descriptor's flags: without
	// O_RDWR the slave would be read-only.
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		m.Close()
		t.Fatal(errno)
	}
	s := os.NewFile(r, "pty-slave")
	if err := unix.IoctlSetWinsize(int(r), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		s.Close()
	})
	return m, s
}

// Env is the environment Start gives a program: a fixed terminal type,
// locale and search path, a private home.
func Env(t testing.TB) []string {
	return []string{"TERM=xterm-256color", "LANG=C.UTF-8", "PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PS1=$ "}
}

// LookPath finds the program name as one started with env finds it: in
// env's PATH (its last PATH entry, the one the program sees), not in the
// test process's. exec.Command looks a bare name up in ours, and a
// program found there but run with another PATH is not the one its own
// look-ups find: an interpreter of pyenv, conda or a venv first on the
// developer's PATH, run with PATH=/usr/bin:/bin, takes the system's
// prefix and fails to import its own modules. A name with a slash is
// taken as it is; relative PATH entries are ignored (a test's
// programs run in a directory of their own). A nil env is the test
// process's, as for exec.Cmd.
func LookPath(env []string, name string) (string, error) {
	if strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	if env == nil {
		env = os.Environ()
	}
	path, found := "", false
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path, found = v, true
		}
	}
	if !found {
		return "", fmt.Errorf("%s: the environment has no PATH", name)
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH=%s", name, path)
}

// Command is exec.Command for argv run with env: argv[0] looked up in
// env's PATH (LookPath), and kept as the program's argv[0].
func Command(env []string, argv ...string) (*exec.Cmd, error) {
	p, err := LookPath(env, argv[0])
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	return cmd, nil
}

// Start runs argv on the terminal whose slave is given, as its session
// leader, with env; it is killed and reaped when the test ends. argv[0]
// is looked up in env's PATH, the one the program runs with (LookPath).
// It skips the test when argv[0] is not installed there.
func Start(t testing.TB, slave *os.File, env []string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd, err := Command(env, argv...)
	if err != nil {
		t.Skipf("%s not installed: %v", argv[0], err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// In a directory of its own: programs leave files where they run
	// (vim's swap files landed in the package directory, and in git).
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// Holders lists the /proc/PID/fd/N of every process that holds host pty
// number n open: its slave (a link to /dev/pts/n) or its master (a link
// to /dev/ptmx whose fdinfo says tty-index n). A leaked master reads as
// /dev/ptmx, so a check of the slave's name alone cannot see it.
func Holders(n uint32) []string {
	slave := fmt.Sprintf("/dev/pts/%d", n)
	index := fmt.Sprintf("tty-index:\t%d\n", n)
	var out []string
	links, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, l := range links {
		to, err := os.Readlink(l)
		switch {
		case err != nil:
		case to == slave:
			out = append(out, l)
		case to == "/dev/ptmx" || to == "/dev/pts/ptmx":
			info, err := os.ReadFile(strings.Replace(l, "/fd/", "/fdinfo/", 1))
			if err == nil && strings.Contains(string(info), index) {
				out = append(out, l)
			}
		}
	}
	return out
}
