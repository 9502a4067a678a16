package supervisor

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// output is where the transcript (or the evidence) goes. For a path it is
// an unnamed O_TMPFILE file in the destination's directory: if the
// supervisor is SIGKILLed mid-run, the kernel frees it, so neither a
// partial transcript nor a temporary file is left behind. commit fsyncs
// it and links it into place (link to a fresh name, rename over the
// destination, fsync the directory), so a reader only ever sees a complete
// transcript. Where the file system has no O_TMPFILE, a named temporary
// file is used instead.
//
// The directory is the one opened before the run (outDir): the file is
// created, linked and renamed relative to that descriptor, so replacing
// the directory's path by a symbolic link during the run (the subject can,
// when it lies in the mapped root) changes nothing. The temporary name is
// made at commit, after the teardown, when no subject runs any more.
type output struct {
	dst  *outDir  // nil when writing to a plain io.Writer
	file *os.File // nil when writing to a plain io.Writer
	temp string   // the named temporary file, when O_TMPFILE is unavailable
	dev  uint64   // its device and inode, checked before the rename
	ino  uint64
	buf  *bufio.Writer
	done bool
}

// outputBuffer is the write buffer of a transcript or evidence file. Small
// on purpose: each page of it is touched fresh once (a page fault, ~17 µs
// on the development VM), while a write(2) of 32 KiB costs far less than
// the eight faults it saves (docs/SUPERVISOR.md, "Memory bound under a flood").
const outputBuffer = 32 << 10

// openOutput opens dst for writing, or returns an output to w when dst is
// nil. The output does not own dst.
func openOutput(dst *outDir, w io.Writer) (*output, error) {
	if dst == nil {
		return &output{buf: bufio.NewWriterSize(w, 64<<10)}, nil
	}
	fd, err := unix.Openat(dst.fd(), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err == nil {
		f := os.NewFile(uintptr(fd), dst.path)
		return &output{dst: dst, file: f, buf: bufio.NewWriterSize(f, outputBuffer)}, nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("write %s: %w", dst.path, os.NewSyscallError("openat O_TMPFILE", err))
	}
	return openNamedTemp(dst)
}

// openNamedTemp is openOutput where the file system has no O_TMPFILE: a
// named temporary file, created O_EXCL|O_NOFOLLOW relative to the
// directory's descriptor, so that a name planted in the directory (a
// symlink, a FIFO) is never opened, only skipped.
func openNamedTemp(dst *outDir) (*output, error) {
	for range 8 {
		name := tempName(dst.base)
		fd, err := unix.Openat(dst.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", dst.path, os.NewSyscallError("openat", err))
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Unlinkat(dst.fd(), name, 0)
			unix.Close(fd)
			return nil, fmt.Errorf("write %s: %w", dst.path, os.NewSyscallError("fstat", err))
		}
		f := os.NewFile(uintptr(fd), dst.path)
		return &output{dst: dst, file: f, temp: name, dev: st.Dev, ino: st.Ino, buf: bufio.NewWriterSize(f, outputBuffer)}, nil
	}
	return nil, fmt.Errorf("write %s: no free temporary name", dst.path)
}

// tempName is a fresh hidden name beside base.
func tempName(base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "." + base + ".tmp-" + hex.EncodeToString(b[:])
}

func (o *output) Write(p []byte) (int, error) { return o.buf.Write(p) }

// commit makes the transcript visible, complete, at its path.
func (o *output) commit() error {
	if err := o.buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.path(), err)
	}
	if o.file == nil {
		o.done = true
		return nil
	}
	if err := o.file.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", o.path(), err)
	}
	src := o.temp
	if src == "" {
		var err error
		if src, err = o.link(); err != nil {
			return fmt.Errorf("write %s: link: %w", o.path(), err)
		}
	} else if err := o.sameTemp(); err != nil {
		return fmt.Errorf("write %s: %w", o.path(), err)
	}
	if err := unix.Renameat(o.dst.fd(), src, o.dst.fd(), o.dst.base); err != nil {
		_ = unix.Unlinkat(o.dst.fd(), src, 0)
		return fmt.Errorf("write %s: %w", o.path(), os.NewSyscallError("renameat", err))
	}
	o.temp = ""
	// The rename is done and the file complete; a directory that cannot
	// be fsynced (some file systems refuse) loses only durability, which
	// no error here could give back.
	_ = o.dst.sync()
	o.done = true
	return o.file.Close()
}

// link gives the unnamed file a fresh temporary name in the directory:
// linkat with AT_EMPTY_PATH on the descriptor where we may (it needs
// CAP_DAC_READ_SEARCH), else through /proc/self/fd with AT_SYMLINK_FOLLOW
// (a magic link to our own descriptor, not a path anyone else controls).
func (o *output) link() (string, error) {
	fd := int(o.file.Fd())
	for range 8 {
		name := tempName(o.dst.base)
		err := unix.Linkat(fd, "", o.dst.fd(), name, unix.AT_EMPTY_PATH)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOENT) {
			err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), o.dst.fd(), name, unix.AT_SYMLINK_FOLLOW)
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

// sameTemp checks that the named temporary file's name still holds our
// file. It runs after the teardown, so no subject can swap it between this
// check and the rename; a local user who can write the directory could,
// but could as well replace the transcript after the rename.
func (o *output) sameTemp() error {
	var st unix.Stat_t
	if err := unix.Fstatat(o.dst.fd(), o.temp, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("temporary file %s: %w", o.temp, os.NewSyscallError("fstatat", err))
	}
	if st.Dev != o.dev || st.Ino != o.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("temporary file %s was replaced during the run", o.temp)
	}
	return nil
}

func (o *output) path() string {
	if o.dst == nil {
		return "transcript stream"
	}
	return o.dst.path
}

// discard drops an uncommitted transcript; after commit it does nothing.
func (o *output) discard() {
	if o.done {
		return
	}
	o.done = true
	if o.file == nil {
		_ = o.buf.Flush()
		return
	}
	_ = o.file.Close()
	if o.temp != "" && o.sameTemp() == nil {
		_ = unix.Unlinkat(o.dst.fd(), o.temp, 0)
	}
}

// writeFileAtomic writes data to dst through a temporary file and a
// rename, for the evidence file.
func writeFileAtomic(dst *outDir, data []byte) error {
	o, err := openOutput(dst, nil)
	if err != nil {
		return err
	}
	defer o.discard()
	if _, err := o.Write(data); err != nil {
		return err
	}
	return o.commit()
}
