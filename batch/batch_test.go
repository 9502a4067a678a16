package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

// exampleEntries are n entries of the bundled example request.
func exampleEntries(n int, subject ...string) []Entry {
	if len(subject) == 0 {
		subject = []string{"./echo-subject"}
	}
	out := make([]Entry, n)
	for i := range out {
		out[i] = Entry{Name: fmt.Sprintf("e%03d", i), Index: i, Request: "../examples/request.json",
			Inputs: "../examples/inputs.jsonl", Roots: []string{"app=" + env.root}, Subject: subject}
	}
	return out
}

func finished(code int64) supervisor.Result {
	return supervisor.Result{Outcome: transcript.KindRunFinished, Exit: &transcript.Exit{Kind: transcript.ExitCode, Code: code}}
}

// overlaps reports whether the intervals of two entries intersect.
func overlaps(a, b Result) bool {
	return a.StartedAt != nil && b.StartedAt != nil && a.StartedAt.Before(*b.EndedAt) && b.StartedAt.Before(*a.EndedAt)
}

// TestJobs: -j N runs at most N at a time, and with N = 2 two runs
// overlap, as the summary's timestamps show. The fake run waits (up to a
// bound) for a second one to be running, so the overlap does not depend on
// the scheduler's timing.
func TestJobs(t *testing.T) {
	for _, jobs := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(jobs), func(t *testing.T) {
			var running, peak atomic.Int32
			run := func(ctx context.Context, req supervisor.Request) (supervisor.Result, error) {
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				for deadline := time.Now().Add(2 * time.Second); jobs > 1 && running.Load() < 2 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(10 * time.Millisecond)
				running.Add(-1)
				return finished(0), nil
			}
			sum, err := Run(t.Context(), Options{Entries: exampleEntries(6), Jobs: jobs, OutDir: t.TempDir(), RunFunc: run})
			if err != nil {
				t.Fatal(err)
			}
			if int(peak.Load()) > jobs {
				t.Errorf("%d at a time with -j %d", peak.Load(), jobs)
			}
			if sum.ExitStatus != 0 || sum.Totals.Passed != 6 || sum.Jobs != jobs {
				t.Errorf("summary %+v", sum)
			}
			over := 0
			for i := range sum.Entries {
				for j := i + 1; j < len(sum.Entries); j++ {
					if overlaps(sum.Entries[i], sum.Entries[j]) {
						over++
					}
				}
			}
			if jobs == 1 && over != 0 || jobs > 1 && over == 0 {
				t.Errorf("-j %d: %d overlapping pairs", jobs, over)
			}
		})
	}
}

// TestInterrupted: after the cancellation the run in progress ends (here
// as the fake says), nothing else starts, and the rest are skipped with
// the signal named.
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	var calls atomic.Int32
	run := func(ctx context.Context, req supervisor.Request) (supervisor.Result, error) {
		if calls.Add(1) == 2 {
			cancel(&supervisor.Interrupted{Signal: "INT"})
			<-ctx.Done()
			return supervisor.Result{Outcome: transcript.KindRunFailed, Error: &transcript.Failure{Code: "adapter-runtime-failed", Message: "interrupted by SIGINT"}}, nil
		}
		return finished(0), nil
	}
	sum, err := Run(ctx, Options{Entries: exampleEntries(5), OutDir: t.TempDir(), RunFunc: run})
	if err != nil {
		t.Fatal(err)
	}
	want := []Status{StatusPassed, StatusFailed, StatusSkipped, StatusSkipped, StatusSkipped}
	for i, w := range want {
		if got := sum.Entries[i].Status; got != w {
			t.Errorf("entry %d: %s, want %s", i, got, w)
		}
	}
	if calls.Load() != 2 || sum.Interrupted != "INT" || sum.ExitStatus != 1 || sum.Totals.Skipped != 3 ||
		!strings.Contains(sum.Entries[4].Message, "interrupted (INT)") || sum.Entries[4].StartedAt != nil {
		t.Errorf("calls %d, summary %+v", calls.Load(), sum)
	}
}

