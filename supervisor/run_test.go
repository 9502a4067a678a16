package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// TestExample is the acceptance run: the bundled request and script under
// the sandbox. Filesystem and network get the os tier, the other five are
// delivered with upstream's variables; a readiness observation, one epoch
// per input, the exited-process observation and run.finished; and a second
// run is byte-identical.
func TestExample(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	req := exampleRequest(t)
	req.Isolation = receipts.IsolationOS
	req.EvidencePath = filepath.Join(t.TempDir(), "evidence.json")
	o := runCase(t, req)
	if !o.res.Succeeded() {
		ev, _ := os.ReadFile(req.EvidencePath)
		t.Fatalf("result %+v, refusal %+v, evidence %s", o.res, o.res.Refusal, ev)
	}
	want := map[receipts.Constraint]string{
		receipts.Seed: "delivered", receipts.Clock: "delivered", receipts.Locale: "delivered",
		receipts.Timezone: "delivered", receipts.Terminal: "delivered",
		receipts.Filesystem: "os", receipts.Network: "os",
	}
	for c, tier := range want {
		if got := o.tierOf(c); got != tier {
			t.Errorf("%s: tier %s, want %s", c, got, tier)
		}
	}
	// os receipts name their mechanism in a deterministic x- member.
	for _, rec := range o.tr.Records {
		p := rec.Payload()
		if tier, _ := p.Get("tier"); rec.Kind != transcript.KindCapability || tier == nil || tier.Str != "os" {
			continue
		}
		if m, ok := p.Get("x-mechanism"); !ok || m.Str == "" {
			t.Errorf("os receipt without x-mechanism: %s", jsonText(p))
		}
	}
	envs := map[string]string{}
	for _, r := range o.tr.Receipts() {
		if r.Delivery != nil {
			for k, v := range r.Delivery.Env {
				envs[k] = v
			}
		}
	}
	for _, k := range []string{"TERMVERIFY_SEED", "TERMVERIFY_CLOCK_INITIAL_MS", "TERMVERIFY_LOCALE", "TERMVERIFY_TIMEZONE", "TZ"} {
		if envs[k] == "" {
			t.Errorf("delivered variables %v lack %s", envs, k)
		}
	}
	inputs := o.inputs()
	if inputs != len(req.Inputs) || o.count(transcript.KindObservation) != inputs+1 {
		t.Errorf("records %v: want %d inputs each closed by an observation, plus readiness", o.kinds, len(req.Inputs))
	}
	last := o.lastObservation()
	if got := jsonText(mustGet(t, last, "process")); got != `{"exit":{"kind":"code","value":0},"state":"exited"}` {
		t.Errorf("final observation process %s", got)
	}
	// The subject saw the sandbox: its working directory is the mapped
	// root's in-sandbox path, and no LANG/LC_* was delivered. (The final
	// observation is the adapter's synthesized one: the state is in the
	// one before it.)
	state := jsonText(mustGet(t, o.tr.Records[len(o.tr.Records)-4].Payload(), "state"))
	if !strings.Contains(state, `"cwd":"/sandbox"`) || strings.Contains(state, "LANG") {
		t.Errorf("subject state %s", state)
	}
	ev, err := os.ReadFile(req.EvidencePath)
	if err != nil {
		t.Fatal(err)
	}
	var e Evidence
	if err := json.Unmarshal(ev, &e); err != nil || e.Backend != "os" || e.Sandbox == nil || len(e.Sandbox.Namespaces) == 0 {
		t.Errorf("evidence %s (%v)", ev, err)
	}

	again := runCase(t, req)
	if !bytes.Equal(o.data, again.data) {
		t.Errorf("second run differs:\n%s\n---\n%s", o.data, again.data)
	}

	// The inputs of the first transcript, run again (as replay does),
	// give the same transcript.
	replay, err := o.tr.Inputs(ModeControl.InputKinds()...)
	if err != nil {
		t.Fatal(err)
	}
	req.Inputs = replay
	if third := runCase(t, req); !bytes.Equal(o.data, third.data) {
		t.Errorf("replayed inputs give a different transcript")
	}
}

func mustGet(t *testing.T, v *canon.Value, name string) *canon.Value {
	t.Helper()
	if v == nil {
		t.Fatalf("no value to read %s from", name)
	}
	x, ok := v.Get(name)
	if !ok {
		t.Fatalf("%s missing in %s", name, jsonText(v))
	}
	return x
}

