// Package safeout is the one way termverify-sandbox writes a file for its
// caller: transcripts, evidence, the --stderr file, batch reports and
// batch's output directory.
//
// Output paths are hostile: their directories may lie in a root a subject
// maps read-write, or be writable by other local users, and the writer
// runs as root. So:
//
//   - a directory is opened once (O_PATH) without following a symbolic
//     link at any component (openat2 RESOLVE_NO_SYMLINKS, or a walk with
//     O_NOFOLLOW at every step), and afterwards only its descriptor is
//     used; directories to create are made with mkdirat one component at
//     a time relative to the descriptor of the one before;
//   - a file is an O_TMPFILE in that directory (or a named temporary file
//     created O_EXCL|O_NOFOLLOW relative to it), its mode is set with
//     fchmod on the descriptor, and it is committed atomically with
//     linkat and renameat relative to the directory's descriptor, which
//     never follow a symbolic link at the destination;
//   - a file opened in place (the --stderr file) is first opened O_PATH
//     with O_NOFOLLOW, checked to be a regular file with one link and no
//     set-id bit, and reopened through its own descriptor.
//
// Nothing here resolves an output path by name after the directory was
// opened, chmods or renames by name, or follows a name someone else can
// replace.
package safeout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// resolveFlags are the openat2 resolve flags of every output path.
const resolveFlags = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// dirFlags open a directory for use as a base of *at calls only.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

// Dir is a directory opened once, O_PATH, without a symbolic link on its
// path. It owns its descriptor.
type Dir struct {
	path string   // as given, for messages only; never resolved again
	f    *os.File // O_PATH|O_DIRECTORY

	// beforeRename, when set (tests only), is given to every File made
	// in the directory (File.beforeRename).
	beforeRename func(temp string)
}

// OpenDir opens the directory path, refusing a symbolic link at any
// component. Relative paths are resolved from the working directory.
func OpenDir(path string) (*Dir, error) {
	fd, err := OpenNoSymlinks(path, dirFlags)
	if err != nil {
		return nil, NoSymlinkError(err)
	}
	return newDir(fd, path), nil
}

func newDir(fd int, path string) *Dir { return &Dir{path: path, f: os.NewFile(uintptr(fd), path)} }

// SplitFile splits a file path into its directory (as OpenDir takes it)
// and its one-component name, refusing what names no file.
func SplitFile(path string) (dir, base string, err error) {
	if path == "" || strings.HasSuffix(path, "/") {
		return "", "", fmt.Errorf("%q: not a file name", path)
	}
	dir, base = filepath.Split(path)
	if base == "." || base == ".." {
		return "", "", fmt.Errorf("%q: not a file name", path)
	}
	if dir == "" {
		dir = "."
	}
	return dir, base, nil
}

// Path is the path the directory was opened by, for messages.
func (d *Dir) Path() string { return d.path }

// Fd is the directory's O_PATH descriptor, for *at calls.
func (d *Dir) Fd() int { return int(d.f.Fd()) }

// Close closes the descriptor; a nil Dir is ignored.
func (d *Dir) Close() error {
	if d == nil || d.f == nil {
		return nil
	}
	return d.f.Close()
}

// Dup is a second Dir on the same directory, with its own descriptor.
func (d *Dir) Dup() (*Dir, error) {
	fd, err := unix.FcntlInt(d.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err))
	}
	return newDir(fd, d.path), nil
}

// Sync makes the directory's entries durable. An O_PATH descriptor cannot
// be fsynced, so the directory is reopened through it (".", relative to
// the descriptor: the same inode, not the name).
func (d *Dir) Sync() error {
	fd, err := unix.Openat(d.Fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("openat", err)
	}
	defer unix.Close(fd)
	return os.NewSyscallError("fsync", unix.Fsync(fd))
}

// OpenRead opens name in the directory for reading: not through a
// symbolic link, and only a regular file (a FIFO is opened non-blocking
// and refused, never waited on).
func (d *Dir) OpenRead(name string) (*os.File, error) {
	if err := oneComponent(name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(d.Fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.path, name), os.NewSyscallError("openat", err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: not a regular file; refused", filepath.Join(d.path, name))
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_RDONLY); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
}

// oneComponent refuses a name that is not one entry of a directory.
func oneComponent(name string) error {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return fmt.Errorf("%q: not one file name", name)
	}
	return nil
}

// OpenNoSymlinks is openat2(AT_FDCWD, path, flags) with RESOLVE_NO_SYMLINKS.
// On a kernel without openat2 (before 5.6, or a seccomp filter that hides
// it) it walks the path one component at a time with O_NOFOLLOW, which
// refuses symbolic links the same way; every step is relative to the
// descriptor of the step before.
func OpenNoSymlinks(path string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Resolve: resolveFlags}
	for range 8 {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue // a concurrent rename raced the lookup; the kernel asks for a retry
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
			return WalkNoSymlinks(path, flags)
		}
		return -1, os.NewSyscallError("openat2", err)
	}
	return -1, os.NewSyscallError("openat2", unix.EAGAIN)
}

