package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// scenario is an adapter or PTY case written here; its golden transcript
// is recorded by cmd/termverify-sandbox's TestConformanceCorpus -update.
type scenarioDef struct {
	name      string
	args      []string // the subject's argv
	handshake int64    // ms
	epoch     int64    // ms
	terminal  string   // the terminal record kind we expect: a check on the recording
	inputs    string   // pty only: the input script's file under pty/
	upstream  string   // what upstream's adapter records, where ours differs
	diff      string   // why ours differs (docs/SUPERVISOR.md row)
	note      string
}

const (
	finished    = "run.finished"
	failed      = "run.failed"
	unsupported = "run.unsupported"
	diffSup     = "docs/SUPERVISOR.md, Deliberate differences from upstream: "
)

// adapterScenarios: every failure class of the taxonomy (docs/SUPERVISOR.md,
// "Failures") and every ending, with echo-subject's modes
// (examples/README.md).
var adapterScenarios = []scenarioDef{
	{name: "well-behaved", args: []string{"./echo-subject"}, terminal: finished},
	{name: "spawn-failed", args: []string{"./no-such-subject"}, terminal: failed, note: "spawn-failed: the program does not exist"},
	{name: "handshake-timeout", args: []string{"./echo-subject", "silent"}, handshake: 300, terminal: failed},
	{name: "never-reads-stdin", args: []string{"./echo-subject", "deaf"}, handshake: 300, terminal: failed,
		upstream: "handshake-timeout without during (the hello fits the pipe, so the read times out)", diff: diffSup + "a subject that never reads stdin: during write"},
	{name: "epoch-timeout", args: []string{"./echo-subject", "hang"}, epoch: 300, terminal: failed},
	{name: "epoch-timeout-deaf-after-ready", args: []string{"./echo-subject", "deaf-after-ready"}, epoch: 300, terminal: failed,
		note: "the inputs fit the pipe: the epoch's read times out"},
	{name: "stop-drain-timeout", args: []string{"./echo-subject", "hang-stop"}, epoch: 1000, terminal: failed,
		note: "1 s: the epochs before the stop must not expire on a loaded machine"},
	{name: "malformed-json", args: []string{"./echo-subject", "bad-json"}, terminal: failed},
	{name: "malformed-json-hello", args: []string{"./echo-subject", "bad-json", "hello"}, terminal: failed},
	{name: "malformed-oversized", args: []string{"./echo-subject", "oversized"}, terminal: failed},
	{name: "malformed-duplicate-member", args: []string{"./echo-subject", "duplicate-member"}, terminal: failed},
	{name: "malformed-lone-surrogate", args: []string{"./echo-subject", "lone-surrogate"}, terminal: failed},
	{name: "malformed-big-int", args: []string{"./echo-subject", "big-int"}, terminal: failed,
		upstream: "passes the control codec, then crashes the recorder", diff: diffSup + "an integer beyond 2^53: peer-malformed"},
	{name: "flood", args: []string{"./echo-subject", "flood"}, terminal: failed, note: "one endless line: peer-malformed at the line limit"},
	{name: "flood-lines", args: []string{"./echo-subject", "flood-lines"}, terminal: failed, note: "an observation of 4 MiB fits the wire but not a transcript line: transcript-budget"},
	{name: "diagnostics-100", args: []string{"./echo-subject", "diagnostics", "100"}, terminal: finished},
	{name: "diagnostics-101", args: []string{"./echo-subject", "diagnostics", "101"}, terminal: failed, note: "limit.diagnostics: the 101st in one epoch",
		upstream: "all of the epoch's diagnostics dropped with the failure", diff: diffSup + "a failed epoch's diagnostics: the first 100 are recorded"},
	{name: "diagnostics-101-hello", args: []string{"./echo-subject", "diagnostics", "101", "hello"}, terminal: failed},
	{name: "wrong-kind", args: []string{"./echo-subject", "wrong-kind"}, terminal: failed, note: "a kind only the adapter sends: adapter-message-kind"},
	{name: "early-observation", args: []string{"./echo-subject", "early-observation"}, terminal: failed, note: "an observation before session.ready: message-before-handshake-reply"},
	{name: "idle-diagnostic", args: []string{"./echo-subject", "idle-diagnostic"}, terminal: failed,
		upstream: "counted in the next epoch", diff: diffSup + "a message while idle: peer-lifecycle at once (message-while-idle)"},
	{name: "idle-bytes", args: []string{"./echo-subject", "idle-bytes"}, terminal: failed, note: "bytes-while-idle"},
	{name: "after-finish", args: []string{"./echo-subject", "after-finish"}, terminal: failed, note: "traffic-after-terminal"},
	{name: "diagnostic-then-failed", args: []string{"./echo-subject", "diagnostic-then-failed"}, terminal: failed,
		upstream: "the diagnostic dropped; run.failed adapter-start-failed", diff: diffSup + "diagnostics before session.failed or session.unsupported"},
	{name: "second-ready", args: []string{"./echo-subject", "second-ready"}, terminal: failed},
	{name: "exited-observation", args: []string{"./echo-subject", "exited-observation"}, terminal: failed},
	{name: "drain-exited", args: []string{"./echo-subject", "drain-exited"}, terminal: failed},
	{name: "drain-diagnostic", args: []string{"./echo-subject", "drain-diagnostic"}, terminal: failed,
		upstream: "accepted", diff: diffSup + "a diagnostic after the stop drain's observation: peer-lifecycle"},
	{name: "exit-in-handshake", args: []string{"./echo-subject", "exit-in-handshake", "5"}, terminal: failed,
		upstream: "run.finished with the exit", diff: diffSup + "the subject exits before replying to session.hello"},
	{name: "exit-mid-epoch", args: []string{"./echo-subject", "exit-mid-epoch", "3"}, terminal: finished},
	{name: "crash", args: []string{"./echo-subject", "crash"}, terminal: finished,
		upstream: "a negative exit code (-6)", diff: diffSup + "a death by signal: {\"kind\":\"signal\",\"value\":\"ABRT\"}"},
	{name: "wrong-exit", args: []string{"./echo-subject", "wrong-exit"}, terminal: finished, note: "exit-record-mismatch; the OS exit wins"},
	{name: "finish-exit", args: []string{"./echo-subject", "finish-exit", "3"}, terminal: finished},
	{name: "run-failed", args: []string{"./echo-subject", "run-failed", "4"}, terminal: failed},
	{name: "session-failed", args: []string{"./echo-subject", "failed"}, terminal: failed},
	{name: "session-unsupported", args: []string{"./echo-subject", "unsupported"}, terminal: unsupported,
		upstream: "seven applied receipts, then run.failed adapter-start-failed", diff: diffSup + "session.unsupported"},
	{name: "daemon-descendant", args: []string{"./echo-subject", "daemon"}, terminal: finished,
		upstream: "the descendant survives the kill", diff: diffSup + "a descendant that leaves the process group: killed with the sandbox"},
}

