package supervisor

import (
	"fmt"
	"os"
	"strings"

	"github.com/termverify/termverify-sandbox/internal/safeout"
)

// Output paths (--transcript, --evidence, --stderr) are hostile: their
// directories may lie in a root the subject maps read-write, or be
// writable by other local users, and the supervisor runs as root. So each
// directory is opened once, before the run, without following a symbolic
// link at any component, and every later step acts on its descriptor,
// never on the name: internal/safeout, the one mechanism every output of
// the binary goes through.

// outDir is an output file's directory, opened once (O_PATH), and the
// file's name in it.
type outDir struct {
	path string // the path as given, for messages only; never resolved again
	dir  *safeout.Dir
	base string // one component: no slash, not "." or ".."
}

// openOutDir opens the directory of path, refusing a symbolic link at any
// component. Relative paths are resolved from the working directory,
// absolute ones from "/". what names the flag for messages. With in set
// (a batch's --out, opened once for all its entries), path must name a
// file directly in it, and the directory is not resolved again.
func openOutDirIn(what, path string, in *safeout.Dir) (*outDir, error) {
	dir, base, err := safeout.SplitFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s %w", what, err)
	}
	if in != nil {
		if strings.TrimSuffix(dir, "/") != strings.TrimSuffix(in.Path(), "/") {
			return nil, fmt.Errorf("%s %s: not a file of the output directory %s", what, path, in.Path())
		}
		d, err := in.Dup()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, path, err)
		}
		return &outDir{path: path, dir: d, base: base}, nil
	}
	d, err := safeout.OpenDir(dir)
	if err != nil {
		shown := dir
		if len(shown) > 1 {
			shown = strings.TrimSuffix(shown, "/")
		}
		return nil, fmt.Errorf("%s %s: directory %s: %w", what, path, shown, err)
	}
	return &outDir{path: path, dir: d, base: base}, nil
}

// openOutDir is openOutDirIn without an opened output directory.
func openOutDir(what, path string) (*outDir, error) { return openOutDirIn(what, path, nil) }

func (d *outDir) close() {
	if d != nil {
		_ = d.dir.Close()
	}
}

// openStderrFile opens (creating it 0644 if absent) the --stderr file for
// the supervisor to write: never the subject, which gets a pipe. It must
// be a regular file with no other hard link and no set-id bit; a symbolic
// link at any component, a FIFO, a device, a socket or a directory is
// refused before the run (safeout.Dir.OpenInPlace).
func openStderrFile(path string) (*os.File, error) { return openStderrFileIn(path, nil) }

// openStderrFileIn is openStderrFile in an opened output directory
// (openOutDirIn).
func openStderrFileIn(path string, in *safeout.Dir) (*os.File, error) {
	d, err := openOutDirIn("stderr file", path, in)
	if err != nil {
		return nil, err
	}
	defer d.close()
	f, err := d.dir.OpenInPlace(d.base, 0o644)
	if err != nil {
		return nil, fmt.Errorf("stderr file %w", err)
	}
	return f, nil
}
