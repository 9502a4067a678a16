package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The state directory holds what the supervisor trusts about its
// sandboxes: owner records (which Sweep acts on: it kills the pids and
// removes the scratch roots they name), libcontainer state, the skeleton
// roots and the pinned mount sources. Whoever can write it, or any
// directory on its path, controls those: another local user who
// pre-creates the predictable rootless default /tmp/termverify-sandbox-<uid>
// 0777 can hide a live entry from the sweep, plant one whose record
// makes the sweep kill or remove what they choose, or swap a pinned mount
// source. ensureStateDir therefore checks it every time it is used (Start
// and Sweep; the default and an explicit Spec.StateDir alike), walking
// the path one component at a time through O_PATH|O_NOFOLLOW descriptors
// (fstat on the descriptor, never a stat by name that a rename could
// redirect):
//
//   - no component is a symbolic link (at the last one or before it);
//   - every directory on the way is owned by root or by our euid and is
//     not writable by group or others, unless it is sticky (like /tmp:
//     others may add entries but cannot rename or remove ours, and the
//     next component must itself be owned by root or us);
//   - the state directory itself is a directory owned by our euid, not
//     writable by group or others. Root's /run/termverify-sandbox stays
//     0711, as before: traversable, not listable, not writable.
//
// Missing components are made (mkdirat on the checked parent's
// descriptor) 0711 as root and 0700 otherwise, so they are ours. After the
// check the path is used by name (libcontainer takes paths): that is safe
// because no one but root and us can change any component of it. ACLs are
// covered through the group bits, which show an ACL's mask. The rootless
// default is still a predictable name under the temporary directory when
// $XDG_RUNTIME_DIR is unset: another user can squat it and so make Start
// fail (with an error that says so), but no longer control it.

// ErrUnsafeDir: a directory the supervisor trusts — the state directory,
// or the temporary directory scratch roots are made in — or a directory on
// its path could be changed by someone other than root and the
// supervisor's user; nothing was started or swept.
var ErrUnsafeDir = errors.New("directory not private to the supervisor's user")

// UnsafeDirError says which component of a trusted directory's path failed
// the check, what was found and what to do.
type UnsafeDirError struct {
	What   string      // "state directory" or "temporary directory"
	Path   string      // the component that failed (the directory itself or a parent)
	UID    int         // its owner, -1 when it is a symlink or not a directory
	Mode   fs.FileMode // its permission bits (and sticky) as found
	Reason string
}

func (e *UnsafeDirError) Error() string {
	found := "a symbolic link or not a directory"
	if e.UID >= 0 {
		found = fmt.Sprintf("owner uid %d, mode %04o", e.UID, uint32(e.Mode.Perm())|stickyBit(e.Mode))
	}
	hint := "choose another state directory (--state-dir, or $XDG_RUNTIME_DIR when not root)"
	if e.What != stateDirWhat {
		hint = "point $TMPDIR at a directory only you (or root) can change"
	}
	return fmt.Sprintf("%s %s: %v: %s (found %s); remove it if another user made it, or %s",
		e.What, e.Path, ErrUnsafeDir, e.Reason, found, hint)
}

// Is makes errors.Is(err, ErrUnsafeDir) true.
func (e *UnsafeDirError) Is(target error) bool { return target == ErrUnsafeDir }

const (
	stateDirWhat = "state directory"
	tempDirWhat  = "temporary directory"
)

func stickyBit(m fs.FileMode) uint32 {
	if m&fs.ModeSticky != 0 {
		return 0o1000
	}
	return 0
}

// ensureStateDir checks the state directory dir (absolute) and every
// directory on its path as the comment above says, making the missing
// ones when create is set. A missing component without create is an
// fs.ErrNotExist error; a failed check is an *UnsafeDirError.
func ensureStateDir(dir string, create bool) error {
	fd, err := openTrustedDir(stateDirWhat, dir, create, true)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// openTrustedDir walks the absolute path dir from / through O_PATH
// descriptors, checking each component (see the comment at the top) and
// making missing ones when create is set, and returns an O_PATH descriptor
// of dir. ownLast requires dir itself to be ours and writable by no one
// else; without it dir is checked like the directories on its path (root's
// or ours; if others can write it, sticky).
func openTrustedDir(what, dir string, create, ownLast bool) (int, error) {
	if !filepath.IsAbs(dir) {
		return -1, fmt.Errorf("%s %q: not absolute", what, dir)
	}
	dir = filepath.Clean(dir)
	euid := os.Geteuid()
	mode := uint32(0o700)
	if euid == 0 {
		mode = 0o711
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s %s: open /: %w", what, dir, err)
	}
	var parts []string
	if dir != "/" {
		parts = strings.Split(dir[1:], "/")
	}
	path := "/"
	for i := -1; i < len(parts); i++ {
		if i >= 0 {
			path = filepath.Join(path, parts[i])
			next, err := openTrustedComponent(what, fd, parts[i], path, create, mode)
			unix.Close(fd)
			if err != nil {
				return -1, err
			}
			fd = next
		}
		if err := checkTrustedComponent(what, fd, path, euid, ownLast && i == len(parts)-1); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// openTrustedComponent opens name in the directory parent without
// following a symlink, making it first if it is missing and create is set.
func openTrustedComponent(what string, parent int, name, path string, create bool, mode uint32) (int, error) {
	const flags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(parent, name, mode); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("%s: make %s: %w", what, path, err)
		}
		fd, err = unix.Openat(parent, name, flags, 0)
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return -1, fmt.Errorf("%s %s: %w", what, path, fs.ErrNotExist)
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		// A symlink (O_NOFOLLOW with O_DIRECTORY refuses it) or a file.
		return -1, &UnsafeDirError{What: what, Path: path, UID: -1, Reason: "a symbolic link is never followed here"}
	case err != nil:
		return -1, fmt.Errorf("%s: open %s: %w", what, path, err)
	}
	return fd, nil
}

// checkTrustedComponent checks the open directory fd: own means it must be
// ours and writable by no one else (the state directory itself), otherwise
// it is a directory on the path.
func checkTrustedComponent(what string, fd int, path string, euid int, own bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: stat %s: %w", what, path, err)
	}
	perm := fs.FileMode(st.Mode & 0o777)
	if st.Mode&unix.S_ISVTX != 0 {
		perm |= fs.ModeSticky
	}
	fail := func(reason string) error {
		return &UnsafeDirError{What: what, Path: path, UID: int(st.Uid), Mode: perm, Reason: reason}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return &UnsafeDirError{What: what, Path: path, UID: -1, Reason: "not a directory"}
	case own && int(st.Uid) != euid:
		return fail(fmt.Sprintf("must be owned by uid %d, the supervisor's user", euid))
	case own && st.Mode&0o022 != 0:
		return fail("must not be writable by group or others")
	case !own && st.Uid != 0 && int(st.Uid) != euid:
		return fail(fmt.Sprintf("it or a directory on its path must be owned by root or uid %d", euid))
	case !own && st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
		return fail("it or a directory on its path is writable by group or others and not sticky (as /tmp is)")
	}
	return nil
}
