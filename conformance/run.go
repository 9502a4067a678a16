package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/safeout"
)

// Options say what a corpus runs against.
type Options struct {
	// What the families run against; a case whose runner is nil fails
	// ("no validator"), so leave its family out with Families instead.
	Validator Validator // codec and daemon cases
	Adapter   Adapter   // adapter and PTY scenarios
	Daemon    Daemon    // session cases
	Subjects  string    // the directory mapped as root "app" (holding echo-subject) for scenarios
	// Work is a directory of the caller's where compressed case files
	// are decompressed for a command validator and scenario
	// transcripts are written; Run removes what it put there.
	Work *safeout.Dir
	// Families, when not empty, runs only these families.
	Families []string
	// CaseTimeout bounds each case (0: DefaultCaseTimeout).
	CaseTimeout time.Duration
}

// Summary is the golden parity summary: the counts and, by id, every
// case whose result was not its golden one. Its JSON (Encode) is
// canonical and byte-stable: members in code-point order, no
// insignificant whitespace, failures in case order.
type Summary struct {
	Failed         int                `json:"failed"`
	Failures       []Failure          `json:"failures"`
	Families       map[string]*Counts `json:"families"`
	FixtureVersion int                `json:"fixtureVersion"`
	Passed         int                `json:"passed"`
	Total          int                `json:"total"`
}

