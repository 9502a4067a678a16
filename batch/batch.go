package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Format names the JSON summary.
const Format = "termverify-sandbox.batch/v1"

// Status is how one entry of a batch ended.
type Status string

// An entry's status. Only StatusPassed is success.
const (
	StatusPassed      Status = "passed"      // run.finished, the subject exited 0
	StatusFailed      Status = "failed"      // run.finished otherwise, or run.failed
	StatusUnsupported Status = "unsupported" // run.unsupported: the policy or the subject refused
	StatusError       Status = "error"       // no transcript: a usage or host error (supervisor.Run's error)
	StatusSkipped     Status = "skipped"     // not started: the batch was interrupted first
)

// Options are a batch: the entries to run (one shard's, from Select) and
// how to run them.
type Options struct {
	Manifest string // for the reports: the manifest or directory given
	Shard    Shard  // for the reports: which shard Entries are
	Entries  []Entry
	// Base is every run's policy: isolation, require, limits, state
	// directory, deadlines, stderr limit. Run sets, per entry, the run id,
	// config, subject, inputs, argv, roots and output paths.
	Base supervisor.Request
	Jobs int // runs at a time; < 1 means 1
	// OutDir receives NAME.jsonl per entry, and NAME.evidence.json and
	// NAME.stderr when Evidence and Stderr are set. Run creates it
	// (internal/safeout: no symbolic link followed at any component, each
	// missing one made relative to the one before) and refuses it, like
	// JUnit and Summary, when it lies in a root an entry maps
	// (*OutputInRootError).
	OutDir string
	// JUnit and Summary, when set, are the files Run writes the JUnit
	// report and the JSON summary to at the end, even when interrupted.
	// Their directories must exist; they are opened before any run.
	JUnit, Summary string
	// HTML, when set, is the file Run writes the batch's HTML page to at
	// the end (package report: the summary, then each run's section),
	// opened and checked like JUnit and Summary.
	HTML            string
	Evidence        bool
	Stderr          bool
	Progress        io.Writer // a terminal: one updating status line; nil for none
	ProgressColumns int       // the terminal's width; the line is cut to fit
	// Logf receives the runs' notes for the operator, each prefixed with
	// the entry's name. Nil discards them.
	Logf func(format string, args ...any)

	// RunFunc replaces supervisor.Run (tests). Nil is supervisor.Run.
	RunFunc func(context.Context, supervisor.Request) (supervisor.Result, error)
	// Now replaces time.Now (tests). Nil is time.Now.
	Now func() time.Time

	// beforeReports, when set (tests only), runs after the last run and
	// before the reports are written: where a local user who can rename in
	// a report's parent could swap its directory.
	beforeReports func()
}

// Summary is the batch's JSON summary (Format) and the source of its
// JUnit report.
type Summary struct {
	Format    string    `json:"format"`
	Manifest  string    `json:"manifest"`
	Shard     string    `json:"shard"` // "I/N"
	Jobs      int       `json:"jobs"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	WallMS    int64     `json:"wall_ms"`
	// Interrupted names the signal that stopped the batch ("INT",
	// "TERM", "HUP"), or "cancelled"; "" when it ran to its end.
	Interrupted string   `json:"interrupted,omitempty"`
	Totals      Totals   `json:"totals"`
	ExitStatus  int      `json:"exit_status"`
	Entries     []Result `json:"entries"`
}

// Totals count the entries by status.
type Totals struct {
	Entries     int `json:"entries"`
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Unsupported int `json:"unsupported"`
	Errors      int `json:"errors"`
	Skipped     int `json:"skipped"`
}

// Result is one entry's outcome.
type Result struct {
	Name   string `json:"name"`
	Index  int    `json:"index"`
	Status Status `json:"status"`
	// Outcome is the transcript's terminal record: run.finished,
	// run.failed or run.unsupported; "" for error and skipped.
	Outcome string `json:"outcome,omitempty"`
	Exit    *Exit  `json:"exit,omitempty"` // run.finished
	// Code is run.failed's error code or run.unsupported's refusal code.
	Code string `json:"code,omitempty"`
	// Message says why the entry did not pass, in the run's (or the
	// subject's) words; "" when it passed.
	Message    string    `json:"message,omitempty"`
	Transcript string    `json:"transcript,omitempty"`
	Evidence   string    `json:"evidence,omitempty"`
	Stderr     string    `json:"stderr,omitempty"`
	Receipts   []Receipt `json:"receipts,omitempty"`
	// StartedAt and EndedAt bound the run (absent when skipped): two
	// entries whose intervals overlap ran at the same time.
	StartedAt  *time.Time `json:"started_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	DurationMS int64      `json:"duration_ms"`
}

