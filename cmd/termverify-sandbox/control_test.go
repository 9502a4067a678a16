package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// runControl runs the CLI with args and stdin, returning stdout and the
// exit status main would choose. Other commands' tests use it too.
func runControl(t *testing.T, stdin io.Reader, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.Execute()
	if err == nil {
		return out.String(), exitOK
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		return out.String(), ee.Code
	}
	return out.String(), exitUsage
}

func TestControlCheck(t *testing.T) {
	const (
		stop  = `{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}}` + "\n"
		ready = `{"protocol": "termverify.control/v1", "kind": "session.ready", "payload": {"observation": {"state": null, "ui": {"regions": [], "cursor": {"column": 0, "row": 0, "visible": true}}, "events": []}}}` + "\n"
	)
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string // exact stdout
		code  int
	}{
		{"empty", "", nil, "", exitOK},
		{"valid both directions", stop + ready, nil,
			"line 1: ok input.stop (adapter→subject)\nline 2: ok session.ready (subject→adapter)\n", exitOK},
		{"one bad line", stop + "{\"protocol\":\"termverify.control/v1\",\"kind\":\"input.stop\",\"payload\":{\"x\":1}}\n" + ready, nil,
			"line 1: ok input.stop (adapter→subject)\nline 2: payload.unknown-member: payload.x: member \"x\" is reserved\nline 3: ok session.ready (subject→adapter)\n", exitFailed},
		{"truncated last line", stop + `{"protocol"`, nil,
			"line 1: ok input.stop (adapter→subject)\nline 2: framing.missing-lf: message does not end with LF\n", exitFailed},
		{"CRLF", strings.TrimSuffix(stop, "\n") + "\r\n", nil, "line 1: framing.cr: CR at byte 69\n", exitFailed},
		{"arguments", "", []string{"file.jsonl"}, "", exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runControl(t, strings.NewReader(tc.stdin), append([]string{"control", "check"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if out != tc.want {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tc.want)
			}
		})
	}
}

// TestControlCheckOversized checks that a line over 4 MiB is one verdict and
// the lines after it are still checked.
func TestControlCheckOversized(t *testing.T) {
	stop := `{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}}` + "\n"
	in := io.MultiReader(strings.NewReader(strings.Repeat("a", 5<<20)+"\n"), strings.NewReader(stop))
	out, code := runControl(t, in, "control", "check")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitFailed || len(lines) != 2 || !strings.HasPrefix(lines[0], "line 1: limit.line-bytes: ") || lines[1] != "line 2: ok input.stop (adapter→subject)" {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}
}

func TestControlCheckReadError(t *testing.T) {
	_, code := runControl(t, iotest.ErrReader(errors.New("boom")), "control", "check")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
}
