package supervisor

import (
	"bufio"
	"fmt"
	"io"

	"github.com/termverify/termverify-sandbox/internal/safeout"
)

// output is where the transcript (or the evidence) goes. For a path it is
// a safeout.File in the directory opened before the run: an unnamed
// O_TMPFILE (if the supervisor is SIGKILLed mid-run, the kernel frees it,
// so neither a partial transcript nor a temporary file is left behind),
// committed by fsync, link and rename relative to the directory's
// descriptor, so a reader only ever sees a complete transcript and
// replacing the directory's path by a symbolic link during the run (the
// subject can, when it lies in the mapped root) changes nothing. The
// temporary name is made at commit, after the teardown's kill, when no
// subject runs any more.
type output struct {
	dst  *outDir       // nil when writing to a plain io.Writer
	file *safeout.File // nil when writing to a plain io.Writer
	buf  *bufio.Writer
	done bool
}

// outputBuffer is the write buffer of a transcript or evidence file. Small
// on purpose: each page of it is touched fresh once (a page fault), while
// a write(2) of 32 KiB costs far less than the eight faults it saves
// (docs/SUPERVISOR.md, "Memory bound under a flood").
const outputBuffer = 32 << 10

// openOutput opens dst for writing, or returns an output to w when dst is
// nil. The output does not own dst.
func openOutput(dst *outDir, w io.Writer) (*output, error) {
	if dst == nil {
		return &output{buf: bufio.NewWriterSize(w, 64<<10)}, nil
	}
	f, err := dst.dir.Create(dst.base, 0o644)
	if err != nil {
		return nil, err
	}
	return newOutput(dst, f), nil
}

func newOutput(dst *outDir, f *safeout.File) *output {
	return &output{dst: dst, file: f, buf: bufio.NewWriterSize(f, outputBuffer)}
}

func (o *output) Write(p []byte) (int, error) { return o.buf.Write(p) }

// sync writes out the buffer and fsyncs the file, still unnamed, so that
// the fsync can run while the sandbox is removed; commit then names it.
func (o *output) sync() error {
	if err := o.buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.path(), err)
	}
	if o.file == nil {
		return nil
	}
	return o.file.Sync()
}

// commit makes the transcript visible, complete, at its path.
func (o *output) commit() error {
	if err := o.buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.path(), err)
	}
	if o.file == nil {
		o.done = true
		return nil
	}
	if err := o.file.Commit(); err != nil {
		return err // discard still drops the file
	}
	o.done = true
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
	o.file.Discard()
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
