package sandbox

import (
	"errors"
	"fmt"
	"os"

	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// A sandbox terminal (Spec.Terminal) is a pseudoterminal of the sandbox's
// own devpts instance, never one of the caller's: libcontainer's init
// fchowns whatever it receives as fds 0-2 to the subject's uid
// (fixStdioPermissions), so a caller's pty handed in as stdio would stay
// owned, and writable, by that uid after the sandbox is gone, and the
// subject's mode changes (stty) would outlive it. Instead the init opens
// /dev/pts/ptmx of a newinstance devpts mounted inside the container,
// makes the slave its stdio and controlling terminal (owned by the subject
// uid: fixStdioPermissions now works on our pty), and sends the master to
// the supervisor over a socket pair (Process.ConsoleSocket), as
// `runc run --console-socket` does. The caller relays between the master
// and its own terminal.

// MechanismTerminalSize is the Applied mechanism that says the
// terminal of Spec.Terminal has the requested size, checked before the
// subject ran.
const MechanismTerminalSize = "terminal-size"

// TerminalSize is a terminal's size in character cells.
type TerminalSize struct {
	Rows, Cols uint16
}

// Device numbers of the Unix-98 ptys (<linux/major.h>).
const (
	ptmxMajor = 5   // TTYAUX_MAJOR; /dev/ptmx is 5:2
	ptmxMinor = 2   //
	ptsMajor  = 136 // UNIX98_PTY_SLAVE_MAJOR (first of 8 majors)
)

// console is the supervisor's side of a sandbox terminal while the
// sandbox starts: a socket pair whose init end libcontainer hands to its
// init, which sends the pty master back on ours.
type console struct {
	size   TerminalSize
	ours   *os.File
	theirs *os.File
}

// validateTerminal checks Spec.Terminal against the rest of the spec: the
// terminal replaces Stdin, Stdout and Stderr. The os backend's is a pty
// of the sandbox's own devpts (libcontainer's init makes it); isolation
// none's is a host pty the supervisor opens (hostTerminal).
func (s *Spec) validateTerminal() error {
	if s.Terminal == nil {
		return nil
	}
	if s.Stdin != nil || s.Stdout != nil || s.Stderr != nil {
		return &SpecError{"Terminal", "set together with Stdin, Stdout or Stderr (the terminal is all three)"}
	}
	return nil
}

// maxPtys bounds the ptys of a sandbox's devpts instance. Every devpts
// instance on the host draws on one pool (kernel.pty.max minus
// kernel.pty.reserve, 3,072 by default), so without a bound one subject
// could open them all and every other sandbox's terminal (and the host's
// containers' and users') would fail to start. The subject's own
// terminal is one; the rest are for programs that make their own (tmux,
// script, expect).
const maxPtys = 64

// devptsMount is the sandbox's own devpts instance: newinstance, so its
// ptys are numbered and visible only inside; ptmxmode=0666 so the init
// (and the subject, for its own ptys) can open /dev/pts/ptmx, which
// libcontainer links /dev/ptmx to. gid=5 (tty), runc's default, only
// where gid 5 exists in the container: rootless maps only the caller's
// own gid, and mounting with an unmapped gid fails.
func devptsMount(rootless bool) *configs.Mount {
	data := fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", maxPtys)
	if !rootless {
		data += ",gid=5"
	}
	return &configs.Mount{
		Source: "devpts", Destination: "/dev/pts", Device: "devpts",
		Flags: unix.MS_NOSUID | unix.MS_NOEXEC, Data: data,
	}
}

// newConsole prepares the sandbox terminal when s.Terminal is set, and
// returns nil otherwise: it adds the devpts mount (after the /dev tmpfs)
// and the pty device rules to cfg, and makes the socket pair. Both ends
// are registered with c; receive closes them as soon as it can.
func newConsole(c *cleanup, s *Spec, cfg *configs.Config, rootless bool) (*console, error) {
	if s.Terminal == nil {
		return nil, nil
	}
	if err := s.validateTerminal(); err != nil {
		return nil, err
	}
	cfg.Mounts = append(cfg.Mounts, devptsMount(rootless))
	if cfg.Cgroups != nil && cfg.Cgroups.Resources != nil {
		// The device cgroup checks every open of a device node: the init
		// opens /dev/pts/ptmx and the slave; the subject opens the slave
		// again through /dev/tty or $(tty) (less, vi, sudo-like prompts).
		cfg.Cgroups.Resources.Devices = append(cfg.Cgroups.Resources.Devices,
			&devconfig.Rule{Type: devconfig.CharDevice, Major: ptmxMajor, Minor: ptmxMinor, Permissions: "rwm", Allow: true},
			&devconfig.Rule{Type: devconfig.CharDevice, Major: ptsMajor, Minor: devconfig.Wildcard, Permissions: "rwm", Allow: true},
		)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, stepErr("console socket", "", err)
	}
	con := &console{
		size:   *s.Terminal,
		ours:   os.NewFile(uintptr(fds[0]), "console-socket"),
		theirs: os.NewFile(uintptr(fds[1]), "console-socket-init"),
	}
	c.add(con.ours.Close)
	c.add(con.theirs.Close)
	return con, nil
}

// attach gives p the init's end of the socket and the initial size, which
// libcontainer's init sets on the pty before it sends the master (so the
// subject's first TIOCGWINSZ already sees it). Nil-safe.
func (con *console) attach(p *libcontainer.Process) {
	if con == nil {
		return
	}
	p.ConsoleSocket = con.theirs
	p.ConsoleWidth, p.ConsoleHeight = con.size.Cols, con.size.Rows
}

// receive takes the pty master that libcontainer's init sent during
// Container.Start and registers its close with c. Nil-safe (returns nil).
// It never blocks on a dead init: the init's end is closed here first, so
// with no message queued the read sees EOF.
func (con *console) receive(c *cleanup) (*os.File, error) {
	if con == nil {
		return nil, nil
	}
	_ = con.theirs.Close() // the init has its own copy, closed after sending
	defer con.ours.Close()
	master, err := recvPtyMaster(con.ours)
	if err != nil {
		return nil, stepErr("console", "master", err)
	}
	c.add(master.Close)
	return master, nil
}

// recvPtyMaster reads one SCM_RIGHTS message carrying exactly one
// descriptor, checks that it is a pty master, and returns it non-blocking
// (so that it is pollable and Close interrupts a pending Read).
func recvPtyMaster(sock *os.File) (*os.File, error) {
	name := make([]byte, 4096) // the init sends the master's path as data
	oob := make([]byte, unix.CmsgSpace(4))
	sc, err := sock.SyscallConn()
	if err != nil {
		return nil, err
	}
	var n, oobn, flags int
	var rerr error
	if err := sc.Control(func(fd uintptr) {
		for {
			n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), name, oob, unix.MSG_CMSG_CLOEXEC)
			if rerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, fmt.Errorf("recvmsg: %w", rerr)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_RIGHTS {
			got, err := unix.ParseUnixRights(&m)
			if err != nil {
				return nil, fmt.Errorf("parse SCM_RIGHTS: %w", err)
			}
			fds = append(fds, got...)
		}
	}
	if len(fds) != 1 || flags&unix.MSG_CTRUNC != 0 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if n == 0 && len(fds) == 0 {
			return nil, errors.New("init sent no terminal (it ended before creating one)")
		}
		return nil, fmt.Errorf("want one descriptor, got %d (flags %#x)", len(fds), flags)
	}
	fd := fds[0]
	if err := checkPtyMaster(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "sandbox-console"), nil
}