// TestExitStatus: one status for the batch.
func TestExitStatus(t *testing.T) {
	hostErr := errors.New("transcript: disk full")
	cases := []struct {
		name string
		res  []supervisor.Result
		errs []error
		want int
	}{
		{"all passed", []supervisor.Result{finished(0), finished(0)}, nil, 0},
		{"one exit 3", []supervisor.Result{finished(0), finished(3)}, nil, 1},
		{"one unsupported", []supervisor.Result{finished(0), {Outcome: transcript.KindRunUnsupported}}, nil, 1},
		{"one host error", []supervisor.Result{finished(3), {}}, []error{nil, hostErr}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var i atomic.Int32
			run := func(context.Context, supervisor.Request) (supervisor.Result, error) {
				n := i.Add(1) - 1
				var err error
				if tc.errs != nil {
					err = tc.errs[n]
				}
				return tc.res[n], err
			}
			sum, err := Run(t.Context(), Options{Entries: exampleEntries(len(tc.res)), OutDir: t.TempDir(), RunFunc: run})
			if err != nil {
				t.Fatal(err)
			}
			if sum.ExitStatus != tc.want {
				t.Errorf("exit %d, want %d: %+v", sum.ExitStatus, tc.want, sum.Entries)
			}
		})
	}
}

// TestBadEntryStartsNothing: a request that cannot be read refuses the
// batch before any run.
func TestBadEntryStartsNothing(t *testing.T) {
	entries := exampleEntries(3)
	entries[2].Inputs = "../examples/request.json"
	var calls atomic.Int32
	run := func(context.Context, supervisor.Request) (supervisor.Result, error) {
		calls.Add(1)
		return finished(0), nil
	}
	_, err := Run(t.Context(), Options{Entries: entries, OutDir: t.TempDir(), RunFunc: run})
	if me, ok := errors.AsType[*ManifestError](err); !ok || me.Entry != 2 || calls.Load() != 0 {
		t.Errorf("err %v, %d runs", err, calls.Load())
	}
}