// WalkNoSymlinks is OpenNoSymlinks without openat2.
func WalkNoSymlinks(path string, flags int) (int, error) {
	fd, err := startFd(path)
	if err != nil {
		return -1, err
	}
	parts := components(path)
	if len(parts) == 0 {
		parts = []string{"."}
	}
	for i, p := range parts {
		f := dirFlags | unix.O_NOFOLLOW
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

// startFd opens where path starts: "/" or the working directory.
func startFd(path string) (int, error) {
	start := "."
	if filepath.IsAbs(path) {
		start = "/"
	}
	fd, err := unix.Open(start, dirFlags, 0)
	if err != nil {
		return -1, os.NewSyscallError("open", err)
	}
	return fd, nil
}

// components are path's names, empty ones dropped.
func components(path string) []string {
	return strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
}

// NoSymlinkError says in words what ELOOP means under RESOLVE_NO_SYMLINKS
// (and ENOTDIR under the O_NOFOLLOW walk).
func NoSymlinkError(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("a component is a symbolic link or not a directory; output paths are resolved without following symbolic links (%w)", err)
	}
	return err
}

// OpenPrefix opens the longest existing prefix of the directory path
// without following a symbolic link at any component, and returns it
// with the names still to create below it (for MkdirAll). A ".." among
// the names to create is refused: it would make a directory only to leave
// it.
func OpenPrefix(path string) (*Dir, []string, error) {
	if path == "" {
		return nil, nil, errors.New("empty directory path")
	}
	fd, err := startFd(path)
	if err != nil {
		return nil, nil, err
	}
	parts := components(path)
	shown := "/"
	if !filepath.IsAbs(path) {
		shown = "."
	}
	for i, p := range parts {
		next, err := unix.Openat(fd, p, dirFlags|unix.O_NOFOLLOW, 0)
		if errors.Is(err, unix.ENOENT) {
			rest := parts[i:]
			for _, r := range rest {
				if r == ".." {
					unix.Close(fd)
					return nil, nil, fmt.Errorf("%s: \"..\" after a directory that does not exist", path)
				}
			}
			return newDir(fd, shown), rest, nil
		}
		unix.Close(fd)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: at %s: %w", path, p, NoSymlinkError(os.NewSyscallError("openat", err)))
		}
		fd = next
		shown = filepath.Join(shown, p)
	}
	return newDir(fd, path), nil, nil
}

// MkdirAll creates the names below d, one component at a time: mkdirat
// relative to the descriptor of the directory before, then openat with
// O_NOFOLLOW|O_DIRECTORY, so that a name replaced by a symbolic link (or
// planted as one) between the two is refused, never followed. The result
// is the last directory; d stays open and owned by the caller. path is
// the whole path, for messages and for the result's Path.
func (d *Dir) MkdirAll(names []string, perm os.FileMode, path string) (*Dir, error) {
	if len(names) == 0 {
		return d.Dup()
	}
	fd, err := unix.FcntlInt(d.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	for _, p := range names {
		if p == "." {
			continue
		}
		if err := oneComponent(p); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := unix.Mkdirat(fd, p, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: mkdir %s: %w", path, p, os.NewSyscallError("mkdirat", err))
		}
		next, err := unix.Openat(fd, p, dirFlags|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("%s: at %s: %w", path, p, NoSymlinkError(os.NewSyscallError("openat", err)))
		}
		fd = next
	}
	return newDir(fd, path), nil
}

// MkdirAll opens or creates the directory path and its missing parents
// (OpenPrefix, then Dir.MkdirAll): no symbolic link is followed at any
// component, existing or made.
func MkdirAll(path string, perm os.FileMode) (*Dir, error) {
	pre, rest, err := OpenPrefix(path)
	if err != nil {
		return nil, err
	}
	defer pre.Close()
	return pre.MkdirAll(rest, perm, path)
}

// FileID is a file's identity: device and inode.
type FileID struct{ Dev, Ino uint64 }

// ID is the directory's identity.
func (d *Dir) ID() (FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.Fd(), &st); err != nil {
		return FileID{}, fmt.Errorf("%s: %w", d.path, os.NewSyscallError("fstat", err))
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}, nil
}

// Ancestors are the identities of the directory and of every directory
// above it up to "/", found by walking ".." from the descriptor (never
// by the name it was opened with), nearest first. ".." at a mount's root
// is the directory it is mounted on, so a mapped directory above a mount
// counts too.
func (d *Dir) Ancestors() ([]FileID, error) {
	fd, err := unix.FcntlInt(d.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	defer func() { unix.Close(fd) }()
	var ids []FileID
	for range 4096 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", d.path, os.NewSyscallError("fstat", err))
		}
		id := FileID{Dev: st.Dev, Ino: st.Ino}
		if len(ids) > 0 && ids[len(ids)-1] == id {
			return ids, nil // ".." of "/" is "/"
		}
		ids = append(ids, id)
		up, err := unix.Openat(fd, "..", dirFlags|unix.O_NOFOLLOW, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: walking up: %w", d.path, os.NewSyscallError("openat ..", err))
		}
		unix.Close(fd)
		fd = up
	}
	return nil, fmt.Errorf("%s: more than 4096 directories above it", d.path)
}