// TestIsolationNone runs the same subject without namespaces: every
// receipt delivered, a valid transcript.
func TestIsolationNone(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	req := exampleRequest(t)
	req.Isolation = receipts.IsolationNone
	o := runCase(t, req)
	if !o.res.Succeeded() {
		t.Fatalf("result %+v", o.res)
	}
	for _, c := range receipts.Constraints() {
		if got := o.tierOf(c); got != "delivered" {
			t.Errorf("%s: tier %s, want delivered", c, got)
		}
	}
	for _, r := range o.tr.Receipts() {
		if r.Constraint == receipts.Filesystem && (r.Delivery.Cwd != env.root || r.Delivery.Env["TERMVERIFY_FS_ROOT"] != env.root) {
			t.Errorf("filesystem delivery %+v, want the host root %s", r.Delivery, env.root)
		}
	}
}

// TestNetwork: deny and an allow-list to a listener the test starts on
// loopback, both at the os tier, checked from inside by probe-subject.
func TestNetwork(t *testing.T) {
	needSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	target := "127.0.0.1:" + strconv.Itoa(port)
	cases := []struct {
		name  string
		allow bool
		want  string // in the probe's startup result
	}{
		{"deny", false, `"error":"ECONNREFUSED"`},
		{"allow-list", true, `"content":"hello from the host`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := exampleRequest(t)
			req.Isolation = receipts.IsolationOS
			req.Args = []string{"./probe-subject", "net " + target, leakMarker}
			if tc.allow {
				req.Config.Network = config.Network{Mode: config.NetworkAllowList,
					Allowed: []config.HostPort{{Host: "127.0.0.1", Port: int64(port)}}}
			}
			o := runCase(t, req)
			if !o.res.Succeeded() || o.tierOf(receipts.Network) != "os" || o.tierOf(receipts.Filesystem) != "os" {
				t.Fatalf("result %+v, network %s", o.res, o.tierOf(receipts.Network))
			}
			ready := o.tr.Records[8].Payload()
			if got := jsonText(mustGet(t, ready, "state")); !strings.Contains(got, tc.want) {
				t.Errorf("probe state %s, want %s", got, tc.want)
			}
		})
	}
}

// TestUpstreamSubject: a subject written for upstream's JSONL adapter runs
// unchanged under the sandbox (Python, flat regions, upstream's variables).
func TestUpstreamSubject(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("needs /usr/bin/python3: %v", err)
	}
	t.Parallel()
	req := exampleRequest(t)
	req.Args = []string{"/usr/bin/python3", "subject.py", leakMarker}
	o := runCase(t, req)
	if !o.res.Succeeded() || o.tierOf(receipts.Filesystem) != "os" {
		t.Fatalf("result %+v\n%s", o.res, o.data)
	}
	if o.count(transcript.KindObservation) != len(req.Inputs)+1 {
		t.Errorf("records %v", o.kinds)
	}
}

