package replay

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/sharedtest"
	"github.com/termverify/termverify-sandbox/internal/transcripttest"
	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

const examples = "../examples/transcripts/"

func corpus(t *testing.T, file string) string {
	return filepath.Join(sharedtest.Dir(t), "conformance", "upstream", "transcript", file)
}

func upstream(t *testing.T, file string) string {
	return filepath.Join(sharedtest.Dir(t), "reference", "termverify-upstream", "transcripts", "v1", file)
}

// TestRequest checks what a replay takes from its source.
func TestRequest(t *testing.T) {
	src := transcripttest.Load(t, examples+"finished.jsonl")
	req, err := Request(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := src.Records[0].Payload().Get("config")
	got := req.Config.Value()
	if !canon.Equal(want, &got) {
		b, _ := canon.Marshal(&got)
		t.Errorf("config %s, want the source's", b)
	}
	if req.RunID != src.RunID || !req.Replay || req.Mode() != supervisor.ModeControl || req.Subject.Adapter != (transcript.Selector{}) || req.Subject.Platform != nil ||
		req.Subject.Application.ID != "counter" {
		t.Errorf("request %+v", req)
	}
	in, _ := src.Inputs()
	if len(req.Inputs) != len(in) || len(in) != 4 {
		t.Errorf("%d inputs, want the source's %d", len(req.Inputs), len(in))
	}
	if _, stop := req.Inputs[len(req.Inputs)-1].(input.Stop); !stop {
		t.Error("the source's input.stop is not the last input")
	}
	if req, _ := Request(src, Options{RunID: "other"}); req.RunID != "other" {
		t.Errorf("RunID: %q", req.RunID)
	}
	if _, err := Request(src, Options{Mode: supervisor.ModePTY}); !isMode(err, supervisor.ModeControl) {
		t.Errorf("a control/v1 source replayed in PTY mode: %v", err)
	}

	for _, tc := range []struct{ file, kinds string }{{"0217-accept.jsonl", "input.mouse (first at seq 9)"}, {"0277-accept.jsonl", "input.clipboard_set (first at seq 9)"}} {
		src := transcripttest.Load(t, corpus(t, tc.file))
		if got := unsendable(src, supervisor.ModeControl.InputKinds()); got != tc.kinds {
			t.Errorf("unsendable(%s) = %q, want %q", tc.file, got, tc.kinds)
		}
		_, err := Request(src, Options{})
		if e, ok := errors.AsType[*InputsError](err); !ok || e.Inputs != tc.kinds {
			t.Errorf("%s: %v", tc.file, err)
		}
	}
}

func isMode(err error, recorded supervisor.Mode) bool {
	e, ok := errors.AsType[*ModeError](err)
	return ok && e.Recorded == recorded
}

// TestNotRun: a source that ended unsupported, or failed before any
// observation of a running subject, never ran.
func TestNotRun(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{examples + "finished.jsonl", ""},
		{examples + "failed.jsonl", ""},
		{examples + "unsupported.jsonl", "the source ended run.unsupported (timezone, constraint-unsupported): timezone Europe/Berlin"},
		{upstream(t, "valid/unsupported-network.jsonl"), "the source ended run.unsupported (network"},
		{upstream(t, "valid/failed-before-capabilities.jsonl"), "the source ended run.failed (adapter-start-failed) before any observation of a running subject"},
		{upstream(t, "valid/basic.jsonl"), ""},
	} {
		if got := NotRun(transcripttest.Load(t, tc.path)); tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("NotRun(%s) = %q, want %q", filepath.Base(tc.path), got, tc.want)
		}
	}
}

// TestReport pins the replay/v1 shape: member names and order, and what
// is left out when.
func TestReport(t *testing.T) {
	b, err := json.Marshal(NotRunReport("s.jsonl", "why"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"format":"termverify-sandbox.replay/v1","source":"s.jsonl","replayed":false,"not_run":"why"}`; string(b) != want {
		t.Errorf("not run: %s\nwant %s", b, want)
	}
	src, failed := transcripttest.Load(t, examples+"finished.jsonl"), transcripttest.Load(t, examples+"failed.jsonl")
	c := Compare(src, src)
	b, err = json.Marshal(c.Report("s.jsonl", "o.jsonl", transcript.KindRunFinished))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"format":"termverify-sandbox.replay/v1","source":"s.jsonl","replayed":true,"transcript":"o.jsonl","outcome":"run.finished",` +
		`"subject_matches":true,"comparison":{"format":"termverify-sandbox.compare/v1","left":{"file":"s.jsonl","records":19},` +
		`"right":{"file":"o.jsonl","records":19},"equivalent":true,"first_divergent_seq":null,"excluded":["run_id"],"ignored":[],"divergences":[]}}`
	if string(b) != want {
		t.Errorf("equivalent: %s\nwant %s", b, want)
	}
	ig, err := compare.ParseIgnore("payload.at_ms")
	if err != nil {
		t.Fatal(err)
	}
	c = Compare(src, failed, ig)
	r := c.Report("s.jsonl", "o.jsonl", transcript.KindRunFailed)
	if !c.SubjectMatches() || r.Comparison.Equivalent || *r.Comparison.FirstDivergentSeq != c.Verdict.FirstDivergentSeq() ||
		len(r.Comparison.Divergences) != len(c.Verdict.Divergences) || r.Comparison.Ignored[0].Path != "payload.at_ms" {
		t.Errorf("divergent: %+v", r.Comparison)
	}
}
