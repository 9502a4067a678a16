package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCommand: report writes one page for the transcripts given,
// refuses an invalid one by name, and compare --html writes the side by
// side page whatever the verdict.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	out, msg, code := runCLI(t, nil, "report", ptyBash, finished, failed, "--html", page)
	if code != exitOK || !strings.Contains(out, "report of 3 runs") {
		t.Fatalf("report: %d %q %q", code, out, msg)
	}
	data, err := os.ReadFile(page)
	must(t, err)
	for _, want := range []string{`<section class="run" id="run-3">`, "pty-bash-colours", "example-failed", "Content-Security-Policy"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no --html", []string{"report", ptyBash}, "--html OUT is required"},
		{"no transcript", []string{"report", "--html", filepath.Join(dir, "a")}, "at least one TRANSCRIPT"},
		{"two stdins", []string{"report", "-", "-", "--html", filepath.Join(dir, "b")}, "only one TRANSCRIPT can be stdin"},
		{"invalid", []string{"report", ptyBash, "report_test.go", "--html", filepath.Join(dir, "c")}, "report_test.go: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, msg, code := runCLI(t, nil, c.args...)
			if code != exitUsage || !strings.Contains(msg, c.want) {
				t.Errorf("exit %d, %q; want 2 and %q", code, msg, c.want)
			}
		})
	}
	for _, f := range []string{"a", "b", "c"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a refused report left %s", f)
		}
	}

	cmp := filepath.Join(dir, "cmp.html")
	_, _, code = runCLI(t, nil, "compare", finished, failed, "--ignore", "payload.subject", "--html", cmp)
	if code != exitFailed {
		t.Fatalf("compare of two different runs: exit %d, want 1", code)
	}
	data, err = os.ReadFile(cmp)
	must(t, err)
	for _, want := range []string{`<span class="word">divergent</span>`, "<code>payload.subject</code>:", `class="div" data-stop`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the compare page lacks %s", want)
		}
	}
}
