package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Output paths (--transcript, --evidence, --stderr) are hostile: their
// directories may lie in a root the subject maps read-write, or be
// writable by other local users, and the supervisor runs as root. So each
// is resolved once, before the run, without following a symbolic link at
// any component (O_NOFOLLOW would check only the last one: a swapped
// parent directory would still let root create a file anywhere), and
// every later step acts on the directory's descriptor, never on the name.

// resolveFlags are the openat2 resolve flags of every output path.
const resolveFlags = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// outDir is an output file's directory, opened once (O_PATH), and the
// file's name in it.
type outDir struct {
	path string   // the path as given, for messages only; never resolved again
	dir  *os.File // O_PATH|O_DIRECTORY
	base string   // one component: no slash, not "." or ".."
}

// openOutDir opens the directory of path, refusing a symbolic link at any
// component. Relative paths are resolved from the working directory,
// absolute ones from "/". what names the flag for messages.
func openOutDir(what, path string) (*outDir, error) {
	if path == "" || strings.HasSuffix(path, "/") {
		return nil, fmt.Errorf("%s %q: not a file name", what, path)
	}
	dir, base := filepath.Split(path)
	if base == "." || base == ".." {
		return nil, fmt.Errorf("%s %q: not a file name", what, path)
	}
	if dir == "" {
		dir = "."
	}
	fd, err := openNoSymlinks(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		shown := dir
		if len(shown) > 1 {
			shown = strings.TrimSuffix(shown, "/")
		}
		return nil, fmt.Errorf("%s %s: directory %s: %w", what, path, shown, noSymlinkError(err))
	}
	return &outDir{path: path, dir: os.NewFile(uintptr(fd), dir), base: base}, nil
}

func (d *outDir) fd() int { return int(d.dir.Fd()) }

func (d *outDir) close() {
	if d != nil && d.dir != nil {
		_ = d.dir.Close()
	}
}

// sync makes the directory's entries durable. An O_PATH descriptor cannot
// be fsynced, so the directory is reopened through it (".", relative to
// the descriptor: the same inode, not the name).
func (d *outDir) sync() error {
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("openat", err)
	}
	defer unix.Close(fd)
	return os.NewSyscallError("fsync", unix.Fsync(fd))
}

// openNoSymlinks is openat2(AT_FDCWD, path, flags) with RESOLVE_NO_SYMLINKS.
// On a kernel without openat2 (before 5.6, or a seccomp filter that hides
// it) it walks the path one component at a time with O_NOFOLLOW, which
// refuses symbolic links the same way; every step is relative to the
// descriptor of the step before.
func openNoSymlinks(path string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Resolve: resolveFlags}
	for range 8 {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue // a concurrent rename raced the lookup; the kernel asks for a retry
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
			return walkNoSymlinks(path, flags)
		}
		return -1, os.NewSyscallError("openat2", err)
	}
	return -1, os.NewSyscallError("openat2", unix.EAGAIN)
}

// walkNoSymlinks is openNoSymlinks without openat2.
func walkNoSymlinks(path string, flags int) (int, error) {
	start := "."
	if filepath.IsAbs(path) {
		start = "/"
	}
	fd, err := unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("open", err)
	}
	parts := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	if len(parts) == 0 {
		parts = []string{"."}
	}
	for i, p := range parts {
		f := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			f = flags | unix.O_NOFOLLOW
		}
		next, err := unix.Openat(fd, p, f, 0)
		unix.Close(fd)
		if err != nil {
			return -1, os.NewSyscallError("openat", err)
		}
		fd = next
	}
	return fd, nil
}

// noSymlinkError says in words what ELOOP means under RESOLVE_NO_SYMLINKS
// (and ENOTDIR under the O_NOFOLLOW walk).
func noSymlinkError(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("a component is a symbolic link or not a directory; output paths are resolved without following symbolic links (%w)", err)
	}
	return err
}

// openStderrFile opens (creating it 0644 if absent) the --stderr file for
// the supervisor to write: never the subject, which gets a pipe. It must
// be a regular file with no other hard link and no set-id bit; a symbolic
// link at any component, a FIFO, a device, a socket or a directory is
// refused before the run. An existing entry is first opened O_PATH, which
// opens nothing for I/O (no device open, no FIFO wait), checked through
// that descriptor, and only then reopened for writing through
// /proc/self/fd: the same inode, so a swap after the check changes nothing.
func openStderrFile(path string) (*os.File, error) {
	d, err := openOutDir("stderr file", path)
	if err != nil {
		return nil, err
	}
	defer d.close()
	for range 8 {
		pfd, err := unix.Openat(d.fd(), d.base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			// O_EXCL: a fresh regular file of ours, or EEXIST if anything
			// (a symlink included) appeared meanwhile, then look again.
			fd, err := unix.Openat(d.fd(), d.base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0o644)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("stderr file %s: %w", path, os.NewSyscallError("openat", err))
			}
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != nil {
			return nil, fmt.Errorf("stderr file %s: %w", path, os.NewSyscallError("openat", err))
		}
		f, err := reopenRegular(pfd, path)
		unix.Close(pfd)
		return f, err
	}
	return nil, fmt.Errorf("stderr file %s: the entry kept changing while it was opened", path)
}

// reopenRegular checks the O_PATH descriptor pfd and reopens its inode
// for writing, truncated.
func reopenRegular(pfd int, path string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("stderr file %s: %w", path, os.NewSyscallError("fstat", err))
	}
	if err := checkRegular(&st); err != nil {
		return nil, fmt.Errorf("stderr file %s: %w", path, err)
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_WRONLY|unix.O_TRUNC|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("stderr file %s: reopen through /proc/self/fd: %w", path, os.NewSyscallError("open", err))
	}
	var again unix.Stat_t
	if err := unix.Fstat(fd, &again); err != nil || again.Dev != st.Dev || again.Ino != st.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("stderr file %s: the reopened descriptor is not the file checked", path)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// checkRegular refuses what the supervisor must not write into.
func checkRegular(st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return errors.New("is a symbolic link; refused (output files are never followed)")
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("is not a regular file (%s); refused", fileType(st.Mode))
	case st.Nlink != 1:
		return fmt.Errorf("has %d hard links; refused (another name may be a file elsewhere)", st.Nlink)
	case st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0:
		return errors.New("has a set-user-id or set-group-id bit; refused")
	}
	return nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a directory"
	}
	return "unknown type"
}
