package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runValidate runs "validate args..." with stdin and returns stdout and
// the exit status main would choose.
func runValidate(t *testing.T, stdin io.Reader, args ...string) (string, int) {
	t.Helper()
	return runControl(t, stdin, append([]string{"validate"}, args...)...)
}

func TestValidate(t *testing.T) {
	const (
		started = `{"id":"record-0000","kind":"run.started","payload":{"config":{"clock":{"initial_ms":0,"mode":"manual"},"filesystem":{"mode":"sandbox","root_id":"r"},"locale":"C","network":{"mode":"deny"},"seed":"0","terminal":{"capabilities":[],"columns":80,"rows":24},"timezone":"UTC"},"subject":{"adapter":{"id":"a","version":"1"},"application":{"build":"b","id":"a","version":"1"},"fixture":{"id":"f","version":"1"},"format":"termverify.replay-subject/v1","normalizer":{"id":"n","version":"1"},"state_schema":{"id":"s","version":"1"}}},"protocol":"termverify.transcript/v1","run_id":"run","seq":0}` + "\n"
		failed  = `{"id":"record-0001","kind":"run.failed","payload":{"error":{"code":"adapter-start-failed","message":"x"}},"protocol":"termverify.transcript/v1","run_id":"run","seq":1}` + "\n"
	)
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.jsonl", started+failed)
	bad := write("bad.jsonl", started+strings.Replace(failed, `"seq":1`, `"seq":2`, 1))
	crlf := write("crlf.jsonl", strings.Replace(started, "\n", "\r\n", 1)+failed)
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
		code  int
	}{
		{"valid", "", []string{good}, good + ": OK (2 records)\n", exitOK},
		{"invalid record", "", []string{bad}, bad + ": record 1 (line 2): envelope.seq: seq must be 1, the record's zero-based line number\n", exitFailed},
		{"whole-file rule", "", []string{crlf}, crlf + ": framing.no-cr: CR is not allowed; lines end with exactly one LF\n", exitFailed},
		{"one bad of two", "", []string{good, bad}, good + ": OK (2 records)\n" + bad + ": record 1 (line 2): envelope.seq: seq must be 1, the record's zero-based line number\n", exitFailed},
		{"stdin", started + failed, []string{"-"}, "-: OK (2 records)\n", exitOK},
		{"stdin invalid", started, []string{"-"}, "-: record 0 (line 1): placement.terminal: the transcript must end with exactly one terminal record\n", exitFailed},
		{"missing file", "", []string{filepath.Join(dir, "nope.jsonl")}, "", exitUsage},
		{"no arguments", "", nil, "", exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runValidate(t, strings.NewReader(tc.stdin), tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if out != tc.want {
				t.Errorf("stdout %q, want %q", out, tc.want)
			}
		})
	}
}

// TestValidateMatchesParse: validate streams each file, and the line it
// prints is the one the tree path's verdict gives (transcript.Read, as
// compare and replay read their sources), for every upstream corpus file
// and for violations in several passes at once, where the earliest pass
// must win over the earliest line.
func TestValidateMatchesParse(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("upstream corpus not present under %s", corpusDir)
	}
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(corpusDir, "0000-accept.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	for name, data := range map[string]string{
		// line 2 not canonical, line 3 not JSON: step 5 comes before step 6
		"decode-over-canonical.jsonl": lines[0] + strings.Replace(lines[1], `,"kind"`, `, "kind"`, 1) + "{\n",
		// line 2 with a bad seq, line 4 nested too deep: step 4 first
		"depth-over-envelope.jsonl": lines[0] + strings.Replace(lines[1], `"seq":1`, `"seq":7`, 1) + lines[2] +
			`{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}\n",
		// a CR on the last line: framing before everything
		"cr-last.jsonl": lines[0] + "{\"a\":1,\"a\":2}\n" + "x\r\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	var want strings.Builder
	for _, name := range files {
		tr, err := readTranscript(nil, name)
		want.WriteString(formatValidation(name, tr, err) + "\n")
	}
	out, _ := runValidate(t, strings.NewReader(""), files...)
	got, exp := strings.Split(out, "\n"), strings.Split(want.String(), "\n")
	if len(got) != len(exp) {
		t.Fatalf("%d lines, want %d", len(got), len(exp))
	}
	for i := range exp {
		if got[i] != exp[i] {
			t.Errorf("validate printed\n\t%s\nthe tree path gives\n\t%s", got[i], exp[i])
		}
	}
}