// checkPtyMaster makes sure fd is the master side of a Unix-98 pty (the
// character device 5:2 that /dev/ptmx opens, with a pty number).
func checkPtyMaster(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat master: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != ptmxMajor || unix.Minor(st.Rdev) != ptmxMinor {
		return fmt.Errorf("received descriptor is not a pty master (mode %#o, device %d:%d)", st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	if _, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN); err != nil {
		return fmt.Errorf("received descriptor is not a pty master: TIOCGPTN: %w", err)
	}
	return nil
}

// checkSize is the terminal-size mechanism: the size libcontainer's init
// set on the terminal, read on the master before the subject is released
// (so no subject code can have changed it yet), against the requested
// one. A size of zero is the kernel's default, which the init leaves.
func (con *console) checkSize(master *os.File) (ok bool, reason string) {
	sc, err := master.SyscallConn()
	if err != nil {
		return false, "unreadable"
	}
	var ws *unix.Winsize
	var werr error
	if err := sc.Control(func(fd uintptr) { ws, werr = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) }); err != nil || werr != nil {
		return false, "TIOCGWINSZ-failed"
	}
	if ws.Col != con.size.Cols || ws.Row != con.size.Rows {
		return false, fmt.Sprintf("%dx%d-not-%dx%d", ws.Col, ws.Row, con.size.Cols, con.size.Rows)
	}
	return true, "ok"
}

// Console returns the master side of the subject's terminal when
// Spec.Terminal was set, and nil otherwise. What the subject writes is
// read from it, and what is written to it is the subject's keyboard
// input. Once everything in the sandbox has ended (after Wait), reads
// return what is left and then EIO. The Sandbox owns the file: Destroy
// closes it, so read it to EIO before calling Destroy.
func (sb *Sandbox) Console() *os.File {
	if sb == nil {
		return nil
	}
	return sb.console
}

// ConsolePeer opens another descriptor of the terminal's slave with
// TIOCGPTPEER: through the master's own devpts, with no path looked up
// in anyone's mount namespace. The caller owns it (quiesce polls and
// queries such a slave; it never reads it).
func (sb *Sandbox) ConsolePeer() (*os.File, error) {
	master := sb.Console()
	if master == nil {
		return nil, errors.New("the sandbox has no terminal")
	}
	sc, err := master.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	var fd uintptr
	var errno unix.Errno
	if err := sc.Control(func(m uintptr) {
		fd, _, errno = unix.Syscall(unix.SYS_IOCTL, m, unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	}); err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	if errno != 0 {
		return nil, fmt.Errorf("terminal: TIOCGPTPEER: %w", errno)
	}
	return os.NewFile(fd, "pty-slave"), nil
}

// ResizeConsole sets the size of the subject's terminal; the kernel sends
// SIGWINCH to the terminal's foreground process group inside.
func (sb *Sandbox) ResizeConsole(size TerminalSize) error {
	m := sb.Console()
	if m == nil {
		return errors.New("resize console: the sandbox has no terminal")
	}
	sc, err := m.SyscallConn()
	if err != nil {
		return fmt.Errorf("resize console of sandbox %s: %w", sb.id, err)
	}
	var ierr error
	if err := sc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	}); err != nil {
		return fmt.Errorf("resize console of sandbox %s: %w", sb.id, err)
	}
	if ierr != nil {
		return fmt.Errorf("resize console of sandbox %s: TIOCSWINSZ: %w", sb.id, ierr)
	}
	return nil
}