// TestFailures: every code of seed 000's failure taxonomy produced by a real
// subject process, and the other endings a run can have (exits, deadlines,
// budgets, refusals), each asserted on the recorded transcript (which must
// validate).
func TestFailures(t *testing.T) {
	needSandbox(t)
	type check func(t *testing.T, o outcome)
	failed := func(code, failure, phase, during string) check {
		return func(t *testing.T, o outcome) {
			t.Helper()
			if o.res.Outcome != transcript.KindRunFailed || o.errorCode() != code ||
				o.detail("failure") != failure || o.detail("phase") != phase || (during != "" && o.detail("during") != during) {
				t.Errorf("want run.failed %s %s phase %s during %q; got %s %s failure %q phase %q during %q\n%s",
					code, failure, phase, during, o.res.Outcome, o.errorCode(), o.detail("failure"), o.detail("phase"), o.detail("during"), jsonText(o.terminal()))
			}
		}
	}
	start, runtime := transcript.CodeAdapterStartFailed, transcript.CodeAdapterRuntimeFailed
	both := func(cs ...check) check {
		return func(t *testing.T, o outcome) {
			for _, c := range cs {
				c(t, o)
			}
		}
	}
	detail := func(name, want string) check {
		return func(t *testing.T, o outcome) {
			if got := o.detail(name); got != want {
				t.Errorf("details.%s = %q, want %q", name, got, want)
			}
		}
	}
	finished := func(exit string, exitedObservation bool) check {
		return func(t *testing.T, o outcome) {
			t.Helper()
			if o.res.Outcome != transcript.KindRunFinished || jsonText(mustGet(t, o.terminal(), "exit")) != exit {
				t.Fatalf("want run.finished %s, got %s %s", exit, o.res.Outcome, jsonText(o.terminal()))
			}
			p, has := o.lastObservation().Get("process")
			if exitedObservation != (has && strings.Contains(jsonText(p), "exited")) {
				t.Errorf("exited-process observation: want %v, records %v", exitedObservation, o.kinds)
			}
		}
	}
	unsupported := func(c receipts.Constraint, code string) check {
		return func(t *testing.T, o outcome) {
			t.Helper()
			if o.res.Outcome != transcript.KindRunUnsupported || o.res.Refusal.Constraint != c || o.res.Refusal.Code != code {
				t.Errorf("want run.unsupported %s %s, got %+v %+v", c, code, o.res.Outcome, o.res.Refusal)
			}
			if o.tierOf(c) != "unsupported" {
				t.Errorf("receipt %s: %s", c, o.tierOf(c))
			}
		}
	}
	short := func(r *Request) {
		r.Deadlines.Handshake, r.Deadlines.Epoch = 500*time.Millisecond, 500*time.Millisecond
	}
	cases := []struct {
		name  string
		args  []string
		edit  func(*Request)
		check check
	}{
		{"spawn-failed", nil, func(r *Request) { r.Args = []string{"./no-such-subject"} },
			both(failed(start, FailureSpawn, "spawn", "spawn"), detail("status", "127"))},
		{"handshake-timeout silent", []string{"silent"}, short, failed(start, FailureHandshake, "handshake", "read")},
		{"handshake-timeout never reads stdin", []string{"deaf"}, short,
			both(failed(start, FailureHandshake, "handshake", "write"), detail("deadline", "handshake"), detail("deadline_ms", "500"))},
		{"peer-malformed bad json", []string{"bad-json"}, nil, failed(runtime, FailureMalformed, "epoch", "parse")},
		{"peer-malformed bad json in handshake", []string{"bad-json", "hello"}, nil, failed(start, FailureMalformed, "handshake", "parse")},
		{"peer-malformed oversized line", []string{"oversized"}, nil, both(failed(runtime, FailureMalformed, "epoch", "parse"), detail("rule", "limit.line-bytes"))},
		{"peer-malformed duplicate member", []string{"duplicate-member"}, nil, failed(runtime, FailureMalformed, "epoch", "parse")},
		{"peer-malformed lone surrogate", []string{"lone-surrogate"}, nil, failed(runtime, FailureMalformed, "epoch", "parse")},
		{"peer-malformed integer beyond 2^53", []string{"big-int"}, nil, failed(runtime, FailureMalformed, "epoch", "parse")},
		{"peer-malformed 101 diagnostics", []string{"diagnostics", "101"}, nil,
			both(failed(runtime, FailureMalformed, "epoch", "epoch"), detail("rule", "limit.diagnostics"))},
		{"100 diagnostics are fine", []string{"diagnostics", "100"}, nil, finished(`{"kind":"code","value":0}`, true)},
		{"peer-malformed 101 startup diagnostics", []string{"diagnostics", "101", "hello"}, nil, failed(start, FailureMalformed, "handshake", "handshake")},
		{"peer-malformed endless line", []string{"flood"}, nil, both(failed(runtime, FailureMalformed, "epoch", "parse"), detail("rule", "limit.line-bytes"))},
		// The unsolicited observation follows session.ready in a second
		// write. When it is in our buffer or the pipe before input 1 is
		// written, it is caught at once; when the two race, nothing on the
		// wire can tell it from input 1's reply (the protocol has no
		// correlation ids), and the surplus observation is caught after
		// the stop drain's final one. Either way: peer-lifecycle.
		{"peer-lifecycle message while idle", []string{"idle-message"}, nil, func(t *testing.T, o outcome) {
			if o.detail("failure") != FailureLifecycle || !slices.Contains([]string{violIdleMessage, violAfterFinal}, o.detail("violation")) {
				t.Errorf("want peer-lifecycle for the idle observation, got %s", jsonText(o.terminal()))
			}
		}},
		// A maximal control message does not fit a transcript line once
		// the record envelope is added: the budget ends the run first.
		{"flood of maximal lines", []string{"flood-lines"}, nil, both(failed(runtime, FailureBudget, "", ""), detail("limit", "line-bytes"))},
		{"peer-lifecycle second ready", []string{"second-ready"}, nil, both(failed(runtime, FailureLifecycle, "epoch", ""), detail("violation", violSecondReady))},
		{"peer-lifecycle exited observation", []string{"exited-observation"}, nil, both(failed(runtime, FailureLifecycle, "epoch", ""), detail("violation", violExited))},
		{"epoch-timeout hang", []string{"hang"}, short, both(failed(runtime, FailureEpoch, "epoch", "read"), detail("deadline", "epoch"), detail("input", "1"))},
		{"epoch-timeout deaf", []string{"deaf-after-ready"}, short, failed(runtime, FailureEpoch, "epoch", "write")},
		{"run deadline", []string{"hang"}, func(r *Request) { r.Deadlines.Run = 1500 * time.Millisecond; r.Deadlines.Epoch = time.Minute },
			both(failed(runtime, FailureEpoch, "epoch", "read"), detail("deadline", "run"))},
		{"exit while idle", []string{"exit-idle"}, nil, func(t *testing.T, o outcome) {
			if o.res.Outcome != transcript.KindRunFinished || jsonText(mustGet(t, o.terminal(), "exit")) != `{"kind":"code","value":0}` {
				t.Errorf("want run.finished with the OS exit 0, got %s", jsonText(o.terminal()))
			}
		}},
		{"exit mid-epoch", []string{"exit-mid-epoch", "3"}, nil, finished(`{"kind":"code","value":3}`, true)},
		{"crash", []string{"crash"}, nil, finished(`{"kind":"signal","value":"ABRT"}`, true)},
		{"wrong exit claim", []string{"wrong-exit"}, nil, both(finished(`{"kind":"code","value":0}`, true), func(t *testing.T, o outcome) {
			if !bytes.Contains(o.data, []byte(`"code":"exit-record-mismatch","details":{"claimed":{"kind":"code","value":7},"observed":{"kind":"code","value":0}}`)) {
				t.Errorf("no exit-record-mismatch diagnostic:\n%s", o.data)
			}
		})},
		{"daemon dies with the run", []string{"daemon"}, nil, finished(`{"kind":"code","value":0}`, true)},
		{"timezone other than UTC", nil, func(r *Request) { r.Config.Timezone = "Europe/Berlin" }, unsupported(receipts.Timezone, receipts.CodeUnsupported)},
		{"terminal capabilities", nil, func(r *Request) { r.Config.Terminal.Capabilities = []string{"ansi"} }, unsupported(receipts.Terminal, receipts.CodeUnsupported)},
		{"require network os with isolation none", nil, func(r *Request) {
			r.Isolation = receipts.IsolationNone
			r.Require = map[receipts.Constraint]receipts.Tier{receipts.Network: receipts.OS}
		}, unsupported(receipts.Network, receipts.CodeNotEnforced)},
		{"unmapped root", nil, func(r *Request) { r.Roots = map[string]string{} }, unsupported(receipts.Filesystem, receipts.CodeUnsupported)},
		{"subject refuses a constraint", []string{"unsupported"}, nil, unsupported(receipts.Terminal, receipts.CodeUnsupported)},
		{"subject fails to start", []string{"failed"}, nil, both(failed(start, "", "", ""), func(t *testing.T, o outcome) {
			if o.detail("subject-code") != "echo-subject-failed" {
				t.Errorf("details %s", jsonText(o.terminal()))
			}
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := exampleRequest(t, tc.args...)
			if tc.edit != nil {
				tc.edit(&req)
			}
			o := runCase(t, req)
			tc.check(t, o)
		})
	}
}

// TestStderr: --stderr receives the subject's stderr; the evidence file
// carries its head; the transcript is untouched by it.
func TestStderr(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	dir := t.TempDir()
	req := exampleRequest(t, "stderr")
	req.StderrPath, req.EvidencePath = filepath.Join(dir, "stderr.txt"), filepath.Join(dir, "evidence.json")
	o := runCase(t, req)
	if !o.res.Succeeded() {
		t.Fatalf("result %+v", o.res)
	}
	b, _ := os.ReadFile(req.StderrPath)
	if !bytes.Contains(b, []byte("echo-subject: stderr line 0")) {
		t.Errorf("stderr file %q", b)
	}
	ev, _ := os.ReadFile(req.EvidencePath)
	if !bytes.Contains(ev, []byte("stderr line 0")) {
		t.Errorf("evidence lacks stderr: %s", ev)
	}
}

// TestNothingSentUnrecorded: when the transcript runs out of room, the
// subject has been sent exactly the inputs the transcript records. Sending
// an input before its records are written (session.sendFirst) gives way to
// the plain order wherever a Writer refusal is possible: near the end of
// the transcript's 32 MiB, and for a line near the 4 MiB record limit.
func TestNothingSentUnrecorded(t *testing.T) {
	needSandbox(t)
	key := input.Key{Keys: []string{"Control", "c"}}
	keys := make([]input.Input, 1500)
	for i := range keys {
		keys[i] = key
	}
	keys[len(keys)-1] = input.Stop{}
	// Control characters take 6 bytes on the wire: a line just under 4 MiB,
	// whose record (envelope, at_ms, run id) is just over.
	long := input.Text{Text: strings.Repeat("\x01", (canon.MaxLineBytes-120)/6)}
	cases := []struct {
		name   string
		inputs []input.Input
		edit   func(*Request)
		limit  transcript.Limit
		sent   int // inputs sent and recorded; -1: over 1,000
	}{
		// ~30 KB per observation: ~1,100 of them fill the transcript.
		{"observations fill the transcript", keys, func(r *Request) { r.Config.Terminal.Columns, r.Config.Terminal.Rows = 300, 100 },
			transcript.LimitTranscriptBytes, -1},
		{"an input line over the record limit", []input.Input{key, long, input.Stop{}}, nil, transcript.LimitLineBytes, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := exampleRequest(t, "stderr")
			req.Inputs = tc.inputs
			if tc.edit != nil {
				tc.edit(&req)
			}
			req.StderrPath = filepath.Join(t.TempDir(), "stderr.txt")
			o := runCase(t, req)
			if o.res.Outcome != transcript.KindRunFailed || o.detail("failure") != FailureBudget || o.detail("limit") != string(tc.limit) {
				t.Fatalf("want the %s budget failure, got %s", tc.limit, jsonText(o.terminal()))
			}
			// The subject writes "after N inputs" to stderr on each input it reads.
			b, err := os.ReadFile(req.StderrPath)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, m := range regexp.MustCompile(`after (\d+) inputs`).FindAllSubmatch(b, -1) {
				n, _ := strconv.Atoi(string(m[1]))
				seen = max(seen, n)
			}
			recorded := o.inputs()
			if seen != recorded || (tc.sent >= 0 && recorded != tc.sent) || (tc.sent < 0 && recorded < 1000) {
				t.Errorf("the subject read %d inputs, the transcript records %d", seen, recorded)
			}
		})
	}
}

