package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

// hostileMessage is the terminal-injection recipe — window title (OSC 0),
// clear screen, clipboard write (OSC 52), a forged line — plus an 8-bit
// CSI (U+009B) and a right-to-left override, as JSON string content.
const hostileMessage = `\u001b]0;pwned\u0007\u001b[2J\u001b]52;c;ZXZpbA==\u0007\nreceipts: all os \u009b31m \u202egnp.exe`

// hostileSubject is a shell script that answers session.hello with kind
// and payload (one JSON object) and exits.
func hostileSubject(kind, payload string) string {
	return "#!/bin/sh\nread -r hello\nprintf '%s\\n' '" +
		`{"protocol":"termverify.control/v1","kind":"` + kind + `","payload":` + payload + "}'\nexit 0\n"
}

// assertTerminalSafe fails if out holds anything a terminal could execute
// or that reorders text: C0 controls other than the LF ending a line, DEL,
// C1 controls, bidi controls, invalid UTF-8; and if it has other than
// lines lines.
func assertTerminalSafe(t *testing.T, what, out string, lines int) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: invalid UTF-8:\n%q", what, out)
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Errorf("%s: raw %U reaches the terminal:\n%q", what, r, out)
			break
		}
	}
	if n := strings.Count(out, "\n"); lines >= 0 && n != lines {
		t.Errorf("%s: %d lines, want %d (a forged line?):\n%s", what, n, lines, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "receipts: all os") {
			t.Errorf("%s: forged line %q", what, l)
		}
	}
}

// TestTerminalEscapeInjection is terminal injection as the attack: a
// subject's session.failed and session.unsupported messages, a planted
// state entry name and a subject-chosen file name must reach the
// operator's terminal escaped — from run (describeResult and the
// supervisor's log lines), receipts (table, --json, --require), and
// validate.
func TestTerminalEscapeInjection(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	root := publicTempDir(t, 0o755)
	dir := t.TempDir()
	subjects := map[string]string{
		"failed":      hostileSubject("session.failed", `{"error":{"code":"evil","message":"`+hostileMessage+`"}}`),
		"unsupported": hostileSubject("session.unsupported", `{"constraint":"terminal","code":"constraint-unsupported","message":"`+hostileMessage+`"}`),
	}
	for name, script := range subjects {
		if err := os.WriteFile(filepath.Join(root, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A stale state entry whose name a local user chose: the sweep at the
	// start of run fails on it, and run logs that failure (supervisor's
	// Logf) with the name in it.
	state := t.TempDir()
	planted := filepath.Join(state, "tvs-\x1b]0;pwned\x07\nreceipts: all os")
	if err := os.Mkdir(planted, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planted, "scratch"), []byte("not\x1b[2J\na scratch root"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(planted, old, old); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"failed", "unsupported"} {
		t.Run("run "+name, func(t *testing.T) {
			tr := filepath.Join(dir, name+".jsonl")
			_, stderr, code := run(t, exec.Command(bin, "run", "--request", "../../examples/request.json",
				"--inputs", "../../examples/inputs.jsonl", "--root", "app="+root, "--state-dir", state,
				"--transcript", tr, "--", "./"+name))
			if code != exitFailed {
				t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, stderr)
			}
			// One line for the sweep note, one for the outcome.
			assertTerminalSafe(t, "run stderr", stderr, 2)
			for _, want := range []string{`\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\nreceipts: all os \u009b31m \u202egnp.exe`,
				`sweep tvs-\x1b]0;pwned\x07\nreceipts: all os: scratch record "not\x1b[2J\na scratch root"`} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %s:\n%s", want, stderr)
				}
			}

			stdout, stderr, code := run(t, exec.Command(bin, "receipts", "--require", "terminal=os", tr))
			if code != exitFailed {
				t.Errorf("receipts: exit %d, want %d", code, exitFailed)
			}
			lines := 10 // title, header, seven receipts, weakest tier
			if name == "unsupported" {
				lines = 8 // the receipts stop at the refused terminal
			}
			assertTerminalSafe(t, "receipts stdout", stdout, lines)
			assertTerminalSafe(t, "receipts stderr", stderr, -1)

			stdout, _, _ = run(t, exec.Command(bin, "receipts", "--json", tr))
			assertTerminalSafe(t, "receipts --json", stdout, -1)
			if !json.Valid([]byte(stdout)) {
				t.Errorf("receipts --json: not JSON:\n%s", stdout)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "unsupported.jsonl")); err != nil || !strings.Contains(string(b), `\u001b]0;pwned`) {
		t.Fatalf("the transcript does not carry the hostile reason (%v)", err)
	}

	t.Run("validate", func(t *testing.T) {
		// A file name a subject chose, in a directory the operator validates.
		name := filepath.Join(dir, "x\x1b]0;pwned\x07\u202e\nreceipts: all os.jsonl")
		if err := os.WriteFile(name, []byte("{\"bad\":\"\x1b[2J\"}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := run(t, exec.Command(bin, "validate", filepath.Join(dir, "unsupported.jsonl"), name))
		if code != exitFailed {
			t.Errorf("validate: exit %d, want %d:\n%s", code, exitFailed, stderr)
		}
		assertTerminalSafe(t, "validate stdout", stdout, 2)
		assertTerminalSafe(t, "validate stderr", stderr, 0)
	})
}

// TestDescribeResultEscapes: describeResult's codes and messages are the
// subject's; the line it returns is one safe line.
func TestDescribeResultEscapes(t *testing.T) {
	var msg string
	if err := json.Unmarshal([]byte(`"`+hostileMessage+`"`), &msg); err != nil {
		t.Fatal(err)
	}
	cases := []supervisor.Result{
		{Outcome: transcript.KindRunFailed, Error: &transcript.Failure{Code: "c\x1b[2J", Message: msg}},
		{Outcome: transcript.KindRunUnsupported, Refusal: &receipts.Refusal{Constraint: "t\n", Code: "\u202e", Message: msg}},
		{Outcome: transcript.KindRunFinished, Exit: &transcript.Exit{Kind: transcript.ExitSignal, Signal: "KILL\x1b]0;x\x07"}},
	}
	for i, r := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			assertTerminalSafe(t, "describeResult", describeResult(r)+"\n", 1)
		})
	}
}
