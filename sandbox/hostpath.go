package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Host directories that a subject, another sandbox or a local user can
// write (the mapped root, the entries of a --rootfs) are hostile paths:
// between a check by name and libcontainer's bind by name, a rename can
// put anything there, host "/" included. They are therefore opened once,
// with every component checked, and from then on only the descriptor is
// used:
//
//   - openHostDir resolves the whole path with RESOLVE_NO_SYMLINKS (a
//     symlink at any component, not only the last, is refused) into an
//     O_PATH descriptor;
//   - libcontainer's init mounts each source by path inside its own
//     process, where our descriptors do not exist, so each descriptor is
//     first bound onto a path only root can change (pinner, below), and
//     that path is the source; the descriptors are close-on-exec, so
//     neither the init nor the subject holds them;
//   - verify compares the inode behind the descriptor with what the
//     sandbox sees at the mount point.

// hostDir is an open, checked host directory (or, for --rootfs entries, a
// regular file) and its identity.
type hostDir struct {
	path string   // as given, for messages and evidence only
	file *os.File // O_PATH; the only handle used after open
	id   fileID
}

// openHostPath opens path (absolute) as an O_PATH descriptor without
// following a symlink at any component. wantDir refuses anything but a
// directory; otherwise a directory or a regular file is accepted.
func openHostPath(path string, wantDir bool) (*hostDir, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%q is not absolute", path)
	}
	// No O_NOFOLLOW: with it a trailing symlink would be opened as the
	// link itself; without it RESOLVE_NO_SYMLINKS refuses it (ELOOP) like
	// every other component.
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if wantDir {
		how.Flags |= unix.O_DIRECTORY
	}
	fd, err := openat2(unix.AT_FDCWD, filepath.Clean(path), &how)
	if err != nil {
		return nil, hostPathError(path, err)
	}
	return newHostDir(path, fd)
}

// openHostEntry opens name inside the directory dir the same way: dir is
// already checked, so only name itself may not be a symlink.
func openHostEntry(dir *hostDir, name string) (*hostDir, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	}
	path := filepath.Join(dir.path, name)
	fd, err := openat2(int(dir.file.Fd()), name, &how)
	if err != nil {
		return nil, hostPathError(path, err)
	}
	return newHostDir(path, fd)
}

func newHostDir(path string, fd int) (*hostDir, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	return &hostDir{path: path, file: os.NewFile(uintptr(fd), path), id: fileID{st.Dev, st.Ino}}, nil
}

// mode is the file type of the opened inode (S_IFDIR, S_IFREG,
// S_IFLNK, ...), never of what the name means now.
func (h *hostDir) mode() uint32 {
	var st unix.Stat_t
	if err := unix.Fstat(int(h.file.Fd()), &st); err != nil {
		return 0
	}
	return st.Mode & unix.S_IFMT
}

func (h *hostDir) Close() error { return h.file.Close() }

// openat2 retries on EINTR and EAGAIN (the kernel returns EAGAIN when a
// concurrent rename raced the lookup under RESOLVE_* restrictions).
func openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, path, how)
		if (err == unix.EINTR || err == unix.EAGAIN) && tries < 16 {
			continue
		}
		return fd, err
	}
}

// hostPathError says why a hostile path was refused, in words an operator
// can act on.
func hostPathError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: a component is a symbolic link; give the real path (for example realpath %s) if you trust every directory on the way", ErrSymlinkPath, path)}
	case errors.Is(err, unix.ENOTDIR):
		return &os.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	case errors.Is(err, unix.ENOSYS):
		return &os.PathError{Op: "openat2", Path: path, Err: errors.New("this kernel has no openat2 (Linux 5.6 or later is needed to open hostile paths safely)")}
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// pinDir is the directory inside a sandbox's state entry where the opened
// host entries are bound, one mountpoint each, before the container starts.
const pinDir = "pins"

