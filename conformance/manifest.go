package conformance

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FixtureVersion is the one manifest version this package knows. A
// manifest with another fixtureVersion (or none) is refused.
const FixtureVersion = 1

// ManifestName is the manifest's file name inside a corpus directory.
const ManifestName = "manifest.json"

// The families of cases.
const (
	FamilyCodec   = "codec"
	FamilyDaemon  = "daemon"
	FamilyAdapter = "adapter"
	FamilyPTY     = "pty"
	FamilySession = "session" // daemon protocol cases against a live daemon
)

// Families lists every family, in the order a summary reports them.
var Families = []string{FamilyAdapter, FamilyCodec, FamilyDaemon, FamilyPTY, FamilySession}

// The formats of codec and daemon case files: what a validator is asked
// to judge.
const (
	FormatControl    = "control"    // one termverify.control/v1 message line
	FormatTranscript = "transcript" // one termverify.transcript/v1 file
	FormatInputs     = "inputs"     // one input script (run --inputs)
	FormatDaemon     = "daemon"     // one connection's bytes to an interminai daemon
)

// maxCaseBytes bounds a case file after decompression: the largest v1
// object (a 32 MiB transcript) and a little over.
const maxCaseBytes = 40 << 20

// Manifest is a corpus's manifest.json.
type Manifest struct {
	FixtureVersion int    `json:"fixtureVersion"`
	Cases          []Case `json:"cases"`
}

// Case is one case of the corpus. Which members it has depends on its
// family (docs/CONFORMANCE.md).
type Case struct {
	ID     string `json:"id"`
	Family string `json:"family"`

	// Codec and daemon cases: the file judged (relative to the corpus; a
	// name ending in .gz is gzip-compressed and judged decompressed).
	Format string `json:"format,omitempty"`
	File   string `json:"file,omitempty"`

	// Adapter and PTY scenarios: the request, the input script and the
	// subject's argv (its first word is a program in the subjects
	// directory for the adapter family, a host path for PTY), the two
	// deadlines in milliseconds, and the golden transcript's file.
	Request     string   `json:"request,omitempty"`
	Inputs      string   `json:"inputs,omitempty"`
	Subject     []string `json:"subject,omitempty"`
	HandshakeMS int64    `json:"handshake_ms,omitempty"`
	EpochMS     int64    `json:"epoch_ms,omitempty"`

	// Session cases: the program the daemon serves, and the steps with
	// their golden replies.
	Program []string `json:"program,omitempty"`
	Steps   []Step   `json:"steps,omitempty"`

	Expect Expect `json:"expect"`

	// Upstream is upstream termverify's verdict on the same input where
	// it is known; Difference says why ours differs (the doc and row),
	// present exactly when the verdicts differ on purpose.
	Upstream   *Upstream `json:"upstream,omitempty"`
	Difference string    `json:"difference,omitempty"`
	Note       string    `json:"note,omitempty"`
}

// Expect is a case's golden result.
type Expect struct {
	// Codec and daemon cases.
	Verdict string `json:"verdict,omitempty"` // "valid" or "invalid"
	Rule    string `json:"rule,omitempty"`    // the rule id, for invalid
	Line    int    `json:"line,omitempty"`    // the 1-based line at fault; 0 for a whole-file rule
	Kind    string `json:"kind,omitempty"`    // control: the message kind; daemon: the request type (valid only)
	Reply   string `json:"reply,omitempty"`   // daemon: the error reply line, LF excluded (invalid only)

	// Adapter and PTY scenarios: the golden transcript, and the
	// terminal record kind (a quick check beside the whole comparison).
	Transcript string `json:"transcript,omitempty"`
	Terminal   string `json:"terminal,omitempty"`
}

// Upstream is upstream's verdict on a case, where it is known: "valid",
// "invalid", or "crash" (an exception escapes its codec), or, for a
// scenario, what its adapter records.
type Upstream struct {
	Verdict string `json:"verdict,omitempty"`
	Record  string `json:"record,omitempty"`
}

// The verdicts.
const (
	Valid   = "valid"
	Invalid = "invalid"
)

// VersionError is a manifest whose fixtureVersion this package does not
// know.
type VersionError struct {
	Got  int
	Path string
}

func (e *VersionError) Error() string {
	if e.Got == 0 {
		return fmt.Sprintf("%s: no fixtureVersion: refusing the corpus (this build knows fixtureVersion %d)", e.Path, FixtureVersion)
	}
	return fmt.Sprintf("%s: fixtureVersion %d is unknown to this build (it knows %d): refusing the corpus; use a build that knows it, or the corpus of this build's version", e.Path, e.Got, FixtureVersion)
}

// Corpus is a loaded corpus: its directory and manifest.
type Corpus struct {
	Dir      string
	Manifest Manifest
}

