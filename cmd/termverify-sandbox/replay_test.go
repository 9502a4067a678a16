package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/replay"
	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

const corpusDir = "../../../shared/conformance/upstream/transcript"

func readSource(t *testing.T, path string) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Read(mustOpen(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestReplayPlan checks the flags replay adds to replay.Request's plan
// (replay/replay_test.go checks the plan) and the words its refusals get,
// without starting anything.
func TestReplayPlan(t *testing.T) {
	src := readSource(t, finished)
	o := replayOptions{}
	o.transcript = filepath.Join(t.TempDir(), "out.jsonl")
	o.isolation, o.stderrMax = "auto", "1M"
	o.limits.memory, o.limits.fileSize, o.limits.tmpSize, o.limits.mode = "0", "0", "0", "best-effort"
	req, err := o.replayRequest(src, []string{"./subject"})
	if err != nil {
		t.Fatal(err)
	}
	if req.RunID != src.RunID || !req.Replay || req.Subject.Application.ID != "counter" || !slices.Equal(req.Args, []string{"./subject"}) ||
		req.TranscriptPath != o.transcript {
		t.Errorf("request %+v", req)
	}
	o.runID = "other"
	if req, _ := o.replayRequest(src, []string{"./subject"}); req.RunID != "other" {
		t.Errorf("--run-id: %q", req.RunID)
	}
	for _, tc := range []struct {
		file string
		pty  bool
		want string
	}{
		{"0217-accept.jsonl", false, "the source has inputs a control/v1 subject cannot receive: input.mouse (first at seq 9); replay them with --pty, or against a terminal program; nothing was started"},
		{"0277-accept.jsonl", false, "input.clipboard_set (first at seq 9); replay them with --pty"},
		{"0445-accept.jsonl", true, "the source was recorded over control/v1: replay it without --pty; nothing was started"},
	} {
		o.pty = tc.pty
		if _, err := o.replayRequest(readSource(t, filepath.Join(corpusDir, tc.file)), []string{"./subject"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
	o.pty = false
	o.transcript = "-"
	if _, err := o.replayRequest(readSource(t, finished), []string{"./subject"}); err == nil {
		t.Error("--transcript - accepted")
	}
}

// TestReplaySourceLimit: a source over the transcript limit is refused
// after limit + 1 bytes, naming the rule, and nothing starts.
func TestReplaySourceLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.jsonl")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(transcript.MaxBytes + 1<<20); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(dir, "out.jsonl")
	_, errText, code := runCLI(t, nil, "replay", big, "--root", "app="+dir, "--transcript", out, "--", "./subject")
	if code != exitUsage || !strings.Contains(errText, transcript.RuleTranscriptBytes) {
		t.Errorf("exit %d: %s", code, errText)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a transcript was written")
	}
}

// TestReplay drives the real binary against real sandboxed runs of the
// echo subject: a replay of our own transcript is equivalent (byte for
// byte), sources that never ran start nothing, a source whose inputs run
// out with the run open ends replay-not-terminated, refusals start nothing.
func TestReplay(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	root := echoSubjectRoot(t)
	dir := t.TempDir()
	record := func(name string, code int, extra ...string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		args := append([]string{"run", "--request", "../../examples/request.json", "--inputs", "../../examples/inputs.jsonl",
			"--root", "app=" + root, "--transcript", path, "--epoch-timeout", "2s"}, extra...)
		if _, stderr, got := run(t, exec.Command(bin, args...)); got != code {
			t.Fatalf("run %s: exit %d, want %d\n%s", name, got, code, stderr)
		}
		return path
	}
	rerun := func(source, out string, extra ...string) (string, string, int) {
		t.Helper()
		args := append([]string{"replay", source, "--root", "app=" + root, "--transcript", filepath.Join(dir, out), "--epoch-timeout", "2s"}, extra...)
		return run(t, exec.Command(bin, args...))
	}
	lastRecord := func(path string) transcript.Record {
		t.Helper()
		tr := readSource(t, path)
		return tr.Records[len(tr.Records)-1]
	}

	src := record("source.jsonl", exitOK, "--", "./echo-subject")

	t.Run("our sandboxed transcript replays equivalent", func(t *testing.T) {
		stdout, stderr, code := rerun(src, "again.jsonl", "--", "./echo-subject")
		if code != exitOK || !strings.Contains(stdout, "subject matches the source") || !strings.Contains(stdout, "\nequivalent (run_id not compared)\n") {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		a, _ := os.ReadFile(src)
		b, _ := os.ReadFile(filepath.Join(dir, "again.jsonl"))
		if !bytes.Equal(a, b) {
			t.Error("the replay's transcript is not byte-identical to the source")
		}
	})
	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := rerun(src, "json.jsonl", "--json", "--run-id", "other-id", "--", "./echo-subject")
		var r replay.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
		}
		// The echo subject echoes the run id from session.hello in its state.
		if code != exitFailed || !r.Replayed || r.SubjectMatches == nil || !*r.SubjectMatches || r.Outcome != transcript.KindRunFinished ||
			r.Comparison == nil || r.Comparison.Equivalent || r.Comparison.Divergences[0].Differences[0].Path != "payload.events[0].data.run_id" {
			t.Errorf("exit %d: %s", code, stdout)
		}
	})
	t.Run("delivered against sandboxed: divergent, then ignored", func(t *testing.T) {
		stdout, _, code := rerun(src, "none.jsonl", "--isolation", "none", "--", "./echo-subject")
		if code != exitFailed || !strings.Contains(stdout, "seq 6  capability.result\n  payload.delivery\n") {
			t.Fatalf("exit %d\n%s", code, stdout)
		}
		stdout, _, code = rerun(src, "none2.jsonl", "--isolation", "none", "--ignore", "capability.result:payload",
			"--ignore", "observation:payload.state.cwd", "--ignore", "observation:payload.state.env.TERMVERIFY_FS_ROOT", "--", "./echo-subject")
		if code != exitOK || !strings.Contains(stdout, "ignore capability.result:payload  (6 differences dropped)") {
			t.Errorf("exit %d\n%s", code, stdout)
		}
	})
	t.Run("a source without input.stop that ended itself replays equivalent", func(t *testing.T) {
		exit3 := record("exit3.jsonl", exitFailed, "--", "./echo-subject", "exit-mid-epoch", "3")
		in, _ := readSource(t, exit3).Inputs()
		if _, stop := in[len(in)-1].(input.Stop); stop {
			t.Fatal("the source has input.stop")
		}
		if stdout, stderr, code := rerun(exit3, "exit3-again.jsonl", "--", "./echo-subject", "exit-mid-epoch", "3"); code != exitOK {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})
	t.Run("inputs run out with the run open: replay-not-terminated, no stop invented", func(t *testing.T) {
		hang := record("hang.jsonl", exitFailed, "--epoch-timeout", "300ms", "--", "./echo-subject", "hang")
		stdout, stderr, code := rerun(hang, "hang-again.jsonl", "--", "./echo-subject")
		if code != exitFailed || !strings.Contains(stdout, "replay-not-terminated") {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		out := filepath.Join(dir, "hang-again.jsonl")
		last := lastRecord(out)
		if f, ok := last.Failure(); !ok || f.Code != supervisor.CodeReplayNotTerminated {
			t.Errorf("last record %s %+v", last.Kind, f)
		}
		for _, r := range readSource(t, out).Records {
			if r.Kind == transcript.KindInputStop {
				t.Error("the replay invented an input.stop")
			}
		}
	})
	t.Run("sources that never ran start nothing", func(t *testing.T) {
		ours := record("unsupported.jsonl", exitFailed, "--isolation", "none", "--require", "network=os", "--", "./echo-subject")
		for _, source := range []string{ours, unsupported, upstreamDir + "/valid/failed-before-capabilities.jsonl"} {
			stdout, stderr, code := rerun(source, "never.jsonl", "--", "./echo-subject")
			if code != exitFailed || !strings.HasPrefix(stdout, "not run: ") || !strings.Contains(stdout, "nothing was started") {
				t.Errorf("%s: exit %d\n%s\n%s", source, code, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "never.jsonl")); err == nil {
				t.Fatalf("%s: a transcript was written", source)
			}
		}
	})
	t.Run("refusals start nothing", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			source string
			extra  []string
			want   string
		}{
			{"input.mouse", filepath.Join(corpusDir, "0217-accept.jsonl"), nil, "input.mouse (first at seq 9)"},
			{"invalid source", upstreamDir + "/invalid/overlapping-inputs.jsonl", nil, "the source is not a valid transcript"},
			{"transcript to stdout", src, []string{"--transcript", "-"}, "give a file"},
			{"no subject", src, nil, "subject command after --"},
		} {
			args := append([]string{"replay", tc.source, "--root", "app=" + root, "--transcript", filepath.Join(dir, "refused.jsonl")}, tc.extra...)
			if tc.name != "no subject" {
				args = append(args, "--", "./echo-subject")
			}
			_, stderr, code := run(t, exec.Command(bin, args...))
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("%s: exit %d, stderr %s", tc.name, code, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "refused.jsonl")); err == nil {
				t.Fatalf("%s: a transcript was written", tc.name)
			}
		}
	})
	t.Run("an upstream-written source", func(t *testing.T) {
		// 0445 was written by upstream's recorder: root fixture-root, one
		// input of each control kind, input.stop, run.finished; its subject
		// names upstream's adapter and no platform. The echo subject gets
		// the same inputs at the same clock positions (no input record
		// differs) and the selector check names the members that differ.
		source := filepath.Join(corpusDir, "0445-accept.jsonl")
		out := filepath.Join(dir, "upstream.jsonl")
		args := []string{"replay", source, "--root", "fixture-root=" + root, "--transcript", out, "--json", "--", "./echo-subject"}
		stdout, stderr, code := run(t, exec.Command(bin, args...))
		var r replay.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != exitFailed {
			t.Fatalf("exit %d, %v\n%s\n%s", code, err, stdout, stderr)
		}
		if r.SubjectMatches == nil || *r.SubjectMatches || !slices.Equal(r.SubjectDifferences, []string{"adapter", "platform"}) ||
			r.Outcome != transcript.KindRunFinished {
			t.Errorf("%s", stdout)
		}
		if got, want := kindsOf(readSource(t, out)), kindsOf(readSource(t, source)); !slices.Equal(got, want) {
			t.Errorf("records %q, want %q", got, want)
		}
		for _, d := range r.Comparison.Divergences {
			if k := *d.LeftKind; strings.HasPrefix(k, "input.") {
				t.Errorf("seq %d (%s) differs: %+v", d.Seq, k, d.Differences)
			}
		}
	})
}

func kindsOf(t *transcript.Transcript) []string {
	var out []string
	for _, r := range t.Records {
		out = append(out, r.Kind)
	}
	return out
}

// TestReplayPTY: a PTY transcript, mouse and clipboard inputs included,
// replays with --pty to a byte-identical transcript; without --pty it is
// refused before anything starts.
func TestReplayPTY(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	inputs := filepath.Join(dir, "inputs.jsonl")
	script := `{"kind":"input.text","payload":{"text":"hi"}}
{"kind":"input.key","payload":{"keys":["Enter"]}}
{"kind":"input.mouse","payload":{"action":"scroll","column":0,"row":0,"delta":1}}
{"kind":"input.clipboard_set","payload":{"text":"c"}}
{"kind":"input.stop","payload":{}}
`
	if err := os.WriteFile(inputs, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "source.jsonl")
	if _, stderr, code := run(t, exec.Command(bin, "run", "--pty", "--request", "../../examples/request.json", "--inputs", inputs,
		"--root", "app="+root, "--transcript", src, "--", "/bin/cat")); code != exitFailed || !strings.Contains(stderr, "SIGHUP") {
		t.Fatalf("run --pty: exit %d, want %d (cat ends by the hangup)\n%s", code, exitFailed, stderr)
	}
	stdout, stderr, code := run(t, exec.Command(bin, "replay", src, "--pty", "--root", "app="+root,
		"--transcript", filepath.Join(dir, "again.jsonl"), "--", "/bin/cat"))
	if code != exitOK || !strings.Contains(stdout, "\nequivalent (run_id not compared)\n") {
		t.Fatalf("replay --pty: exit %d\n%s\n%s", code, stdout, stderr)
	}
	a, _ := os.ReadFile(src)
	b, _ := os.ReadFile(filepath.Join(dir, "again.jsonl"))
	if !bytes.Equal(a, b) {
		t.Errorf("the replay's transcript is not byte-identical to the source:\n%s\n---\n%s", a, b)
	}
	_, stderr, code = run(t, exec.Command(bin, "replay", src, "--root", "app="+root,
		"--transcript", filepath.Join(dir, "control.jsonl"), "--", "/bin/cat"))
	if code != exitUsage || !strings.Contains(stderr, "--pty") {
		t.Errorf("replay without --pty: exit %d\n%s", code, stderr)
	}
	// A control transcript replayed with --pty is refused the same way.
	ctl := filepath.Join(dir, "control-source.jsonl")
	if _, stderr, code := run(t, exec.Command(bin, "run", "--request", "../../examples/request.json", "--inputs", "../../examples/inputs.jsonl",
		"--root", "app="+echoSubjectRoot(t), "--transcript", ctl, "--", "./echo-subject")); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	_, stderr, code = run(t, exec.Command(bin, "replay", ctl, "--pty", "--root", "app="+root,
		"--transcript", filepath.Join(dir, "pty.jsonl"), "--", "/bin/cat"))
	if code != exitUsage || !strings.Contains(stderr, "without --pty") {
		t.Errorf("replay --pty of a control transcript: exit %d\n%s", code, stderr)
	}
}
