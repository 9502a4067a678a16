// Package ptytest gives tests a pseudoterminal with a program on it, as
// the PTY mode has one: the slave opened through TIOCGPTPEER (never by
// path), the program its session leader with the slave as controlling
// terminal.
package ptytest

import (
	"os"
	"os/exec"
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

// Start runs argv on the terminal whose slave is given, as its session
// leader, with env; it is killed and reaped when the test ends. It skips
// the test when argv[0] is not installed.
func Start(t testing.TB, slave *os.File, env []string, argv ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Skipf("%s not installed: %v", argv[0], err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = env
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