// Counts are one family's counts.
type Counts struct {
	Failed int `json:"failed"`
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// Failure is one case that did not give its golden result.
type Failure struct {
	Got  string `json:"got"`
	ID   string `json:"id"`
	Want string `json:"want"`
}

// OK reports whether every case gave its golden result.
func (s *Summary) OK() bool { return s.Failed == 0 && s.Total > 0 }

// Encode is the summary's canonical JSON (RFC 8785, internal/canon),
// LF-terminated. Text that is not UTF-8 (a command's output) has each
// bad byte replaced by U+FFFD first.
func (s *Summary) Encode() []byte {
	str := func(t string) canon.Value { return canon.StringValue(strings.ToValidUTF8(t, "\uFFFD")) }
	counts := func(c *Counts) canon.Value {
		return canon.ObjectValue(canon.M("failed", canon.IntValue(int64(c.Failed))),
			canon.M("passed", canon.IntValue(int64(c.Passed))), canon.M("total", canon.IntValue(int64(c.Total))))
	}
	failures := []canon.Value{}
	for _, f := range s.Failures {
		failures = append(failures, canon.ObjectValue(canon.M("got", str(f.Got)), canon.M("id", str(f.ID)), canon.M("want", str(f.Want))))
	}
	var fams []canon.Member
	for name, c := range s.Families {
		fams = append(fams, canon.M(name, counts(c)))
	}
	v := canon.ObjectValue(
		canon.M("failed", canon.IntValue(int64(s.Failed))),
		canon.M("failures", canon.ArrayValue(failures...)),
		canon.M("families", canon.ObjectValue(fams...)),
		canon.M("fixtureVersion", canon.IntValue(int64(s.FixtureVersion))),
		canon.M("passed", canon.IntValue(int64(s.Passed))),
		canon.M("total", canon.IntValue(int64(s.Total))),
	)
	out, err := canon.Marshal(&v)
	if err != nil {
		// Only strings (valid UTF-8) and small integers: a failure here
		// is a bug, and the summary says so rather than print nothing.
		return []byte(`{"error":"summary encoding failed"}` + "\n")
	}
	return append(out, '\n')
}

// Run runs every case of c (of the selected families) against opts and
// returns the summary. It stops early only when ctx ends; a case that
// cannot be judged is a failure that says why.
func Run(ctx context.Context, c *Corpus, opts Options) (*Summary, error) {
	s := &Summary{FixtureVersion: c.Manifest.FixtureVersion, Failures: []Failure{}, Families: map[string]*Counts{}}
	for _, cs := range c.Manifest.Cases {
		if len(opts.Families) > 0 && !slices.Contains(opts.Families, cs.Family) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		want, got := runCase(ctx, c, cs, opts)
		counts := s.Families[cs.Family]
		if counts == nil {
			counts = &Counts{}
			s.Families[cs.Family] = counts
		}
		counts.Total++
		s.Total++
		if got == want {
			counts.Passed++
			s.Passed++
			continue
		}
		counts.Failed++
		s.Failed++
		s.Failures = append(s.Failures, Failure{ID: cs.ID, Want: clip(want), Got: clip(got)})
	}
	return s, nil
}

// DefaultCaseTimeout bounds one case, whatever its commands do: a
// validator, adapter or daemon that hangs fails its case instead of the
// whole run.
const DefaultCaseTimeout = 2 * time.Minute

// runCase returns the golden result and the result, as text: equal
// exactly when the case passes.
func runCase(ctx context.Context, c *Corpus, cs Case, opts Options) (want, got string) {
	limit := opts.CaseTimeout
	if limit <= 0 {
		limit = DefaultCaseTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	switch cs.Family {
	case FamilyCodec, FamilyDaemon:
		want = expected(cs.Expect).String()
		if opts.Validator == nil {
			return want, "no validator"
		}
		v, err := validate(ctx, c, cs, opts)
		if err != nil {
			return want, "error: " + err.Error()
		}
		return want, v.String()
	case FamilySession:
		want = "the golden replies"
		if opts.Daemon == nil {
			return want, "no daemon"
		}
		diff, err := session(ctx, c, cs, opts)
		if err != nil {
			return want, "error: " + err.Error()
		}
		if diff != "" {
			return want, diff
		}
		return want, want
	default:
		want = "the golden transcript " + cs.Expect.Transcript
		if opts.Adapter == nil {
			return want, "no adapter"
		}
		diff, err := scenario(ctx, c, cs, opts)
		if err != nil {
			return want, "error: " + err.Error()
		}
		if diff != "" {
			return want, diff
		}
		return want, want
	}
}

func validate(ctx context.Context, c *Corpus, cs Case, opts Options) (Verdict, error) {
	data, err := c.ReadCase(cs)
	if err != nil {
		return Verdict{}, err
	}
	path := c.Path(cs.File)
	if filepath.Ext(cs.File) == ".gz" {
		if _, ours := opts.Validator.(Ours); !ours {
			name := "case-" + filepath.Base(cs.File[:len(cs.File)-3])
			if path, err = writeWork(opts.Work, name, data); err != nil {
				return Verdict{}, err
			}
			defer removeWork(opts.Work, name)
		}
	}
	return opts.Validator.Validate(ctx, cs.Format, data, path)
}

func scenario(ctx context.Context, c *Corpus, cs Case, opts Options) (string, error) {
	if opts.Subjects == "" {
		return "", fmt.Errorf("no subjects directory (the directory holding echo-subject)")
	}
	golden, err := os.ReadFile(c.Path(cs.Expect.Transcript))
	if err != nil {
		return "", fmt.Errorf("golden transcript: %w (record it: make conformance-golden)", err)
	}
	got, err := Transcript(ctx, c, cs, opts.Adapter, opts.Subjects, opts.Work)
	if err != nil {
		return "", err
	}
	return differ(golden, got)
}

// writeWork writes data as name in the work directory, fd-relative.
func writeWork(work *safeout.Dir, name string, data []byte) (string, error) {
	if work == nil {
		return "", fmt.Errorf("no work directory to decompress %s into", name)
	}
	err := work.WriteFile(name, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return filepath.Join(work.Path(), name), err
}

// removeWork removes name from the work directory, fd-relative.
func removeWork(work *safeout.Dir, name string) {
	_ = unix.Unlinkat(work.Fd(), name, 0)
}

// Transcript runs one scenario of c with a and returns the transcript
// it wrote: what regenerating the golden transcripts records.
func Transcript(ctx context.Context, c *Corpus, cs Case, a Adapter, subjects string, work *safeout.Dir) ([]byte, error) {
	if work == nil {
		return nil, fmt.Errorf("no work directory for the transcript")
	}
	req, err := filepath.Abs(c.Path(cs.Request))
	if err != nil {
		return nil, err
	}
	inputs, err := filepath.Abs(c.Path(cs.Inputs))
	if err != nil {
		return nil, err
	}
	name := "transcript-" + strconv.Itoa(os.Getpid()) + ".jsonl"
	out := filepath.Join(work.Path(), name)
	defer removeWork(work, name)
	sc := Scenario{
		Request: req, Inputs: inputs, Subject: cs.Subject, PTY: cs.Family == FamilyPTY, Root: subjects,
		Handshake: time.Duration(cs.HandshakeMS) * time.Millisecond, Epoch: time.Duration(cs.EpochMS) * time.Millisecond,
	}
	if err := a.Run(ctx, sc, out); err != nil {
		return nil, err
	}
	f, err := work.OpenRead(name)
	if err != nil {
		return nil, fmt.Errorf("the adapter wrote no transcript: %w", err)
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxCaseBytes))
}

// maxResult bounds a result's text in a summary, so that a command that
// prints megabytes cannot make one unreadable (or break its budgets).
const maxResult = 2000

// clip cuts s to maxResult bytes on a character boundary, saying how
// much it cut.
func clip(s string) string {
	if len(s) <= maxResult {
		return s
	}
	cut := maxResult
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "... (+" + strconv.Itoa(len(s)-cut) + " bytes)"
}

// DecodeSummary reads a summary's JSON (a golden summary.json).
func DecodeSummary(data []byte) (*Summary, error) {
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	if s.Failures == nil {
		s.Failures = []Failure{}
	}
	if s.Families == nil {
		s.Families = map[string]*Counts{}
	}
	return &s, nil
}

// Only is the summary of the families given alone: their counts, and
// their failures (a failure's family is its id's first segment).
func (s *Summary) Only(families []string) *Summary {
	out := &Summary{FixtureVersion: s.FixtureVersion, Failures: []Failure{}, Families: map[string]*Counts{}}
	for _, f := range families {
		if c, ok := s.Families[f]; ok {
			cc := *c
			out.Families[f] = &cc
			out.Total += c.Total
			out.Passed += c.Passed
			out.Failed += c.Failed
		}
	}
	for _, f := range s.Failures {
		if fam, _, _ := strings.Cut(f.ID, "/"); slices.Contains(families, fam) {
			out.Failures = append(out.Failures, f)
		}
	}
	return out
}
