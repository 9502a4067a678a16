package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/receipts"
)

// TestRunAndReceipts drives the real binary: run's documented exit
// statuses, the transcript written whole or not at all, and receipts'
// table, --json and --require.
func TestRunAndReceipts(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	root := echoSubjectRoot(t)
	dir := t.TempDir()
	runArgs := func(transcript string, extra ...string) []string {
		args := []string{"run", "--request", "../../examples/request.json", "--inputs", "../../examples/inputs.jsonl",
			"--root", "app=" + root, "--transcript", filepath.Join(dir, transcript), "--epoch-timeout", "2s"}
		return append(args, extra...)
	}
	cases := []struct {
		name       string
		args       []string
		code       int
		transcript bool
	}{
		{"finished with exit 0", runArgs("ok.jsonl", "--", "./echo-subject"), exitOK, true},
		{"finished with exit 3", runArgs("exit3.jsonl", "--", "./echo-subject", "exit-mid-epoch", "3"), exitFailed, true},
		{"unsupported", runArgs("none.jsonl", "--isolation", "none", "--require", "network=os", "--", "./echo-subject"), exitFailed, true},
		{"failed", runArgs("hang.jsonl", "--epoch-timeout", "300ms", "--", "./echo-subject", "hang"), exitFailed, true},
		{"usage: no subject", runArgs("usage.jsonl"), exitUsage, false},
		{"usage: bad script", append([]string{"run", "--request", "../../examples/request.json", "--inputs", "../../examples/request.json",
			"--root", "app=" + root, "--transcript", filepath.Join(dir, "bad.jsonl"), "--"}, "./echo-subject"), exitUsage, false},
		{"usage: missing root dir", runArgs("noroot.jsonl", "--root", "other=/does/not/exist", "--", "./echo-subject"), exitUsage, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, exec.Command(bin, tc.args...))
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			path := tc.args[slices.Index(tc.args, "--transcript")+1]
			_, err := os.Stat(path)
			if (err == nil) != tc.transcript {
				t.Errorf("transcript present %v, want %v", err == nil, tc.transcript)
			}
			if tc.transcript {
				if _, stderr, code := run(t, exec.Command(bin, "receipts", path)); code != exitOK {
					t.Errorf("receipts: exit %d: %s", code, stderr)
				}
			}
		})
	}

	ok := filepath.Join(dir, "ok.jsonl")
	stdout, _, code := run(t, exec.Command(bin, "receipts", ok, "--require", "filesystem=os,network=os"))
	if code != exitOK || !strings.Contains(stdout, "filesystem  applied     os") || !strings.Contains(stdout, "weakest tier: delivered") {
		t.Errorf("receipts: exit %d\n%s", code, stdout)
	}
	stdout, _, code = run(t, exec.Command(bin, "receipts", "--json", ok))
	var rep receipts.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitOK || len(rep.Receipts) != 7 || !rep.Complete {
		t.Errorf("receipts --json: exit %d, %v\n%s", code, err, stdout)
	}
	if _, stderr, code := run(t, exec.Command(bin, "receipts", "--require", "seed=os", ok)); code != exitFailed || !strings.Contains(stderr, "seed") {
		t.Errorf("receipts --require seed=os: exit %d\n%s", code, stderr)
	}
	if _, _, code := run(t, exec.Command(bin, "receipts", "../../examples/request.json")); code != exitFailed {
		t.Errorf("receipts on a non-transcript: exit %d", code)
	}
	// Transcript to stdout.
	args := runArgs("unused")
	args[slices.Index(args, "--transcript")+1] = "-"
	stdout, stderr, code := run(t, exec.Command(bin, append(args, "--", "./echo-subject")...))
	if code != exitOK || strings.Count(stdout, "\n") < 10 || !strings.HasSuffix(strings.TrimSpace(stdout), `"seq":`+strconv.Itoa(strings.Count(strings.TrimSpace(stdout), "\n"))+`}`) {
		t.Errorf("--transcript -: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// echoSubjectRoot builds the example echo subject, statically (no C
// library needed), into a new directory every user can read, and returns
// the directory.
func echoSubjectRoot(t *testing.T) string {
	t.Helper()
	root := publicTempDir(t, 0o755)
	build := exec.Command("go", "build", "-o", filepath.Join(root, "echo-subject"), "../../examples/echo-subject")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build echo-subject: %v\n%s", err, out)
	}
	return root
}