// TestUsage: a bad request or script is refused before anything starts.
func TestUsage(t *testing.T) {
	bad := []string{
		`{"kind":"input.mouse","payload":{"action":"move","column":1,"row":1}}`,
		`{"kind":"input.key","payload":{"keys":["c","Control"]}}`,
		`{"kind":"input.clock_advanced","payload":{"delta_ms":0}}`,
		`{"kind":"input.text","payload":{"text":"a","text":"b"}}`,
		`{"kind":"input.stop","payload":{}}` + "\n" + `{"kind":"input.text","payload":{"text":"late"}}`,
		`{"kind":"input.text","payload":{"at_ms":0,"text":"a"}}`,
	}
	for _, line := range bad {
		_, err := ParseInputs(strings.NewReader(`{"kind":"input.text","payload":{"text":"ok"}}`+"\n"+line+"\n"), ModeControl)
		se, ok := errors.AsType[*input.Error](err)
		if !ok || se.Line < 2 {
			t.Errorf("%s: %v, want an *input.Error naming line 2 or later", line, err)
		}
	}
	if _, err := ParseRunFile([]byte(`{"run_id":"r","config":{},"subject":{}}`)); err == nil {
		t.Error("empty config accepted")
	}
	rf, err := os.ReadFile("../examples/request.json")
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Replace(rf, []byte(`"subject": {`), []byte(`"subject": {"adapter": {"id": "termverify.jsonl", "version": "1"},`), 1)
	if _, err := ParseRunFile(other); err == nil || !strings.Contains(err.Error(), "adapter") {
		t.Errorf("another adapter: %v", err)
	}
	req := Request{RunID: "Bad Id", Args: []string{"x"}, TranscriptPath: "x"}
	if _, err := Run(t.Context(), req); err == nil {
		t.Error("bad run id accepted")
	}
}

