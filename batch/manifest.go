package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Entry is one run of a batch. Paths are as Load resolved them (relative
// to the manifest's directory, or as given on the command line).
type Entry struct {
	// Name names the entry's outputs (NAME.jsonl in the output
	// directory) and its JUnit test case; unique within the batch.
	Name string `json:"name"`
	// Index is the entry's 0-based position in the manifest (or in the
	// directory's sorted listing); Select shards by it.
	Index   int      `json:"index"`
	Request string   `json:"request"`          // request file {"run_id", "config", "subject"}
	Inputs  string   `json:"inputs,omitempty"` // input script (JSONL); "" sends only input.stop
	Roots   []string `json:"roots"`            // ID=DIR, as run's --root
	Subject []string `json:"subject"`          // argv, resolved inside the sandbox
}

// Defaults fill what an entry does not say: the command line's --root
// flags and the subject after --. They are taken as given (relative to the
// working directory), not relative to the manifest.
type Defaults struct {
	Roots   []string
	Subject []string
}

// manifestEntry is one entry as a manifest spells it.
type manifestEntry struct {
	Name    string   `json:"name"`
	Request string   `json:"request"`
	Inputs  string   `json:"inputs"`
	Roots   []string `json:"roots"`
	Subject []string `json:"subject"`
}

// ManifestError is a manifest (or request directory) that cannot be used;
// Entry is the 0-based entry it is about, -1 for the whole file.
type ManifestError struct {
	Path  string
	Entry int
	Err   error
}

func (e *ManifestError) Error() string {
	if e.Entry < 0 {
		return fmt.Sprintf("manifest %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("manifest %s: entry %d: %v", e.Path, e.Entry, e.Err)
}

// Unwrap returns the cause.
func (e *ManifestError) Unwrap() error { return e.Err }

// MaxManifestSize bounds a manifest file, read whole.
const MaxManifestSize = 64 << 20

// validName is what an entry name may be: it becomes a file name in the
// output directory and a JUnit test case name, so no separator, no
// leading dot, nothing a shell or an XML reader would trip over: 1 to 128
// of A-Z a-z 0-9 . _ -, starting with a letter or digit. (A loop, not a
// package-level regexp: compiling one would cost every process start of
// the binary, sandbox setup processes included.)
func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// Load reads the batch at path: a directory of requests, or a manifest
// file (a JSON array of entries, or JSONL, one entry per line). It checks
// every entry (names valid and unique, a request, a subject) but reads no
// request: Prepare does. Relative paths in a manifest are relative to its
// directory.
func Load(path string, d Defaults) ([]Entry, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &ManifestError{Path: path, Entry: -1, Err: err}
	}
	var entries []Entry
	if fi.IsDir() {
		entries, err = loadDir(path, d)
	} else {
		entries, err = loadManifest(path, d)
	}
	if err != nil {
		return nil, err
	}
	return entries, check(path, entries)
}

// loadManifest reads a manifest file.
func loadManifest(path string, d Defaults) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ManifestError{Path: path, Entry: -1, Err: err}
	}
	defer f.Close()
	data, err := readAtMost(f, MaxManifestSize)
	if err != nil {
		return nil, &ManifestError{Path: path, Entry: -1, Err: err}
	}
	var raw []manifestEntry
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&raw); err != nil {
			return nil, &ManifestError{Path: path, Entry: -1, Err: err}
		}
		if dec.More() {
			return nil, &ManifestError{Path: path, Entry: -1, Err: errors.New("text after the JSON array")}
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, MaxManifestSize)
		for line := 1; sc.Scan(); line++ {
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			var e manifestEntry
			dec := json.NewDecoder(bytes.NewReader(text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil {
				return nil, &ManifestError{Path: path, Entry: len(raw), Err: fmt.Errorf("line %d: %w", line, err)}
			}
			if dec.More() {
				return nil, &ManifestError{Path: path, Entry: len(raw), Err: fmt.Errorf("line %d: more than one JSON value", line)}
			}
			raw = append(raw, e)
		}
		if err := sc.Err(); err != nil {
			return nil, &ManifestError{Path: path, Entry: -1, Err: err}
		}
	}
	base := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	entries := make([]Entry, len(raw))
	for i, r := range raw {
		e := Entry{Index: i, Name: r.Name, Request: rel(r.Request), Inputs: rel(r.Inputs), Subject: r.Subject}
		if e.Name == "" && r.Request != "" {
			e.Name = strings.TrimSuffix(filepath.Base(r.Request), ".json")
		}
		if r.Roots == nil {
			e.Roots = d.Roots
		} else {
			for _, root := range r.Roots {
				id, dir, ok := strings.Cut(root, "=")
				if !ok || id == "" || dir == "" {
					return nil, &ManifestError{Path: path, Entry: i, Err: fmt.Errorf("root %q: want ID=DIR", root)}
				}
				e.Roots = append(e.Roots, id+"="+rel(dir))
			}
		}
		if e.Subject == nil {
			e.Subject = d.Subject
		}
		entries[i] = e
	}
	return entries, nil
}

// loadDir reads a directory of requests: every NAME.json directly in dir
// is an entry's request, NAME.inputs.jsonl beside it (if present) its
// input script; roots and subject are the defaults. Entries are in
// byte order of their names.
func loadDir(dir string, d Defaults) ([]Entry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, &ManifestError{Path: dir, Entry: -1, Err: err}
	}
	var names []string
	for _, de := range ents {
		if n := de.Name(); !de.IsDir() && strings.HasSuffix(n, ".json") {
			names = append(names, strings.TrimSuffix(n, ".json"))
		}
	}
	sort.Strings(names)
	entries := make([]Entry, len(names))
	for i, n := range names {
		e := Entry{Index: i, Name: n, Request: filepath.Join(dir, n+".json"), Roots: d.Roots, Subject: d.Subject}
		if in := filepath.Join(dir, n+".inputs.jsonl"); fileExists(in) {
			e.Inputs = in
		}
		entries[i] = e
	}
	return entries, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// check refuses a batch with no entries, an entry without a request or a
// subject, an invalid name, or two entries with one name (their outputs
// would overwrite each other). The check covers the whole manifest, not
// one shard: every shard of a CI matrix refuses the same manifest.
func check(path string, entries []Entry) error {
	if len(entries) == 0 {
		return &ManifestError{Path: path, Entry: -1, Err: errors.New("no entries")}
	}
	seen := map[string]int{}
	for i, e := range entries {
		switch {
		case e.Request == "":
			return &ManifestError{Path: path, Entry: i, Err: errors.New(`no "request"`)}
		case !validName(e.Name):
			return &ManifestError{Path: path, Entry: i, Err: fmt.Errorf("name %s: want 1 to 128 of A-Z a-z 0-9 . _ -, not starting with . _ or -", strconv.Quote(e.Name))}
		case len(e.Subject) == 0:
			return &ManifestError{Path: path, Entry: i, Err: errors.New(`no "subject": give it in the entry or after -- on the command line`)}
		}
		if j, dup := seen[e.Name]; dup {
			return &ManifestError{Path: path, Entry: i, Err: fmt.Errorf("name %q is entry %d's too: give each entry its own \"name\"", e.Name, j)}
		}
		seen[e.Name] = i
	}
	return nil
}

// readAtMost reads r whole, refusing more than limit bytes.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}