// Load reads dir's manifest and checks it: the version first (fail
// closed), then every case's members for its family, unique ids, and
// that every file it names exists inside dir.
func Load(dir string) (*Corpus, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance corpus: %w (pass --corpus DIR, the directory holding %s)", err, ManifestName)
	}
	var head struct {
		FixtureVersion *int `json:"fixtureVersion"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if head.FixtureVersion == nil || *head.FixtureVersion != FixtureVersion {
		got := 0
		if head.FixtureVersion != nil {
			got = *head.FixtureVersion
		}
		return nil, &VersionError{Got: got, Path: path}
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &Corpus{Dir: dir, Manifest: m}
	seen := map[string]bool{}
	for i, cs := range m.Cases {
		if seen[cs.ID] {
			return nil, fmt.Errorf("%s: case %d: id %q used twice", path, i, cs.ID)
		}
		seen[cs.ID] = true
		if err := c.check(cs); err != nil {
			return nil, fmt.Errorf("%s: case %q: %w", path, cs.ID, err)
		}
	}
	return c, nil
}

// check is one case's shape.
func (c *Corpus) check(cs Case) error {
	if !strings.HasPrefix(cs.ID, cs.Family+"/") {
		return fmt.Errorf("id %q does not start with its family %q and a slash", cs.ID, cs.Family)
	}
	var files []string
	switch cs.Family {
	case FamilyCodec, FamilyDaemon:
		formats := []string{FormatControl, FormatTranscript, FormatInputs}
		if cs.Family == FamilyDaemon {
			formats = []string{FormatDaemon}
		}
		if !slices.Contains(formats, cs.Format) {
			return fmt.Errorf("format %q is not one of %s", cs.Format, strings.Join(formats, ", "))
		}
		switch cs.Expect.Verdict {
		case Valid:
			if cs.Expect.Rule != "" {
				return errors.New("a valid case names no rule")
			}
		case Invalid:
			if cs.Expect.Rule == "" {
				return errors.New("an invalid case names its rule")
			}
		default:
			return fmt.Errorf("verdict %q is neither valid nor invalid", cs.Expect.Verdict)
		}
		files = []string{cs.File}
	case FamilyAdapter, FamilyPTY:
		if len(cs.Subject) == 0 || cs.HandshakeMS <= 0 || cs.EpochMS <= 0 {
			return errors.New("a scenario needs subject, handshake_ms and epoch_ms")
		}
		if cs.Expect.Terminal == "" {
			return errors.New("a scenario names its terminal record kind")
		}
		if cs.Expect.Transcript == "" || !filepath.IsLocal(cs.Expect.Transcript) {
			return fmt.Errorf("golden transcript %q is not a path inside the corpus", cs.Expect.Transcript)
		}
		// The golden transcript itself may be missing while it is being
		// regenerated: Run reports that case as failed.
		files = []string{cs.Request, cs.Inputs}
	case FamilySession:
		if len(cs.Program) == 0 || len(cs.Steps) == 0 {
			return errors.New("a session needs program and steps")
		}
		for i, st := range cs.Steps {
			if st.Conn == "" || (st.Send == "") == (st.SendFile == "") {
				return fmt.Errorf("step %d: needs conn and exactly one of send, send_file", i)
			}
			if !st.NoReply && (st.Reply == "") == (st.Status == "") {
				return fmt.Errorf("step %d: needs exactly one of reply, status (or no_reply)", i)
			}
			if st.SendFile != "" {
				files = append(files, st.SendFile)
			}
		}
	default:
		return fmt.Errorf("family %q is not one of %s", cs.Family, strings.Join(Families, ", "))
	}
	if cs.Upstream != nil && cs.Family != FamilyAdapter && cs.Upstream.Verdict != cs.Expect.Verdict && cs.Difference == "" {
		return fmt.Errorf("verdict %s differs from upstream's %s without a difference saying why", cs.Expect.Verdict, cs.Upstream.Verdict)
	}
	for _, f := range files {
		if f == "" || !filepath.IsLocal(f) {
			return fmt.Errorf("file %q is not a path inside the corpus", f)
		}
		if _, err := os.Stat(filepath.Join(c.Dir, f)); err != nil {
			return err
		}
	}
	return nil
}

// Path is f inside the corpus.
func (c *Corpus) Path(f string) string { return filepath.Join(c.Dir, f) }

// ReadCase returns the bytes a codec or daemon case judges: its file,
// decompressed when it ends in .gz (bounded by maxCaseBytes).
func (c *Corpus) ReadCase(cs Case) ([]byte, error) {
	data, err := os.ReadFile(c.Path(cs.File))
	if err != nil || !strings.HasSuffix(cs.File, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cs.File, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxCaseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cs.File, err)
	}
	if len(out) > maxCaseBytes {
		return nil, fmt.Errorf("%s: more than %d bytes decompressed", cs.File, maxCaseBytes)
	}
	return out, nil
}
