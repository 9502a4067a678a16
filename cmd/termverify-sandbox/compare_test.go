package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/transcript"
)

// runCLI runs the command tree in-process and returns stdout, the error
// text main would print, and the exit status main would choose.
func runCLI(t *testing.T, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.Execute()
	if err == nil {
		return out.String(), errOut.String(), exitOK
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		msg := errOut.String()
		if ee.Err != nil {
			msg += ee.Err.Error()
		}
		return out.String(), msg, ee.Code
	}
	return out.String(), err.Error(), exitUsage
}

const (
	finished    = "../../examples/transcripts/finished.jsonl"
	failed      = "../../examples/transcripts/failed.jsonl"
	unsupported = "../../examples/transcripts/unsupported.jsonl"
	upstreamDir = "../../../shared/reference/termverify-upstream/transcripts/v1"
)

// hostileCopy writes finished.jsonl with a state value and a member name
// that would drive a terminal (OSC title, CSI as C1, a bidi override),
// still a valid transcript, and returns its path.
func hostileCopy(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(finished)
	if err != nil {
		t.Fatal(err)
	}
	evil := `"\u001b]0;pwned\u0007` + "\u009b31m\u202e" + `"`
	data = bytes.Replace(data, []byte(`"state":{"count":1}`), []byte(`"state":{"count":`+evil+`}`), 1)
	data = bytes.Replace(data, []byte(`"state":{"count":1}`), []byte(`"state":{"c\u001b[2Jount":1}`), 1)
	if _, err := transcript.Parse(data); err != nil {
		t.Fatalf("the hostile copy is not valid: %v", err)
	}
	path := filepath.Join(t.TempDir(), "hostile\x1b[2J.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(finished)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string // substrings
		errs   []string
	}{
		{"equivalent", "", []string{finished, finished}, exitOK, []string{"equivalent (run_id not compared)", "19 records"}, nil},
		{"stdin as one side", string(src), []string{"-", finished}, exitOK, []string{"left   -  19 records", "equivalent"}, nil},
		{"divergent", "", []string{finished, failed}, exitFailed, []string{
			"seq 10  left observation, right run.failed", "  kind\n    - \"observation\"\n    + \"run.failed\"\n",
			"    + (absent)\n", "seq 18  only on the left: run.finished",
			"divergent: 9 of 19 positions differ, first at seq 10", "(+72 bytes)",
		}, nil},
		{"ignore drops and counts", "", []string{finished, failed, "--ignore", "observation:payload", "--ignore", "payload.error"}, exitFailed, []string{
			"ignore observation:payload  (0 differences dropped)", "ignore payload.error  (1 difference dropped)",
		}, nil},
		{"upstream-written pair", "", []string{upstreamDir + "/valid/basic.jsonl", upstreamDir + "/valid/finished-after-stop.jsonl"}, exitFailed, []string{
			"seq 9  left input.text, right input.stop", "  payload.text\n    - \"hello\"\n    + (absent)\n", "first at seq 9",
		}, nil},
		{"upstream-written pair, ignored", "", []string{upstreamDir + "/valid/basic.jsonl", upstreamDir + "/valid/finished-after-stop.jsonl",
			"--ignore", "kind", "--ignore", "payload.text"}, exitOK, []string{"equivalent"}, nil},
		{"ours against upstream's, run.started", "", []string{upstreamDir + "/valid/basic.jsonl", finished}, exitFailed, []string{
			"  payload.subject.adapter.id\n    - \"termverify.direct\"\n    + \"termverify-sandbox\"\n", "first at seq 0",
		}, nil},
		{"bad left side", "", []string{bad, finished}, exitUsage, nil, []string{"left side is not a valid transcript", "bad.jsonl"}},
		{"bad right side", "", []string{finished, upstreamDir + "/invalid/idle-observation.jsonl"}, exitUsage, nil, []string{
			"right side is not a valid transcript", "idle-observation.jsonl: record 9 (line 10): epoch.idle-observation"}},
		{"missing file", "", []string{finished, filepath.Join(dir, "none.jsonl")}, exitUsage, nil, []string{"right side"}},
		{"bad ignore path", "", []string{finished, finished, "--ignore", "paylod.x"}, exitUsage, nil, []string{"--ignore", "paylod"}},
		{"both sides stdin", "", []string{"-", "-"}, exitUsage, nil, []string{"only one side"}},
		{"one side", "", []string{finished}, exitUsage, nil, []string{"LEFT and RIGHT"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, errText, code := runCLI(t, strings.NewReader(tc.stdin), append([]string{"compare"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nerr: %s", code, tc.code, stdout, errText)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.errs {
				if !strings.Contains(errText, s) {
					t.Errorf("error lacks %q: %s", s, errText)
				}
			}
			if strings.Contains(stdout, "\x1b") {
				t.Errorf("colour or escapes in a report that is not to a terminal:\n%q", stdout)
			}
		})
	}
}

func TestCompareJSON(t *testing.T) {
	stdout, _, code := runCLI(t, nil, "compare", "--json", finished, failed, "--ignore", "id")
	if code != exitFailed {
		t.Fatalf("exit %d", code)
	}
	var r struct {
		Format      string
		Left, Right struct {
			File    string
			Records int
		}
		Equivalent        bool
		FirstDivergentSeq *int `json:"first_divergent_seq"`
		Excluded          []string
		Ignored           []compare.Ignored
		Divergences       []struct {
			Seq         int
			LeftKind    *string `json:"left_kind"`
			RightKind   *string `json:"right_kind"`
			Differences []struct {
				Path        string
				Left, Right *string
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if r.Format != compare.ReportFormat || r.Equivalent || r.FirstDivergentSeq == nil || *r.FirstDivergentSeq != 10 ||
		r.Left.Records != 19 || r.Right.Records != 11 || len(r.Excluded) != 1 || r.Excluded[0] != "run_id" || len(r.Divergences) != 9 {
		t.Fatalf("%+v", r)
	}
	last := r.Divergences[8]
	if last.Seq != 18 || last.LeftKind == nil || *last.LeftKind != "run.finished" || last.RightKind != nil || len(last.Differences) != 0 {
		t.Errorf("extra record: %+v", last)
	}
	// Values are whole in --json: the run.failed error is over 120 bytes.
	for _, d := range r.Divergences[0].Differences {
		if d.Path == "payload.error" {
			if d.Left != nil || d.Right == nil || len(*d.Right) <= valueLimit || strings.Contains(*d.Right, "...") {
				t.Errorf("payload.error: %v %v", d.Left, d.Right)
			}
			return
		}
	}
	t.Error("no payload.error difference")
}

// TestCompareTerminalSafety: nothing a transcript holds reaches the
// terminal unescaped — values, member names, file names — in text and
// JSON, with and without colour.
func TestCompareTerminalSafety(t *testing.T) {
	hostile := hostileCopy(t)
	unsafe := regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]")
	for _, args := range [][]string{{finished, hostile}, {"--json", finished, hostile}} {
		stdout, _, code := runCLI(t, nil, append([]string{"compare"}, args...)...)
		if code != exitFailed {
			t.Fatalf("%v: exit %d", args, code)
		}
		if loc := unsafe.FindStringIndex(stdout); loc != nil {
			t.Errorf("%v: unescaped control at %d: %q", args, loc[0], stdout[max(0, loc[0]-40):loc[1]])
		}
		if !strings.Contains(stdout, `pwned`) || !strings.Contains(stdout, `Jount`) {
			t.Errorf("%v: the differences are missing:\n%s", args, stdout)
		}
	}
	// Coloured: the only escape sequences are our SGRs.
	l, err := transcript.Read(mustOpen(t, finished))
	if err != nil {
		t.Fatal(err)
	}
	r, err := transcript.Read(mustOpen(t, hostile))
	if err != nil {
		t.Fatal(err)
	}
	v := compare.Transcripts(l, r)
	rep := compare.NewReport(finished, hostile, &v)
	text := renderReport(&rep, true)
	if !strings.Contains(text, sgrRed+"- ") || !strings.Contains(text, sgrGreen+"+ ") || !strings.Contains(text, sgrBold+sgrRed+"divergent"+sgrReset) {
		t.Errorf("no colour:\n%q", text)
	}
	plain := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(text, "")
	if loc := unsafe.FindStringIndex(plain); loc != nil {
		t.Errorf("unescaped control besides the SGRs: %q", plain[max(0, loc[0]-40):loc[1]])
	}
	if plain != renderReport(&rep, false) {
		t.Error("the coloured report says something else than the plain one")
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestCut(t *testing.T) {
	short := strings.Repeat("a", valueLimit)
	if cut(short) != short {
		t.Error("a value of 120 bytes was cut")
	}
	long := `"` + strings.Repeat("é", 100) + `"` // 202 bytes; byte 120 is inside an é
	got := cut(long)
	if want := `"` + strings.Repeat("é", 59) + "... (+83 bytes)"; got != want {
		t.Errorf("cut = %q, want %q", got, want)
	}
}

func TestColorOn(t *testing.T) {
	if colorOn(&bytes.Buffer{}) {
		t.Error("colour on a buffer")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if colorOn(f) {
		t.Error("colour on a regular file")
	}
}
