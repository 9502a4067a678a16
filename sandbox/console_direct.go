package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// Isolation none's terminal (Spec.Terminal under IsolationNone). There is
// no devpts of the sandbox's own to make it in: it is a pty of the host's,
// made by the supervisor for this subject alone and for nothing else:
//
//   - the master is opened from /dev/ptmx (and checked to be a pty
//     master: the device 5:2 with a pty number), never from a path of
//     the caller's: the caller's own terminal is never handed over;
//   - the slave the subject gets is reached from the master with
//     TIOCGPTPEER, so no /dev/pts/N is looked up by name between the two
//     (a name another process could have made point elsewhere);
//   - its size is set on the master before the reaper starts, and read
//     back from the master (MechanismTerminalSize) before the subject
//     runs;
//   - the reaper (reaper.ModeDirectTerminal), a session leader without a
//     controlling terminal, makes it its controlling terminal and the
//     subject its foreground process group, so that ^C, ^Z and job
//     control reach the subject, and quiesce's foreground-group rule
//     judges it;
//   - as root the slave is given to the subject's uid (as login(1) gives
//     a user their terminal), so that the subject can open it again by
//     name ($(tty), /dev/tty is the kernel's own redirection).
//
// What it is not: private. Any process of the subject's uid (or root)
// may open /dev/pts/N on the host, and the subject may open the host's
// other ptys its uid may open, as any program run without a sandbox may.
// That is why a receipt never gives it the os tier (docs/SECURITY.md).

// hostTerminal is isolation none's pty as startDirect holds it while the
// reaper starts: the master (the Sandbox's console from then on) and the
// slave the reaper gets as its stdio, which the supervisor closes once the
// reaper has its copies.
type hostTerminal struct {
	size   TerminalSize
	master *os.File
	slave  *os.File
}

// openHostTerminal opens a host pty of size for a subject running as uid
// (-1: as the caller, who owns it already), and registers the master's
// close with c. The slave is the caller's to close.
func openHostTerminal(c *cleanup, size TerminalSize, uid int) (*hostTerminal, error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, stepErr("terminal", "/dev/ptmx", err)
	}
	if err := checkPtyMaster(fd); err != nil {
		unix.Close(fd)
		return nil, stepErr("terminal", "/dev/ptmx", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		return nil, stepErr("terminal", "unlockpt", err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols}); err != nil {
		unix.Close(fd)
		return nil, stepErr("terminal", "TIOCSWINSZ", err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		unix.Close(fd)
		return nil, stepErr("terminal", "TIOCGPTPEER", errno)
	}
	slave := os.NewFile(sfd, "pty-slave")
	if uid >= 0 {
		if err := unix.Fchown(int(sfd), uid, -1); err != nil {
			slave.Close()
			unix.Close(fd)
			return nil, stepErr("terminal", "chown the slave", err)
		}
	}
	// Non-blocking, so that it is pollable and Close interrupts a Read,
	// as the os backend's master is (recvPtyMaster).
	if err := unix.SetNonblock(fd, true); err != nil {
		slave.Close()
		unix.Close(fd)
		return nil, stepErr("terminal", "set master non-blocking", err)
	}
	master := os.NewFile(uintptr(fd), "host-console")
	c.add(master.Close)
	return &hostTerminal{size: size, master: master, slave: slave}, nil
}

// checkSize is the terminal-size mechanism of a host terminal: the size
// read back on the master before the subject is released.
// (The os backend's console.checkSize, on this master.)
func (ht *hostTerminal) checkSize() (ok bool, reason string) {
	return (&console{size: ht.size}).checkSize(ht.master)
}
