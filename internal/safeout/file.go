package safeout

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// File is an output being written: an unnamed O_TMPFILE file in the
// destination's directory (if the writer is SIGKILLed, the kernel frees
// it: neither a partial output nor a temporary file is left behind), or,
// where the file system has no O_TMPFILE, a named temporary file created
// O_EXCL|O_NOFOLLOW relative to the directory. Commit fsyncs it and puts
// it in place relative to the directory's descriptor, so a reader only
// ever sees a complete file.
type File struct {
	dir  *Dir // not owned
	name string
	f    *os.File
	temp string // the named temporary file, when O_TMPFILE is unavailable
	dev  uint64 // the file's device and inode, checked before the rename
	ino  uint64
	done bool
	// synced: Sync made the data durable and nothing was written since,
	// so Commit has no fsync of the file left to do.
	synced bool

	// beforeRename, when set (tests only), runs once the file has a
	// temporary name in the directory and before that name is checked
	// and renamed: the window in which a local user who can write the
	// directory could replace the name.
	beforeRename func(temp string)
}

// Create starts the output name in d, mode perm (less the umask, as
// open(2) gives it; Chmod sets an exact mode). Nothing appears under name
// before Commit. The File does not own d.
func (d *Dir) Create(name string, perm os.FileMode) (*File, error) {
	if err := oneComponent(name); err != nil {
		return nil, err
	}
	shown := d.join(name)
	fd, err := unix.Openat(d.Fd(), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err == nil {
		return newFile(d, name, fd, "")
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("write %s: %w", shown, os.NewSyscallError("openat O_TMPFILE", err))
	}
	return d.CreateNamedTemp(name, perm)
}

// CreateNamedTemp is Create where the file system has no O_TMPFILE: a
// named temporary file, created O_EXCL|O_NOFOLLOW relative to the
// directory's descriptor, so that a name planted in the directory (a
// symlink, a FIFO) is never opened, only skipped. Exported for the tests
// of that path on file systems that do have O_TMPFILE.
func (d *Dir) CreateNamedTemp(name string, perm os.FileMode) (*File, error) {
	if err := oneComponent(name); err != nil {
		return nil, err
	}
	for range 8 {
		temp := tempName(name)
		fd, err := unix.Openat(d.Fd(), temp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", d.join(name), os.NewSyscallError("openat", err))
		}
		f, err := newFile(d, name, fd, temp)
		if err != nil {
			_ = unix.Unlinkat(d.Fd(), temp, 0)
		}
		return f, err
	}
	return nil, fmt.Errorf("write %s: no free temporary name", d.join(name))
}

func newFile(d *Dir, name string, fd int, temp string) (*File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("write %s: %w", d.join(name), os.NewSyscallError("fstat", err))
	}
	return &File{dir: d, name: name, f: os.NewFile(uintptr(fd), d.join(name)), temp: temp, dev: st.Dev, ino: st.Ino,
		beforeRename: d.beforeRename}, nil
}

func (d *Dir) join(name string) string { return filepath.Join(d.path, name) }

// tempName is a fresh hidden name beside base.
func tempName(base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "." + base + ".tmp-" + hex.EncodeToString(b[:])
}

// Path is the output's path, for messages.
func (o *File) Path() string { return o.dir.join(o.name) }

// Temp is the named temporary file's name, "" for an O_TMPFILE.
func (o *File) Temp() string { return o.temp }

// Write writes to the file.
func (o *File) Write(p []byte) (int, error) {
	o.synced = false
	return o.f.Write(p)
}

// Sync fsyncs the file's data now, still unnamed (or under its temporary
// name), so that a caller can overlap the fsync with other work and
// Commit then only names the file. A Write after it makes Commit fsync
// again.
func (o *File) Sync() error {
	if o.done {
		return fmt.Errorf("write %s: already committed or discarded", o.Path())
	}
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", o.Path(), err)
	}
	o.synced = true
	return nil
}

// Chmod sets the file's exact mode, on the descriptor.
func (o *File) Chmod(perm os.FileMode) error {
	if err := unix.Fchmod(int(o.f.Fd()), uint32(perm.Perm())); err != nil {
		return fmt.Errorf("write %s: %w", o.Path(), os.NewSyscallError("fchmod", err))
	}
	return nil
}

// Commit makes the file visible, complete, under its name: fsync (unless
// Sync did it and nothing was written since), a link
// to a fresh temporary name (for an O_TMPFILE), a check that the
// temporary name still holds this file, a rename over the destination,
// all relative to the directory's descriptor, then an fsync of the
// directory. A rename never follows a symbolic link at the destination.
func (o *File) Commit() error {
	if o.done {
		return fmt.Errorf("write %s: already committed or discarded", o.Path())
	}
	if !o.synced {
		if err := o.f.Sync(); err != nil {
			return fmt.Errorf("write %s: fsync: %w", o.Path(), err)
		}
	}
	if o.temp == "" {
		name, err := o.link()
		if err != nil {
			return fmt.Errorf("write %s: link: %w", o.Path(), err)
		}
		o.temp = name
	}
	if o.beforeRename != nil {
		o.beforeRename(o.temp)
	}
	if err := o.sameTemp(); err != nil {
		return fmt.Errorf("write %s: %w", o.Path(), err)
	}
	if err := unix.Renameat(o.dir.Fd(), o.temp, o.dir.Fd(), o.name); err != nil {
		o.removeTemp()
		return fmt.Errorf("write %s: %w", o.Path(), os.NewSyscallError("renameat", err))
	}
	o.temp = ""
	// The rename is done and the file complete; a directory that cannot
	// be fsynced (some file systems refuse) loses only durability, which
	// no error here could give back.
	_ = o.dir.Sync()
	o.done = true
	return o.f.Close()
}