// ptyScenarios: programs on any Debian machine, on the sandbox's terminal.
var ptyScenarios = []scenarioDef{
	{name: "printf", args: []string{"/usr/bin/printf", `hello\nworld\n`}, inputs: "stop.jsonl", terminal: finished},
	{name: "cat", args: []string{"/bin/cat"}, inputs: "cat.jsonl", terminal: finished},
	{name: "sh", args: []string{"/bin/sh"}, inputs: "sh.jsonl", terminal: finished},
	{name: "sh-exit-3", args: []string{"/bin/sh", "-c", "printf 'bye\\n'; exit 3"}, inputs: "stop.jsonl", terminal: finished},
}

var ptyInputs = map[string]string{
	"stop.jsonl": `{"kind":"input.stop","payload":{}}` + "\n",
	"cat.jsonl": `{"kind":"input.text","payload":{"text":"hello"}}` + "\n" +
		`{"kind":"input.key","payload":{"keys":["Enter"]}}` + "\n" +
		`{"kind":"input.key","payload":{"keys":["Control","d"]}}` + "\n",
	"sh.jsonl": `{"kind":"input.text","payload":{"text":"echo hi; printf '%s\\n' \"$TERM\""}}` + "\n" +
		`{"kind":"input.key","payload":{"keys":["Enter"]}}` + "\n" +
		`{"kind":"input.text","payload":{"text":"exit 0"}}` + "\n" +
		`{"kind":"input.key","payload":{"keys":["Enter"]}}` + "\n",
}

const ptyRequest = `{
  "run_id": "conformance-pty",
  "config": {
    "seed": "1",
    "clock": {"mode": "manual", "initial_ms": 0},
    "locale": "en-US",
    "timezone": "UTC",
    "terminal": {"columns": 40, "rows": 8, "capabilities": []},
    "filesystem": {"mode": "sandbox", "root_id": "app"},
    "network": {"mode": "deny"}
  },
  "subject": {
    "format": "termverify.replay-subject/v1",
    "application": {"id": "conformance.pty", "version": "1", "build": "corpus"},
    "fixture": {"id": "conformance-pty", "version": "1"},
    "normalizer": {"id": "termverify.identity", "version": "1"},
    "state_schema": {"id": "conformance.pty-state", "version": "1"}
  }
}
`

