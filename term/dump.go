package term

import (
	"fmt"

	"github.com/termverify/termverify-sandbox/internal/safeout"
)

// ptyDump is --pty-dump's file: an unnamed file in the destination's
// directory until commit puts it in place whole. Its methods are no-ops
// on nil (no dump asked for).
type ptyDump struct {
	dir *safeout.Dir
	f   *safeout.File
	err error // the first write error, reported by commit
	// room is what may still be written: a program that prints forever
	// fills the dump only up to the sandbox's file-size limit, as it
	// could fill a file of its own (the dump is invisible until commit).
	room int64
}

func openDump(path string, limit int64) (*ptyDump, error) {
	dirPath, name, err := safeout.SplitFile(path)
	if err != nil {
		return nil, fmt.Errorf("--pty-dump %s: %w", path, err)
	}
	dir, err := safeout.OpenDir(dirPath)
	if err != nil {
		return nil, fmt.Errorf("--pty-dump %s: %w", path, err)
	}
	f, err := dir.Create(name, 0o600)
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("--pty-dump %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Discard()
		dir.Close()
		return nil, fmt.Errorf("--pty-dump %s: %w", path, err)
	}
	if limit <= 0 {
		limit = 1<<63 - 1
	}
	return &ptyDump{dir: dir, f: f, room: limit}, nil
}

// write is called by the reader alone.
func (p *ptyDump) write(b []byte) {
	if p == nil || p.err != nil {
		return
	}
	b = b[:min(int64(len(b)), p.room)]
	p.room -= int64(len(b))
	if len(b) == 0 {
		return
	}
	if _, err := p.f.Write(b); err != nil {
		p.err = err
	}
}

// commit puts the file in place; called once the reader has ended.
func (p *ptyDump) commit() error {
	if p == nil {
		return nil
	}
	defer p.dir.Close()
	if p.err != nil {
		p.f.Discard()
		return fmt.Errorf("--pty-dump %s: %w", p.f.Path(), p.err)
	}
	if err := p.f.Commit(); err != nil {
		return fmt.Errorf("--pty-dump %s: %w", p.f.Path(), err)
	}
	return nil
}

func (p *ptyDump) discard() {
	if p == nil {
		return
	}
	p.f.Discard()
	p.dir.Close()
}