// Exit is the subject's OS-observed exit: a code, or a signal name
// without SIG.
type Exit struct {
	Kind   string `json:"kind"`           // "code" or "signal"
	Code   *int64 `json:"code,omitempty"` // set when Kind is "code"
	Signal string `json:"signal,omitempty"`
}

// Receipt is one constraint's receipt, as the transcript records it.
type Receipt struct {
	Constraint string `json:"constraint"`
	Status     string `json:"status"`
	Tier       string `json:"tier,omitempty"`
}

// Passed reports whether every entry passed.
func (s *Summary) Passed() bool { return s.ExitStatus == 0 }

// prepared is an entry with its request read.
type prepared struct {
	entry Entry
	req   supervisor.Request
}

// Run runs o.Entries, at most o.Jobs at a time, writes the reports, and
// returns the summary. It returns an error, with nothing started, when an
// entry's request or inputs cannot be read (*ManifestError), an output
// lies in a mapped root (*OutputInRootError), or an output directory
// cannot be opened or made; it returns the summary and an error when a
// report cannot be written. Every outcome of a run, a run's own usage or host error
// included (StatusError), is in the summary. When ctx is cancelled
// (supervisor.InterruptContext), the runs in progress end as
// supervisor.Run ends them and the rest are skipped.
func Run(ctx context.Context, o Options) (*Summary, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	runFn := o.RunFunc
	if runFn == nil {
		runFn = supervisor.Run
	}
	jobs := max(o.Jobs, 1)
	if o.Base.NamespaceTrial == nil {
		// One trial for the whole batch: it tests lasting properties of
		// the host (supervisor.NewTrialMemo says why sharing is safe).
		o.Base.NamespaceTrial = supervisor.NewTrialMemo(nil)
	}
	preps, err := prepare(o)
	if err != nil {
		return nil, err
	}
	out, reports, err := openOutputs(o, preps)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	for _, d := range reports {
		defer d.dir.Close()
	}
	for i := range preps {
		preps[i].req.OutputDir = out
	}
	sum := &Summary{Format: Format, Manifest: o.Manifest, Shard: o.Shard.String(), Jobs: jobs,
		StartedAt: now(), Entries: make([]Result, len(preps))}
	for i, p := range preps {
		sum.Entries[i] = Result{Name: p.entry.Name, Index: p.entry.Index, Status: StatusSkipped,
			Message: "not started"}
	}
	prog := newProgress(o.Progress, o.ProgressColumns, len(preps))
	logf := func(format string, args ...any) {
		if o.Logf != nil {
			prog.around(func() { o.Logf(format, args...) })
		}
	}

	next := make(chan int)
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for i := range next {
				// The send may win a race with the cancellation: a run
				// not yet begun stays skipped.
				if ctx.Err() != nil {
					continue
				}
				p := preps[i]
				req := p.req
				req.Logf = func(format string, args ...any) { logf(p.entry.Name+": "+format, args...) }
				prog.start(p.entry.Name)
				start := now()
				res, err := runFn(ctx, req)
				end := now()
				r := result(out, p, res, err)
				r.StartedAt, r.EndedAt, r.DurationMS = &start, &end, end.Sub(start).Milliseconds()
				sum.Entries[i] = r // each index is written by one goroutine, read after Wait
				prog.finish(r.Status)
			}
		})
	}
feed:
	for i := range preps {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	prog.close()

	sum.EndedAt = now()
	sum.WallMS = sum.EndedAt.Sub(sum.StartedAt).Milliseconds()
	if ctx.Err() != nil {
		sum.Interrupted = "cancelled"
		if in, ok := errors.AsType[*supervisor.Interrupted](context.Cause(ctx)); ok {
			sum.Interrupted = in.Signal
		}
		for i := range sum.Entries {
			if sum.Entries[i].Status == StatusSkipped {
				sum.Entries[i].Message = "not started: the batch was interrupted (" + sum.Interrupted + ")"
			}
		}
	}
	sum.total()
	if o.beforeReports != nil {
		o.beforeReports()
	}
	if err := writeReports(reports, sum, out); err != nil {
		return sum, err
	}
	return sum, nil
}

