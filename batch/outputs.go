package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/report"
	"github.com/termverify/termverify-sandbox/transcript"
)

// OutputInRootError is a batch output (--out, --junit, --summary, --html) whose
// directory is, or lies below, a directory an entry maps read-write: that
// entry's subject could rename the directory and put a forged file (an
// earlier entry's transcript, the reports) at the path the summary names.
type OutputInRootError struct {
	Output string // "--out", "--junit" or "--summary"
	Path   string // as given
	Entry  string // the entry that maps the root
	RootID string
	Root   string // the root's host directory, as given
}

func (e *OutputInRootError) Error() string {
	return fmt.Sprintf("%s %s lies inside root %s=%s of entry %s, which that entry's subject can write: "+
		"it could replace the batch's outputs (another entry's transcript, the reports) with forged ones; "+
		"give %s a path outside every --root directory of the batch",
		e.Output, e.Path, e.RootID, e.Root, e.Entry, e.Output)
}

// outputDir is one output's directory, opened once, and what names it.
type outputDir struct {
	flag, path string
	base       string // a report's file name in dir; "" for --out
	dir        *safeout.Dir
	ids        map[safeout.FileID]bool // the directory and all above it
}

func newOutputDir(flag, path string, dir *safeout.Dir) (*outputDir, error) {
	anc, err := dir.Ancestors()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	ids := make(map[safeout.FileID]bool, len(anc))
	for _, id := range anc {
		ids[id] = true
	}
	return &outputDir{flag: flag, path: path, dir: dir, ids: ids}, nil
}

// checkOutsideRoots refuses an output whose directory is, or is below,
// a root some entry maps. The comparison is by device and inode of the
// opened directory and of every directory above it (walked by ".." from
// the descriptor), not by the strings: a root given through a symbolic
// link, a bind mount or a different spelling is still found. A root
// that does not exist cannot be above an output that does; its run
// fails on its own.
func checkOutsideRoots(outs []*outputDir, preps []prepared) error {
	for _, p := range preps {
		ids := make([]string, 0, len(p.req.Roots))
		for id := range p.req.Roots {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			dir := p.req.Roots[id]
			var st unix.Stat_t
			// Followed on purpose: what the root's name reaches now is
			// what would be refused or mapped, and following is the
			// stricter answer here.
			if err := unix.Stat(dir, &st); err != nil {
				continue
			}
			key := safeout.FileID{Dev: st.Dev, Ino: st.Ino}
			for _, o := range outs {
				if o.ids[key] {
					return &OutputInRootError{Output: o.flag, Path: o.path, Entry: p.entry.Name, RootID: id, Root: dir}
				}
			}
		}
	}
	return nil
}

// openOutputs opens the reports' directories and opens or creates the
// output directory, each without following a symbolic link, after checking
// that none lies in a mapped root. The output directory's missing
// components are created (mkdirat, relative to descriptors) only after
// its existing part passed the check: a refused batch creates nothing.
func openOutputs(o Options, preps []prepared) (out *safeout.Dir, reports map[string]*outputDir, err error) {
	var all []*outputDir
	defer func() {
		if err != nil {
			for _, d := range all {
				_ = d.dir.Close()
			}
			_ = out.Close()
		}
	}()
	reports = map[string]*outputDir{}
	for _, r := range []struct{ flag, path string }{{"--summary", o.Summary}, {"--junit", o.JUnit}, {"--html", o.HTML}} {
		if r.path == "" {
			continue
		}
		dir, base, err := safeout.SplitFile(r.path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %w", r.flag, err)
		}
		d, err := safeout.OpenDir(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: directory %s: %w", r.flag, r.path, dir, err)
		}
		od, err := newOutputDir(r.flag, r.path, d)
		if err != nil {
			_ = d.Close()
			return nil, nil, err
		}
		od.base = base
		all = append(all, od)
		reports[r.flag] = od
	}
	path := filepath.Clean(o.OutDir)
	pre, rest, err := safeout.OpenPrefix(path)
	if err != nil {
		return nil, nil, fmt.Errorf("output directory: %w", err)
	}
	od, err := newOutputDir("--out", o.OutDir, pre)
	if err != nil {
		_ = pre.Close()
		return nil, nil, err
	}
	all = append(all, od)
	if err := checkOutsideRoots(all, preps); err != nil {
		return nil, nil, err
	}
	if out, err = pre.MkdirAll(rest, 0o755, path); err != nil {
		return nil, nil, fmt.Errorf("output directory: %w", err)
	}
	_ = pre.Close()
	all = all[:len(all)-1]
	return out, reports, nil
}

// writeReports writes the summary, the JUnit report and the HTML page,
// each whole or not at all, 0644, into the directories opened before the
// batch. The page reads each entry's transcript back from the output
// directory, by its descriptor, one at a time.
func writeReports(reports map[string]*outputDir, sum *Summary, out *safeout.Dir) error {
	var errs []error
	if d := reports["--summary"]; d != nil {
		errs = append(errs, writeReport(d, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(sum)
		}))
	}
	if d := reports["--junit"]; d != nil {
		errs = append(errs, writeReport(d, func(w io.Writer) error {
			_, err := JUnit(sum).WriteTo(w)
			return err
		}))
	}
	if d := reports["--html"]; d != nil {
		errs = append(errs, writeReport(d, func(w io.Writer) error {
			return report.WriteBatch(w, htmlBatch(sum, out))
		}))
	}
	return errors.Join(errs...)
}

func writeReport(d *outputDir, fn func(io.Writer) error) error {
	if err := d.dir.WriteFile(d.base, 0o644, fn); err != nil {
		return fmt.Errorf("%s: %w", d.flag, err)
	}
	return nil
}

// readTranscript opens an entry's transcript in the opened output
// directory, not following a symbolic link.
func readTranscript(out *safeout.Dir, name string) (*os.File, error) {
	return out.OpenRead(name + ".jsonl")
}

// htmlBatch is the summary as package report takes it: each entry's
// transcript loaded from the output directory when the page reaches it.
func htmlBatch(sum *Summary, out *safeout.Dir) report.Batch {
	b := report.Batch{Manifest: sum.Manifest, Entries: make([]report.BatchEntry, len(sum.Entries))}
	for i, r := range sum.Entries {
		e := report.BatchEntry{Name: r.Name, Status: string(r.Status), Outcome: r.Outcome, Code: r.Code, Message: r.Message, File: r.Transcript}
		if r.Transcript != "" {
			name := r.Name
			e.Load = func() (*transcript.Transcript, error) {
				f, err := readTranscript(out, name)
				if err != nil {
					return nil, err
				}
				defer f.Close()
				return transcript.Read(f)
			}
		}
		b.Entries[i] = e
	}
	return b
}
