package supervisor

import (
	"bufio"
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

// output is where the transcript goes. For a path it is an unnamed
// O_TMPFILE file in the destination's directory: if the supervisor is
// SIGKILLed mid-run, the kernel frees it, so neither a partial transcript
// nor a temporary file is left behind. commit fsyncs it and links it into
// place (link to a fresh name, rename over the destination, fsync the
// directory), so a reader only ever sees a complete transcript. Where the
// file system has no O_TMPFILE, a named temporary file is used instead.
type output struct {
	path string
	file *os.File // nil when writing to a plain io.Writer
	temp string   // the named temporary file, when O_TMPFILE is unavailable
	buf  *bufio.Writer
	done bool
}

func openOutput(path string, w io.Writer) (*output, error) {
	if path == "" {
		return &output{buf: bufio.NewWriterSize(w, 64<<10)}, nil
	}
	dir := filepath.Dir(path)
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err == nil {
		f := os.NewFile(uintptr(fd), path)
		return &output{path: path, file: f, buf: bufio.NewWriterSize(f, 256<<10)}, nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("write %s: %w", path, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &output{path: path, file: f, temp: f.Name(), buf: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (o *output) Write(p []byte) (int, error) { return o.buf.Write(p) }

// commit makes the transcript visible, complete, at its path.
func (o *output) commit() error {
	if err := o.buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	if o.file == nil {
		o.done = true
		return nil
	}
	if err := o.file.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", o.path, err)
	}
	src := o.temp
	if src == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		src = filepath.Join(filepath.Dir(o.path), "."+filepath.Base(o.path)+".tmp-"+hex.EncodeToString(b[:]))
		// AT_SYMLINK_FOLLOW through /proc needs no CAP_DAC_READ_SEARCH,
		// unlike AT_EMPTY_PATH on the descriptor itself.
		proc := "/proc/self/fd/" + strconv.Itoa(int(o.file.Fd()))
		if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, src, unix.AT_SYMLINK_FOLLOW); err != nil {
			return fmt.Errorf("write %s: link: %w", o.path, err)
		}
	}
	if err := os.Rename(src, o.path); err != nil {
		_ = os.Remove(src)
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	o.temp = ""
	if d, err := os.Open(filepath.Dir(o.path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	o.done = true
	return o.file.Close()
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
	if o.temp != "" {
		_ = os.Remove(o.temp)
	}
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, for the evidence file.
func writeFileAtomic(path string, data []byte) error {
	o, err := openOutput(path, nil)
	if err != nil {
		return err
	}
	defer o.discard()
	if _, err := o.Write(data); err != nil {
		return err
	}
	return o.commit()
}