// TestProgress: a single line rewritten in place, the names escaped.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	entries := exampleEntries(3)
	entries[1].Name = "b"
	run := func(context.Context, supervisor.Request) (supervisor.Result, error) { return finished(0), nil }
	_, err := Run(t.Context(), Options{Entries: entries, OutDir: t.TempDir(), RunFunc: run,
		Progress: &lockedWriter{w: &buf, mu: &mu}, ProgressColumns: 40})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "\n") || !strings.HasSuffix(out, "\r\x1b[K") || !strings.Contains(out, "batch 3/3 done") {
		t.Errorf("progress %q", out)
	}
	for _, line := range strings.Split(out, "\r\x1b[K") {
		if len(line) > 39 {
			t.Errorf("line %q is wider than the terminal", line)
		}
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRealBatch runs the example for real, two at a time, with a subject
// whose refusal carries characters XML 1.0 forbids: the transcripts are in
// place, the JUnit report validates and says what the transcripts say,
// and nothing is left behind.
func TestRealBatch(t *testing.T) {
	needSandbox(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	// A shell subject (the sandbox has the host's /bin/sh) that refuses the
	// session with NUL, ESC, BEL, U+FFFE and a C1 control in its message.
	script := `#!/bin/sh
read -r hello
printf '%s\n' '{"protocol":"termverify.control/v1","kind":"session.failed","payload":{"error":{"code":"nasty","message":"nul \u0000 esc \u001b[31m bell \u0007 fffe \ufffe c1 \u009b <&> end"}}}'
exit 1
`
	if err := os.WriteFile(filepath.Join(env.root, "nasty.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	entries := exampleEntries(4)
	entries[1].Subject = []string{"./echo-subject", "exit-mid-epoch", "3"}
	entries[2].Subject = []string{"./nasty.sh"}
	out := t.TempDir()
	page := filepath.Join(t.TempDir(), "batch.html")
	sum, err := Run(t.Context(), Options{Manifest: "test", Entries: entries, Jobs: 2, OutDir: out, Evidence: true, HTML: page,
		Base: supervisor.Request{StateDir: state, Deadlines: supervisor.Deadlines{Epoch: 5 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Status{StatusPassed, StatusFailed, StatusFailed, StatusPassed}
	for i, w := range want {
		r := sum.Entries[i]
		if r.Status != w {
			t.Errorf("%s: %s (%s), want %s", r.Name, r.Status, r.Message, w)
		}
		if _, err := os.Stat(filepath.Join(out, r.Name+".jsonl")); err != nil {
			t.Errorf("%s: transcript: %v", r.Name, err)
		}
		if _, err := os.Stat(filepath.Join(out, r.Name+".evidence.json")); err != nil {
			t.Errorf("%s: evidence: %v", r.Name, err)
		}
		if len(r.Receipts) != 7 && i != 2 {
			t.Errorf("%s: %d receipts", r.Name, len(r.Receipts))
		}
	}
	if n := sum.Entries[2]; !strings.Contains(n.Message, "\x1b[31m") || n.Code != "adapter-start-failed" {
		t.Errorf("nasty: code %q message %q", n.Code, n.Message)
	}
	var buf bytes.Buffer
	if _, err := JUnit(sum).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	checkAgainstXSD(t, readXSD(t), buf.Bytes())
	// The HTML page: the totals, a section per entry that left a
	// transcript, and the subject's message as text.
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<b>2</b> passed", "<b>2</b> failed", `<a href="#run-4">e003</a>`, `<section class="run" id="run-4">`, `esc \x1b[31m`, "&lt;&amp;&gt; end"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("the batch page lacks %s", want)
		}
	}
	if bytes.Contains(html, []byte("\x1b")) || bytes.Contains(html, []byte("<&> end")) {
		t.Error("the batch page holds the subject's raw text")
	}
	if bytes.Contains(buf.Bytes(), []byte("\x1b")) || !bytes.Contains(buf.Bytes(), []byte(`esc \x1b[31m`)) {
		t.Errorf("report:\n%s", buf.Bytes())
	}
}

// TestReportDirSwapped: a local user who can rename in a report's parent
// replaces the report's directory by a symlink to a root-only directory
// after the batch opened it (the hook) and before it writes the reports.
// Both reports land in the directory opened at the start; nothing is
// written through the symlink. (The old code resolved the directory by
// name at the end and wrote both reports into the target.)
func TestReportDirSwapped(t *testing.T) {
	base := t.TempDir()
	reports, orig, target := filepath.Join(base, "reports"), filepath.Join(base, "orig"), filepath.Join(base, "root-only")
	for _, d := range []string{reports, target} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	run := func(context.Context, supervisor.Request) (supervisor.Result, error) { return finished(0), nil }
	swapped := false
	o := Options{Entries: exampleEntries(2), OutDir: filepath.Join(base, "out"), RunFunc: run,
		JUnit: filepath.Join(reports, "j.xml"), Summary: filepath.Join(reports, "s.json"), HTML: filepath.Join(reports, "b.html"),
		beforeReports: func() {
			if err := os.Rename(reports, orig); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, reports); err != nil {
				t.Fatal(err)
			}
			swapped = true
		}}
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if !swapped {
		t.Fatal("the hook did not run")
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("reports written through the symlink: %d entries in the target", len(ents))
	}
	for _, f := range []string{"j.xml", "s.json", "b.html"} {
		st, err := os.Lstat(filepath.Join(orig, f))
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
			t.Errorf("%s in the opened directory: %v, %v", f, st, err)
		}
	}
}

// TestOutputInRoot: an output inside (or equal to) a root an entry maps
// is refused before anything runs, whatever the spelling, and an output
// beside the roots is not.
func TestOutputInRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(base, "rootlink")); err != nil {
		t.Fatal(err)
	}
	entries := exampleEntries(2)
	entries[1].Roots = []string{"app=" + env.root, "data=" + filepath.Join(base, "rootlink")} // the root through a symlink
	cases := []struct {
		name    string
		o       Options
		refused string // the flag named; "" runs
	}{
		{"out is the root", Options{OutDir: root}, "--out"},
		{"out below the root, not yet made", Options{OutDir: filepath.Join(root, "new", "out")}, "--out"},
		{"out spelled with ..", Options{OutDir: root + "/sub/../sub"}, "--out"},
		{"junit in the root", Options{OutDir: filepath.Join(base, "out"), JUnit: filepath.Join(root, "sub", "j.xml")}, "--junit"},
		{"summary in the root", Options{OutDir: filepath.Join(base, "out"), Summary: filepath.Join(root, "s.json")}, "--summary"},
		{"html in the root", Options{OutDir: filepath.Join(base, "out"), HTML: filepath.Join(root, "b.html")}, "--html"},
		{"beside the root", Options{OutDir: filepath.Join(base, "out"), Summary: filepath.Join(base, "s.json")}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			tc.o.Entries = entries
			tc.o.RunFunc = func(context.Context, supervisor.Request) (supervisor.Result, error) {
				ran = true
				return finished(0), nil
			}
			_, err := Run(t.Context(), tc.o)
			if tc.refused == "" {
				if err != nil || !ran {
					t.Fatalf("Run: %v (ran %v)", err, ran)
				}
				return
			}
			e, ok := errors.AsType[*OutputInRootError](err)
			if !ok || e.Output != tc.refused || e.RootID != "data" || ran {
				t.Fatalf("Run: %v (ran %v), want %s refused inside root data", err, ran, tc.refused)
			}
			if _, err := os.Stat(filepath.Join(root, "new")); err == nil {
				t.Error("a refused batch created directories")
			}
		})
	}
}