// prepare reads every entry's request and inputs before anything starts:
// a batch with a broken entry is refused whole.
func prepare(o Options) ([]prepared, error) {
	out := make([]prepared, 0, len(o.Entries))
	for _, e := range o.Entries {
		bad := func(err error) error { return &ManifestError{Path: o.Manifest, Entry: e.Index, Err: err} }
		rf, err := supervisor.ReadRunFile(e.Request)
		if err != nil {
			return nil, bad(err)
		}
		req := o.Base
		req.RunID, req.Config, req.Subject = rf.RunID, rf.Config, rf.Subject
		if e.Inputs != "" {
			if req.Inputs, err = supervisor.ReadInputsFile(e.Inputs, req.Mode()); err != nil {
				return nil, bad(err)
			}
		}
		req.Roots = map[string]string{}
		for _, r := range e.Roots {
			id, dir, ok := strings.Cut(r, "=")
			if !ok || id == "" || dir == "" {
				return nil, bad(fmt.Errorf("root %q: want ID=DIR", r))
			}
			if _, dup := req.Roots[id]; dup {
				return nil, bad(fmt.Errorf("root %s given twice", id))
			}
			req.Roots[id] = dir
		}
		req.Args = e.Subject
		req.Transcript = nil
		req.TranscriptPath = filepath.Join(o.OutDir, e.Name+".jsonl")
		req.EvidencePath, req.StderrPath = "", ""
		if o.Evidence {
			req.EvidencePath = filepath.Join(o.OutDir, e.Name+".evidence.json")
		}
		if o.Stderr {
			req.StderrPath = filepath.Join(o.OutDir, e.Name+".stderr")
		}
		out = append(out, prepared{entry: e, req: req})
	}
	return out, nil
}

// result is an entry's Result from supervisor.Run's return.
func result(out *safeout.Dir, p prepared, res supervisor.Result, err error) Result {
	r := Result{Name: p.entry.Name, Index: p.entry.Index}
	if err != nil {
		r.Status, r.Message = StatusError, err.Error()
		return r
	}
	r.Outcome, r.Transcript = res.Outcome, p.req.TranscriptPath
	r.Evidence, r.Stderr = p.req.EvidencePath, p.req.StderrPath
	switch res.Outcome {
	case transcript.KindRunFinished:
		r.Status = StatusFailed
		if e := res.Exit; e != nil {
			if e.Kind == transcript.ExitSignal {
				r.Exit = &Exit{Kind: "signal", Signal: e.Signal}
				r.Message = "the subject was killed by SIG" + e.Signal
			} else {
				code := e.Code
				r.Exit = &Exit{Kind: "code", Code: &code}
				r.Message = fmt.Sprintf("the subject exited with status %d", e.Code)
			}
		}
		if res.Succeeded() {
			r.Status, r.Message = StatusPassed, ""
		}
	case transcript.KindRunFailed:
		r.Status = StatusFailed
		if res.Error != nil {
			r.Code, r.Message = res.Error.Code, res.Error.Message
		}
	case transcript.KindRunUnsupported:
		r.Status = StatusUnsupported
		if f := res.Refusal; f != nil {
			r.Code, r.Message = f.Code, fmt.Sprintf("%s: %s", f.Constraint, f.Message)
		}
	default:
		r.Status, r.Message = StatusError, "no outcome"
	}
	r.Receipts = readReceipts(out, p.entry.Name)
	return r
}

// readReceipts reads the receipts back from the transcript just written,
// relative to the output directory's descriptor; nil when it cannot be
// read (the transcript is the record, this a view).
func readReceipts(out *safeout.Dir, name string) []Receipt {
	f, err := readTranscript(out, name)
	if err != nil {
		return nil
	}
	defer f.Close()
	t, err := transcript.Read(f)
	if err != nil {
		return nil
	}
	rep, err := t.Report()
	if err != nil {
		return nil
	}
	rs := make([]Receipt, 0, len(rep.Receipts))
	for _, row := range rep.Receipts {
		rs = append(rs, Receipt{Constraint: string(row.Constraint), Status: string(row.Status), Tier: string(row.Tier)})
	}
	return rs
}

// total fills Totals and ExitStatus: 0 when every entry passed; 2 when
// any entry ended in a usage or host error; 1 otherwise.
func (s *Summary) total() {
	t := Totals{Entries: len(s.Entries)}
	for _, r := range s.Entries {
		switch r.Status {
		case StatusPassed:
			t.Passed++
		case StatusFailed:
			t.Failed++
		case StatusUnsupported:
			t.Unsupported++
		case StatusError:
			t.Errors++
		case StatusSkipped:
			t.Skipped++
		}
	}
	s.Totals = t
	switch {
	case t.Errors > 0:
		s.ExitStatus = 2
	case t.Passed == t.Entries:
		s.ExitStatus = 0
	default:
		s.ExitStatus = 1
	}
}