// Why pins: mount(2) refuses to bind a mount that belongs to another mount
// namespace (EINVAL), and libcontainer's init binds its sources from the
// container's new namespace, so /proc/<pid>/fd/<n> cannot be its source.
// Instead, as root, each descriptor is bound (through /proc/self/fd, so
// the kernel uses exactly the open inode) onto a mountpoint in our own
// state entry. The state directory and the entry are root's and not
// writable by anyone else, so the pinned path means what we bound there
// for as long as it exists; the container's mount namespace is copied
// from ours after the binds, and libcontainer binds from that copy. The
// pins are made private first (no propagation to peers of the host's
// mounts) and removed as soon as the init has mounted them; Destroy and
// the next Sweep remove leftovers (unpin) before anything under the entry
// is deleted.
//
// A rootless supervisor cannot mount on the host: there the init binds
// the original path, and verify's comparison with the opened inode is
// what refuses a swapped path before any subject code runs.

// pinner binds opened host entries under one state entry.
type pinner struct {
	dir  string // <entry>/pins
	n    int
	made bool
}

// pinsTmpfs is the pins directory's own filesystem: a small private tmpfs
// holding the pin mountpoints and, as root without a user namespace, the
// skeleton root (skeletonIn). Only mountpoints, symlinks and the few
// generated /etc files live there.
const pinsTmpfs = "mode=0700,size=1m,nr_inodes=4096"

// mount makes the pins directory: a fresh private tmpfs on
// <entry>/pins (root only). What is made in it is never created or
// deleted on the state directory's filesystem: unpin detaches it whole,
// and the kernel frees it with the last mount namespace holding a copy
// (the container's). On a disk filesystem mounted with discard, each
// directory removed from the entry would cost a synchronous discard
// (docs/BENCHMARKS.md, *Where the time goes*).
func (p *pinner) mount() error {
	if p.made {
		return nil
	}
	if err := os.Mkdir(p.dir, 0o700); err != nil {
		return err
	}
	if err := unix.Mount("tvs-pins", p.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, pinsTmpfs); err != nil {
		return &os.PathError{Op: "mount tmpfs", Path: p.dir, Err: err}
	}
	p.made = true
	if err := unix.Mount("", p.dir, "", unix.MS_PRIVATE, ""); err != nil {
		return &os.PathError{Op: "make private", Path: p.dir, Err: err}
	}
	return nil
}

// skeletonIn is where the skeleton root of a sandbox is built: inside the
// pins tmpfs as root without a user namespace (mounted here); otherwise
// <entry>/root on the state directory's filesystem, as a user namespace's
// root (host userNSBase) must traverse to it and a rootless supervisor
// cannot mount.
func (p *pinner) skeletonIn(entry string, rootless, userns bool) (string, error) {
	if rootless || userns {
		return filepath.Join(entry, "root"), nil
	}
	if err := p.mount(); err != nil {
		return "", err
	}
	return filepath.Join(p.dir, "root"), nil
}

// source returns the mount source for h: a pinned path as root, the
// original path (checked afterwards by verify) when rootless.
func (p *pinner) source(h *hostDir, rootless bool) (string, error) {
	if rootless {
		return h.path, nil
	}
	if err := p.mount(); err != nil {
		return "", err
	}
	p.n++
	dst := filepath.Join(p.dir, strconv.Itoa(p.n))
	var err error
	if h.mode() == unix.S_IFDIR {
		err = os.Mkdir(dst, 0o700)
	} else {
		var f *os.File
		if f, err = os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return "", err
	}
	src := "/proc/self/fd/" + strconv.Itoa(int(h.file.Fd()))
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", &os.PathError{Op: "bind", Path: h.path, Err: err}
	}
	return dst, nil
}

// unpin detaches every pin under the state entry. "Not mounted" and "not
// there" are success. Any other failure means the entry may still hold a
// bind of a caller's directory, so the caller must not delete the entry.
func unpin(entry string) error {
	dir := filepath.Join(entry, pinDir)
	err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &os.PathError{Op: "unmount", Path: dir, Err: err}
}

// removeEntry deletes a sandbox's state entry, pins first. It refuses to
// delete while a pin may still be mounted: os.RemoveAll would descend into
// the bound directory and delete the caller's files.
func removeEntry(entry string) error {
	if err := unpin(entry); err != nil {
		return fmt.Errorf("keep %s: %w", entry, err)
	}
	return os.RemoveAll(entry)
}