// scenarios writes the scenarios' requests and inputs and returns their
// manifest entries.
func scenarios(t *testing.T, dir string) []Case {
	root := sharedtest.RepoRoot(t)
	for _, f := range []string{"request.json", "inputs.jsonl"} {
		data, err := os.ReadFile(filepath.Join(root, "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, FamilyAdapter, f), data)
	}
	writeFile(t, filepath.Join(dir, FamilyPTY, "request.json"), []byte(ptyRequest))
	for name, data := range ptyInputs {
		writeFile(t, filepath.Join(dir, FamilyPTY, name), []byte(data))
	}
	var out []Case
	for _, fam := range []struct {
		family string
		defs   []scenarioDef
	}{{FamilyAdapter, adapterScenarios}, {FamilyPTY, ptyScenarios}} {
		for _, d := range fam.defs {
			c := Case{
				ID: fam.family + "/" + d.name, Family: fam.family,
				Request: filepath.Join(fam.family, "request.json"), Inputs: filepath.Join(fam.family, "inputs.jsonl"),
				Subject: d.args, HandshakeMS: or(d.handshake, 2000), EpochMS: or(d.epoch, 2000),
				Expect:     Expect{Transcript: filepath.Join(fam.family, d.name+".golden.jsonl"), Terminal: d.terminal},
				Difference: d.diff, Note: d.note,
			}
			if d.inputs != "" {
				c.Inputs = filepath.Join(fam.family, d.inputs)
			}
			if d.upstream != "" {
				c.Upstream = &Upstream{Record: d.upstream}
			}
			out = append(out, c)
		}
	}
	return out
}

func or(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// sessionCases are daemon protocol cases against a live daemon serving
// /bin/cat: an oversized frame and bad lines are answered and the daemon
// serves on; a repeated STOP is answered on both connections.
func sessionCases(t *testing.T, dir string) []Case {
	reply := func(file string) string {
		c := &Corpus{Dir: dir}
		data, err := c.ReadCase(Case{File: file})
		if err != nil {
			t.Fatal(err)
		}
		v, err := Ours{}.Validate(context.Background(), FormatDaemon, data, "")
		if err != nil || v.Valid {
			t.Fatalf("%s: want an invalid request (%v)", file, err)
		}
		return v.Reply
	}
	stopRep, err := interminai.OK(interminai.StopData{Message: interminai.StopMessage})
	if err != nil {
		t.Fatal(err)
	}
	line, err := interminai.EncodeReply(stopRep)
	if err != nil {
		t.Fatal(err)
	}
	stop := strings.TrimSuffix(string(line), "\n")
	return []Case{
		{
			ID: "session/frames", Family: FamilySession, Program: []string{"/bin/cat"},
			Note: "each bad line is answered on its own connection and the daemon serves on",
			Steps: []Step{
				{Conn: "a", SendFile: "daemon/frame-oversized.jsonl.gz", Reply: reply("daemon/frame-oversized.jsonl.gz")},
				{Conn: "b", SendFile: "daemon/unknown-command.jsonl", Reply: reply("daemon/unknown-command.jsonl")},
				{Conn: "c", SendFile: "daemon/not-json.jsonl", Reply: reply("daemon/not-json.jsonl")},
				{Conn: "d", SendFile: "daemon/duplicate.jsonl", Reply: reply("daemon/duplicate.jsonl")},
				{Conn: "e", SendFile: "daemon/resize.jsonl", Status: "ok"},
				{Conn: "f", SendFile: "daemon/stop.jsonl", Reply: stop},
			},
		},
		{
			ID: "session/stop-twice", Family: FamilySession, Program: []string{"/bin/cat"},
			Note: "connection b is accepted (c's reply proves it: accept is in connection order) and holds half a STOP when a's STOP shuts the daemon down; b's STOP is answered the same, not dropped",
			Steps: []Step{
				{Conn: "b", Send: `{"type":"ST`, NoReply: true},
				{Conn: "c", Send: `{"type":"STATUS"}` + "\n", Status: "ok"},
				{Conn: "a", Send: `{"type":"STOP"}` + "\n", Reply: stop},
				{Conn: "b", Send: `OP"}` + "\n", Reply: stop},
			},
		},
	}
}
