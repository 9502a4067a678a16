package term

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/safeout"
)

// AutoPrefix begins the name of an auto-generated socket's directory in
// the temporary directory: interminai's, which its clients and agents look
// for.
const AutoPrefix = "interminai-"

// autoName is the socket's name in its auto-generated directory.
const autoName = "socket"

// ErrInUse: a daemon already answers at the socket path given.
var ErrInUse = errors.New("a daemon already listens on this socket")

// Socket is the daemon's listening Unix socket (mode 0600). Its directory
// is held open (O_PATH, no symbolic link on its path) from the start, and
// the socket is bound, chmodded and removed relative to that descriptor,
// never by a name someone could redirect in between.
type Socket struct {
	Path string // where clients connect
	Auto bool   // the socket and its directory were made by Listen, and Close removes them

	ln     *net.UnixListener
	closed bool         // ln was closed
	dir    *safeout.Dir // the socket's directory
	name   string       // the socket's name in dir
	parent *safeout.Dir // Auto: the temporary directory holding dir
	dirRel string       // Auto: dir's name in parent
}

// Listen makes the daemon's socket at path, replacing a stale socket
// there (one nobody answers on). With path "" it makes a fresh 0700
// directory AutoPrefix+random in the temporary directory and the socket in
// it. The caller must call Close.
func Listen(path string) (*Socket, error) {
	s := &Socket{}
	var err error
	if path == "" {
		err = s.makeAuto()
	} else {
		err = s.openGiven(path)
	}
	if err == nil {
		err = s.bind()
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// makeAuto makes the fresh directory: mkdirat fails on a name that
// exists, so a directory planted under a guessed name is skipped, never
// used.
func (s *Socket) makeAuto() error {
	tmp := os.TempDir()
	parent, err := safeout.OpenDir(tmp)
	if err != nil {
		return fmt.Errorf("open the temporary directory: %w", err)
	}
	s.parent = parent
	// As tmux asks of its socket directory's parent: owned by us or root,
	// and writable by others only with the sticky bit, so that no one else
	// can rename our directory away and plant theirs at its name.
	var pst unix.Stat_t
	if err := unix.Fstat(parent.Fd(), &pst); err != nil {
		return fmt.Errorf("the temporary directory: %w", os.NewSyscallError("fstat", err))
	}
	if (int(pst.Uid) != os.Geteuid() && pst.Uid != 0) || (pst.Mode&0o022 != 0 && pst.Mode&unix.S_ISVTX == 0) {
		return fmt.Errorf("the temporary directory %s is unsafe for a socket (owner %d, mode %o): set TMPDIR to a directory of yours, or use --socket", tmp, pst.Uid, pst.Mode&0o7777)
	}
	for range 100 {
		name := AutoPrefix + rand.Text()[:8]
		err := unix.Mkdirat(parent.Fd(), name, 0o700)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return fmt.Errorf("make the socket's directory in %s: %w", tmp, os.NewSyscallError("mkdirat", err))
		}
		s.dirRel = name
		full := filepath.Join(tmp, name)
		if s.dir, err = parent.MkdirAll([]string{name}, 0o700, full); err != nil {
			return fmt.Errorf("open the socket's directory: %w", err)
		}
		// The directory opened must be the one made: ours, 0700.
		var st unix.Stat_t
		if err := unix.Fstat(s.dir.Fd(), &st); err != nil {
			return fmt.Errorf("the socket's directory: %w", os.NewSyscallError("fstat", err))
		}
		if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
			return fmt.Errorf("the socket's directory %s is not the one made: owner %d, mode %o", full, st.Uid, st.Mode&0o7777)
		}
		s.Auto, s.name, s.Path = true, autoName, filepath.Join(full, autoName)
		return nil
	}
	return fmt.Errorf("make the socket's directory in %s: no free name", tmp)
}

// openGiven opens the directory of a given socket path and clears a stale
// socket from it. Anything there that is not a socket is left alone and
// refused; a socket a daemon answers on is ErrInUse.
func (s *Socket) openGiven(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	dir, name, err := safeout.SplitFile(abs)
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if s.dir, err = safeout.OpenDir(dir); err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	s.name, s.Path = name, abs
	var st unix.Stat_t
	err = unix.Fstatat(s.dir.Fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return fmt.Errorf("socket %s: %w", path, os.NewSyscallError("fstatat", err))
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		return fmt.Errorf("socket %s: it exists and is not a socket", path)
	}
	// Only a refused connection means nobody listens: a socket we may not
	// connect to (EACCES) or that does not answer in time is someone's.
	c, err := net.DialTimeout("unix", s.via(), time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("socket %s: %w", path, ErrInUse)
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		return fmt.Errorf("socket %s: cannot tell whether a daemon listens on it: %w", path, err)
	}
	if err := unix.Unlinkat(s.dir.Fd(), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("socket %s: remove the stale socket: %w", path, os.NewSyscallError("unlinkat", err))
	}
	return nil
}

// via is the socket's name through the directory's descriptor: binding
// and connecting there resolve the directory we opened, not its path.
func (s *Socket) via() string {
	return "/proc/self/fd/" + strconv.Itoa(s.dir.Fd()) + "/" + s.name
}

// bind listens on the socket, made 0600 from the start: the umask is
// tightened around the bind, so that no one can connect in the moment
// before the chmod that follows (the umask is the process's; nothing else
// of the daemon creates a file by mode meanwhile).
func (s *Socket) bind() error {
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: s.via(), Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.Path, err)
	}
	// Removed by Close relative to the directory, or kept (a given path).
	ln.SetUnlinkOnClose(false)
	s.ln = ln
	if err := unix.Fchmodat(s.dir.Fd(), s.name, 0o600, 0); err != nil {
		return fmt.Errorf("chmod %s: %w", s.Path, os.NewSyscallError("fchmodat", err))
	}
	return nil
}

// Accept waits for the next client. After Close it fails with an error
// that matches net.ErrClosed.
func (s *Socket) Accept() (net.Conn, error) { return s.ln.Accept() }

// Close stops listening. An auto-generated socket is removed with its
// directory; a given one is left for the next start to replace. It is
// idempotent.
func (s *Socket) Close() error {
	var errs []error
	if s.ln != nil && !s.closed {
		// s.ln itself stays: Accept may be called on it concurrently, and
		// then fails with net.ErrClosed.
		errs = append(errs, s.ln.Close())
		s.closed = true
	}
	if s.Auto && s.dir != nil {
		if err := unix.Unlinkat(s.dir.Fd(), s.name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.Path, err))
		}
	}
	if s.dir != nil {
		errs = append(errs, s.dir.Close())
		s.dir = nil
	}
	if s.parent != nil {
		if s.dirRel != "" {
			if err := unix.Unlinkat(s.parent.Fd(), s.dirRel, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove the socket's directory: %w", err))
			}
		}
		errs = append(errs, s.parent.Close())
		s.parent = nil
	}
	return errors.Join(errs...)
}
