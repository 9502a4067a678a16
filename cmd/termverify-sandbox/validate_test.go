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