// Wire lines for the shell subjects of TestImprovements.
const (
	readyLine  = `{"protocol":"termverify.control/v1","kind":"session.ready","payload":{"observation":{"state":null,"ui":{"regions":[],"cursor":{"column":0,"row":0,"visible":false}},"events":[]}}}`
	obsLine    = `{"protocol":"termverify.control/v1","kind":"observation","payload":{"state":null,"ui":{"regions":[{"id":"r","role":"log","column":0,"row":0,"columns":2,"rows":1}],"cursor":{"column":0,"row":0,"visible":false}},"events":[]}}`
	diagLine   = `{"protocol":"termverify.control/v1","kind":"diagnostic","payload":{"code":"note","message":"m"}}`
	unsupLine  = `{"protocol":"termverify.control/v1","kind":"session.unsupported","payload":{"constraint":"locale","code":"constraint-unsupported","message":"no locales here"}}`
	finishLine = `{"protocol":"termverify.control/v1","kind":"run.finished","payload":{"exit":{"kind":"code","value":0}}}`
)

// TestImprovements covers ADAPTER-RULES.md's "where ours must be better"
// items that the echo subject's modes do not, with small shell subjects.
func TestImprovements(t *testing.T) {
	needSandbox(t)
	cases := []struct {
		name   string
		script string
		edit   func(*Request)
		check  func(t *testing.T, o outcome)
	}{
		{"4: a very long digit string is peer-malformed",
			`read h; echo '` + readyLine + `'; read i; printf '%s' '{"protocol":"termverify.control/v1","kind":"observation","payload":{"state":{"n":'; head -c 200000 /dev/zero | tr '\0' 1; echo '},"ui":{"regions":[],"cursor":{"column":0,"row":0,"visible":false}},"events":[]}}'; sleep 5`,
			nil, func(t *testing.T, o outcome) {
				if o.detail("failure") != FailureMalformed {
					t.Errorf("got %s", jsonText(o.terminal()))
				}
			}},
		{"5: the epoch deadline bounds the whole epoch, not each message",
			`read h; echo '` + readyLine + `'; read i; while :; do echo '` + diagLine + `'; sleep 0.2; done`,
			func(r *Request) { r.Deadlines.Epoch = time.Second }, func(t *testing.T, o outcome) {
				if o.detail("failure") != FailureEpoch || o.detail("during") != "read" || o.count(transcript.KindDiagnostic) > 10 {
					t.Errorf("got %s after %d diagnostics", jsonText(o.terminal()), o.count(transcript.KindDiagnostic))
				}
			}},
		{"6: diagnostics before session.unsupported are peer-lifecycle",
			`read h; echo '` + diagLine + `'; echo '` + unsupLine + `'`,
			nil, func(t *testing.T, o outcome) {
				if o.errorCode() != transcript.CodeAdapterStartFailed || o.detail("violation") != violDiagBeforeReply || o.count(transcript.KindCapability) != 7 {
					t.Errorf("got %v %s", o.kinds, jsonText(o.terminal()))
				}
			}},
		{"session.unsupported alone is the truer record: the refused receipt unsupported",
			`read h; echo '` + unsupLine + `'`,
			nil, func(t *testing.T, o outcome) {
				want := []string{"run.started", "capability.result", "capability.result", "capability.result", "run.unsupported"}
				if !slices.Equal(o.kinds, want) || o.tierOf(receipts.Locale) != "unsupported" || o.res.Refusal.Code != "constraint-unsupported" {
					t.Errorf("records %v, refusal %+v", o.kinds, o.res.Refusal)
				}
			}},
		{"2: traffic after a terminal message is peer-lifecycle",
			`read h; echo '` + readyLine + `'; read i; echo '` + obsLine + `'; read s; echo '` + finishLine + `'; echo '` + diagLine + `'`,
			func(r *Request) { r.Inputs = []input.Input{input.Text{Text: "x"}} }, func(t *testing.T, o outcome) {
				if o.detail("violation") != violAfterTerminal {
					t.Errorf("got %s", jsonText(o.terminal()))
				}
			}},
		{"a terminal message while idle ends the run truthfully",
			`read h; echo '` + readyLine + `'; read i; echo '` + obsLine + `'; echo '` + finishLine + `'`,
			func(r *Request) {
				r.Inputs = []input.Input{input.Text{Text: "x"}, input.Text{Text: "y"}}
			}, func(t *testing.T, o outcome) {
				if o.res.Outcome != transcript.KindRunFinished {
					t.Errorf("got %v %s", o.kinds, jsonText(o.terminal()))
				}
			}},
		{"an idle exit claim that differs from the OS exit is kept in x-claimed-exit",
			// One printf, one write: the claim is already buffered when the
			// observation closes the epoch, so it arrives while idle.
			`read h; echo '` + readyLine + `'; read i; printf '%s\n%s\n' '` + obsLine + `' '` + strings.Replace(finishLine, `"value":0`, `"value":7`, 1) + `'`,
			func(r *Request) {
				r.Inputs = []input.Input{input.Text{Text: "x"}, input.Text{Text: "y"}}
			}, func(t *testing.T, o outcome) {
				claimed, ok := o.terminal().Get("x-claimed-exit")
				if o.res.Outcome != transcript.KindRunFinished || o.res.Exit.Code != 0 || !ok || jsonText(claimed) != `{"kind":"code","value":7}` {
					t.Errorf("got %v %s", o.kinds, jsonText(o.terminal()))
				}
			}},
		{"1: exit while idle is run.finished with the OS exit",
			`read h; echo '` + readyLine + `'; read i; echo '` + obsLine + `'; exit 5`,
			func(r *Request) {
				r.Inputs = []input.Input{input.Text{Text: "x"}, input.Text{Text: "y"}}
			}, func(t *testing.T, o outcome) {
				if o.res.Outcome != transcript.KindRunFinished || o.res.Exit.Code != 5 {
					t.Errorf("got %v %s", o.kinds, jsonText(o.terminal()))
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := exampleRequest(t)
			req.Args = []string{"/bin/sh", "-c", tc.script, leakMarker}
			if tc.edit != nil {
				tc.edit(&req)
			}
			tc.check(t, runCase(t, req))
		})
	}
	t.Run("7: a setsid daemon does not survive the run", func(t *testing.T) {
		t.Parallel()
		o := runCase(t, exampleRequest(t, "daemon"))
		if !o.res.Succeeded() {
			t.Fatalf("result %+v", o.res)
		}
		if pids := waitGone("__echo-subject-daemon-sleep", 2*time.Second); len(pids) > 0 {
			t.Errorf("daemon survived: %v", pids)
		}
	})
}

// TestSweepErrorRecorded: a stale entry the start-up sweep cannot remove
// (here a mount inside it) does not stop the run, and the evidence says so.
func TestSweepErrorRecorded(t *testing.T) {
	needSandbox(t)
	req := exampleRequest(t)
	req.Isolation = receipts.IsolationNone
	req.StateDir = t.TempDir() // its own: the sweep must not meet other tests' entries
	req.EvidencePath = filepath.Join(t.TempDir(), "evidence.json")
	stale := filepath.Join(req.StateDir, "tvs-stale")
	if err := os.MkdirAll(filepath.Join(stale, "busy"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A dead owner: pid 1 with a start time it cannot have.
	if err := os.WriteFile(filepath.Join(stale, "owner"), []byte("1 999999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(stale, "busy"), "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs to make the entry unremovable: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(stale, "busy"), unix.MNT_DETACH) })
	o := runCase(t, req)
	if !o.res.Succeeded() {
		t.Fatalf("result %+v", o.res)
	}
	data, err := os.ReadFile(req.EvidencePath)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		SweepError string   `json:"sweep_error"`
		SweptStale []string `json:"swept_stale"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.SweepError, "tvs-stale") || len(ev.SweptStale) != 0 {
		t.Errorf("evidence sweep_error %q, swept %v: want the stale entry named", ev.SweepError, ev.SweptStale)
	}
}
