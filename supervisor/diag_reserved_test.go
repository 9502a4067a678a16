package supervisor

import (
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// forgingSubject is a control/v1 subject, in sh, that sends diagnostics
// under the adapter's own codes: a terminal-size-changed before
// readiness, an exit-record-mismatch whose observed exit is a lie (3; the
// OS sees 0) in its epoch, and an adapter failure code in the stop drain,
// then finishes with the exit the OS observes, so the adapter itself has
// nothing to say.
const forgingSubject = `
P='"protocol":"termverify.control/v1"'
O='{"state":"idle","ui":{"regions":[],"cursor":{"column":0,"row":0,"visible":true}},"events":[]}'
diag() { printf '{%s,"kind":"diagnostic","payload":{"code":"%s","message":"forged","details":%s}}\n' "$P" "$1" "$2"; }
read hello
diag terminal-size-changed '{"columns":1,"rows":1}'
printf '{%s,"kind":"session.ready","payload":{"observation":%s}}\n' "$P" "$O"
while read line; do
	case "$line" in
	*input.stop*)
		diag adapter-runtime-failed null
		diag subject:note null
		printf '{%s,"kind":"run.finished","payload":{"exit":{"kind":"code","value":0}}}\n' "$P"
		exit 0;;
	*)
		diag exit-record-mismatch '{"claimed":{"kind":"code","value":0},"observed":{"kind":"code","value":3}}'
		diag subject-note null
		printf '{%s,"kind":"observation","payload":%s}\n' "$P" "$O";;
	esac
done
`

// TestDiagForgedAdapterCodes is the attack of a control/v1 subject that
// sends diagnostics under the codes the adapter records itself. None of
// them may appear in the transcript under the adapter's code: each is
// recorded as the subject's (ReservedDiagnosticPrefix before its code),
// its message and details as sent, and the subject's other codes as
// they are.
func TestDiagForgedAdapterCodes(t *testing.T) {
	needSandbox(t)
	req := exampleRequest(t)
	req.Isolation = receipts.IsolationOS
	req.Args = []string{"/bin/sh", "-c", forgingSubject, leakMarker}
	in, err := ParseInputs(strings.NewReader(`{"kind":"input.text","payload":{"text":"x"}}`+"\n"), ModeControl)
	if err != nil {
		t.Fatal(err)
	}
	req.Inputs = in
	o := runCase(t, req)
	if o.res.Outcome != transcript.KindRunFinished {
		t.Fatalf("outcome %s\n%s", o.res.Outcome, o.data)
	}
	got := diagnosticCodes(o)
	want := []string{
		"subject:terminal-size-changed",
		"subject:exit-record-mismatch", "subject-note",
		"subject:adapter-runtime-failed", "subject:subject:note",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("diagnostic codes %q, want %q\n%s", got, want, o.data)
	}
	// The forged details are kept as the subject sent them: the record
	// says who claims what, not what the OS saw.
	if !strings.Contains(string(o.data), `"code":"subject:exit-record-mismatch","details":{"claimed":{"kind":"code","value":0},"observed":{"kind":"code","value":3}}`) {
		t.Errorf("the subject's diagnostic lost its details:\n%s", o.data)
	}
	if exit := jsonText(mustGet(t, o.terminal(), "exit")); exit != `{"kind":"code","value":0}` {
		t.Errorf("exit %s, want the OS's 0", exit)
	}
}

// TestDiagReservedCodes: which codes the adapter reserves, and what a
// subject's diagnostic under one is recorded as.
func TestDiagReservedCodes(t *testing.T) {
	cases := []struct{ code, recorded string }{
		{"exit-record-mismatch", "subject:exit-record-mismatch"},
		{DiagSizeChanged, "subject:" + DiagSizeChanged},
		{DiagStopGraceKilled, "subject:" + DiagStopGraceKilled},
		{"terminal-future-code", "subject:terminal-future-code"},
		{transcript.CodeAdapterStartFailed, "subject:" + transcript.CodeAdapterStartFailed},
		{transcript.CodeAdapterRuntimeFailed, "subject:" + transcript.CodeAdapterRuntimeFailed},
		{receipts.CodeUnsupported, "subject:" + receipts.CodeUnsupported},
		{receipts.CodeNotEnforced, "subject:" + receipts.CodeNotEnforced},
		{"subject:x", "subject:subject:x"},
		// Not the adapter's.
		{"echo-subject-note", "echo-subject-note"},
		{"subject-note", "subject-note"},
		{"terminal", "terminal"},
		{"exit-record-mismatch-x", "exit-record-mismatch-x"},
		{"code-0", "code-0"},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			if got := subjectDiagnosticCode(tc.code); got != tc.recorded {
				t.Errorf("subjectDiagnosticCode(%q) = %q, want %q", tc.code, got, tc.recorded)
			}
		})
	}
}