// link gives the unnamed file a fresh temporary name in the directory:
// linkat with AT_EMPTY_PATH on the descriptor where we may (it needs
// CAP_DAC_READ_SEARCH), else through /proc/self/fd with AT_SYMLINK_FOLLOW
// (a magic link to our own descriptor, not a path anyone else controls).
func (o *File) link() (string, error) {
	fd := int(o.f.Fd())
	for range 8 {
		name := tempName(o.name)
		err := unix.Linkat(fd, "", o.dir.Fd(), name, unix.AT_EMPTY_PATH)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOENT) {
			err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), o.dir.Fd(), name, unix.AT_SYMLINK_FOLLOW)
		}
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", os.NewSyscallError("linkat", err)
		}
		return name, nil
	}
	return "", errors.New("no free temporary name")
}

// sameTemp checks that the temporary name still holds our file. A subject
// is gone by commit time (the supervisor commits after the teardown); a
// local user who can write the directory can still swap the name between
// this check and the rename, and then the destination is their entry,
// which they could as well have put there after the rename: root never
// opens, chmods or follows it.
func (o *File) sameTemp() error {
	var st unix.Stat_t
	if err := unix.Fstatat(o.dir.Fd(), o.temp, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("temporary file %s: %w", o.temp, os.NewSyscallError("fstatat", err))
	}
	if st.Dev != o.dev || st.Ino != o.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("temporary file %s was replaced before the commit", o.temp)
	}
	return nil
}

// removeTemp unlinks the temporary name if it still holds our file.
func (o *File) removeTemp() {
	if o.temp != "" && o.sameTemp() == nil {
		_ = unix.Unlinkat(o.dir.Fd(), o.temp, 0)
	}
}

// Discard drops an uncommitted file; after Commit it does nothing.
func (o *File) Discard() {
	if o.done {
		return
	}
	o.done = true
	_ = o.f.Close()
	o.removeTemp()
}

// WriteFile writes name in d whole, mode exactly perm (fchmod), through
// Create and Commit: fn's output or nothing.
func (d *Dir) WriteFile(name string, perm os.FileMode, fn func(io.Writer) error) error {
	o, err := d.Create(name, perm)
	if err != nil {
		return err
	}
	defer o.Discard()
	if err := fn(o); err != nil {
		return fmt.Errorf("write %s: %w", o.Path(), err)
	}
	if err := o.Chmod(perm); err != nil {
		return err
	}
	return o.Commit()
}

// OpenInPlace opens (creating it perm if absent) the file name in d for
// writing, truncated, not atomically: the --stderr file, written as the
// subject runs. It must be a regular file with no other hard link and no
// set-id bit; a symbolic link, a FIFO, a device, a socket or a directory
// is refused. An existing entry is first opened O_PATH, which opens
// nothing for I/O (no device open, no FIFO wait), checked through that
// descriptor, and only then reopened for writing through /proc/self/fd:
// the same inode, so a swap after the check changes nothing.
func (d *Dir) OpenInPlace(name string, perm os.FileMode) (*os.File, error) {
	if err := oneComponent(name); err != nil {
		return nil, err
	}
	shown := d.join(name)
	for range 8 {
		pfd, err := unix.Openat(d.Fd(), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			// O_EXCL: a fresh regular file of ours, or EEXIST if anything
			// (a symlink included) appeared meanwhile, then look again.
			fd, err := unix.Openat(d.Fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", shown, os.NewSyscallError("openat", err))
			}
			return os.NewFile(uintptr(fd), shown), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", shown, os.NewSyscallError("openat", err))
		}
		f, err := reopenRegular(pfd, shown)
		unix.Close(pfd)
		return f, err
	}
	return nil, fmt.Errorf("%s: the entry kept changing while it was opened", shown)
}

// reopenRegular checks the O_PATH descriptor pfd and reopens its inode
// for writing, truncated.
func reopenRegular(pfd int, shown string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", shown, os.NewSyscallError("fstat", err))
	}
	if err := checkRegular(&st); err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_WRONLY|unix.O_TRUNC|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: reopen through /proc/self/fd: %w", shown, os.NewSyscallError("open", err))
	}
	var again unix.Stat_t
	if err := unix.Fstat(fd, &again); err != nil || again.Dev != st.Dev || again.Ino != st.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: the reopened descriptor is not the file checked", shown)
	}
	return os.NewFile(uintptr(fd), shown), nil
}

// checkRegular refuses what we must not write into.
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
