package supervisor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// shRequest is the example request in PTY mode on a 40x8 terminal: the
// shell script runs as sh -c in the sandbox (the leak marker is its $0),
// with the inputs given as JSONL lines.
func shRequest(t *testing.T, script string, inputs ...string) Request {
	t.Helper()
	req := exampleRequest(t)
	req.PTY = true
	req.Isolation = receipts.IsolationOS
	req.Config.Terminal.Columns, req.Config.Terminal.Rows = 40, 8
	req.Args = []string{"/bin/sh", "-c", script, leakMarker}
	in, err := ParseInputs(strings.NewReader(strings.Join(inputs, "\n")+"\n"), ModePTY)
	if err != nil {
		t.Fatal(err)
	}
	req.Inputs = in
	return req
}

// observationPayloads returns the observation payloads of o in order.
func observationPayloads(o outcome) []*canon.Value {
	var out []*canon.Value
	for i := range o.tr.Records {
		if o.tr.Records[i].Kind == transcript.KindObservation {
			out = append(out, o.tr.Records[i].Payload())
		}
	}
	return out
}

// frameLines returns an observation's frame lines.
func frameLines(t *testing.T, obs *canon.Value) []string {
	t.Helper()
	f, ok := obs.Get("frame")
	if !ok {
		t.Fatalf("observation without a frame: %s", jsonText(obs))
	}
	ls, _ := f.Get("lines")
	var out []string
	for _, l := range ls.Items {
		out = append(out, l.Str)
	}
	return out
}

// diagnosticCodes lists the codes of o's diagnostics in order.
func diagnosticCodes(o outcome) []string {
	var out []string
	for i := range o.tr.Records {
		if o.tr.Records[i].Kind == transcript.KindDiagnostic {
			c, _ := o.tr.Records[i].Payload().Get("code")
			out = append(out, c.Str)
		}
	}
	return out
}

func TestPTYEpochs(t *testing.T) {
	needSandbox(t)
	req := shRequest(t, `printf 'ready\n'; exec cat`,
		`{"kind":"input.text","payload":{"text":"hello"}}`,
		`{"kind":"input.key","payload":{"keys":["Enter"]}}`,
		`{"kind":"input.resize","payload":{"columns":40,"rows":8}}`,
		`{"kind":"input.resize","payload":{"columns":30,"rows":6}}`,
		`{"kind":"input.mouse","payload":{"action":"press","button":"left","column":1,"row":1}}`,
		`{"kind":"input.clipboard_set","payload":{"text":"clip"}}`,
		`{"kind":"input.clock_advanced","payload":{"delta_ms":5}}`,
		`{"kind":"input.stop","payload":{}}`,
	)
	o := runCase(t, req)
	if o.res.Outcome != transcript.KindRunFinished || o.res.Exit.Signal != "HUP" {
		t.Fatalf("outcome %s exit %+v, want run.finished by SIGHUP (cat ends on the hangup)\n%s", o.res.Outcome, o.res.Exit, o.data)
	}
	for _, c := range receipts.Constraints() {
		want := "delivered"
		switch c {
		case receipts.Terminal, receipts.Filesystem, receipts.Network:
			want = "os"
		}
		if got := o.tierOf(c); got != want {
			t.Errorf("%s receipt %s, want %s", c, got, want)
		}
	}
	if !bytes.Contains(o.data, []byte(`"x-mechanism":"sandbox-devpts-pty"`)) {
		t.Errorf("the terminal receipt does not name its mechanism")
	}
	obs := observationPayloads(o)
	// Readiness, one per input, the exit (the stop's).
	if len(obs) != 1+7+1 {
		t.Fatalf("%d observations, want 9\n%s", len(obs), o.data)
	}
	want := [][]string{
		{"ready"},
		{"ready", "hello"},
		{"ready", "hello", "hello"},
		{"ready", "hello", "hello"},
		{"ready", "hello", "hello"},
	}
	for i, w := range want {
		got := frameLines(t, obs[i])
		if len(got) < 6 || strings.Join(got[:len(w)], "|") != strings.Join(w, "|") {
			t.Errorf("observation %d frame %q, want it to start %q", i, got, w)
		}
	}
	// The resize to 30x6 shows in the frame's geometry and the state.
	if got := jsonText(mustGet(t, obs[4], "state")); got != `{"terminal":{"columns":30,"rows":6}}` {
		t.Errorf("state after the resize %s", got)
	}
	if n := len(frameLines(t, obs[4])); n != 6 {
		t.Errorf("frame after the resize has %d lines, want 6", n)
	}
	if got := jsonText(mustGet(t, obs[1], "events")); got != `[{"data":{"chunk":"hello"},"type":"terminal.output"}]` {
		t.Errorf("events after the text %s", got)
	}
	if got := jsonText(mustGet(t, obs[0], "ui")); got != `{"cursor":{"column":0,"row":1,"visible":true},"focus":null,"mode":"normal","regions":[]}` {
		t.Errorf("readiness ui %s", got)
	}
	if codes := diagnosticCodes(o); len(codes) != 1 || codes[0] != DiagMouseOff {
		t.Errorf("diagnostics %q, want only %s (cat enables no mouse)", codes, DiagMouseOff)
	}
	last := obs[len(obs)-1]
	if got := jsonText(mustGet(t, last, "process")); got != `{"exit":{"kind":"signal","value":"HUP"},"state":"exited"}` {
		t.Errorf("last observation's process %s", got)
	}

	// The same program and inputs: the same transcript, byte for byte.
	if again := runCase(t, req); !bytes.Equal(o.data, again.data) {
		t.Errorf("a second run differs:\n%s\n---\n%s", o.data, again.data)
	}
}

// pyProgram writes a Python program into the shared root and returns its
// in-sandbox path; the tests skip where the host has no /usr/bin/python3
// (the sandbox sees the host's /usr).
func pyProgram(t *testing.T, name, src string) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("/usr/bin/python3 not installed: %v", err)
	}
	if err := os.WriteFile(filepath.Join(env.root, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestPTYFailures(t *testing.T) {
	needSandbox(t)
	stopped := pyProgram(t, "stops-reading.py", `import os, select, time, tty
tty.setraw(0)
os.write(1, b"go")
os.read(0, 1)
select.select([0], [], [])
time.sleep(1000)
`)
	ends := pyProgram(t, "ends-while-written.py", `import os, sys, time, tty
tty.setraw(0)
os.write(1, b"go")
os.read(0, 1)
time.sleep(0.3)
sys.exit(5)
`)
	big := strings.Repeat("x", 1<<20)
	cases := []struct {
		name    string
		script  string
		inputs  []string
		outcome string
		code    string // run.failed's error code
		failure string // its details.failure
		during  string // its details.during
		expired string // its details.deadline: which deadline fired
		exit    string // run.finished's exit, as JSON
		diag    string // a diagnostic code the transcript must hold
		frame   string // text the last observation's frame must hold
		once    bool   // diag appears exactly once
		size    [2]int64
	}{
		{
			name:    "never waits for input",
			script:  `while :; do :; done`,
			outcome: transcript.KindRunFailed, code: transcript.CodeAdapterStartFailed,
			failure: FailureHandshake, expired: "handshake", diag: DiagNotWaiting,
		},
		{
			name:    "ends before it waits",
			script:  `echo done early; exit 4`,
			inputs:  []string{`{"kind":"input.text","payload":{"text":"never sent"}}`},
			outcome: transcript.KindRunFinished, exit: `{"kind":"code","value":4}`, frame: "done early",
		},
		{
			name:    "exits mid-epoch",
			script:  `read x; echo "got $x"; exit 3`,
			inputs:  []string{`{"kind":"input.text","payload":{"text":"abc"}}`, `{"kind":"input.key","payload":{"keys":["Enter"]}}`, `{"kind":"input.text","payload":{"text":"never"}}`},
			outcome: transcript.KindRunFinished, exit: `{"kind":"code","value":3}`, frame: "got abc",
		},
		{
			name:    "stops working mid-epoch",
			script:  `read x; while :; do :; done`,
			inputs:  []string{`{"kind":"input.key","payload":{"keys":["Enter"]}}`},
			outcome: transcript.KindRunFailed, code: transcript.CodeAdapterRuntimeFailed,
			failure: FailureEpoch, during: "read", expired: "epoch", diag: DiagNotWaiting,
		},
		{
			name:    "100 MiB of output",
			script:  `read x; head -c 104857600 /dev/zero | tr '\0' a; read y`,
			inputs:  []string{`{"kind":"input.key","payload":{"keys":["Enter"]}}`},
			outcome: transcript.KindRunFailed, code: transcript.CodeAdapterRuntimeFailed, failure: FailureBudget,
		},
		{
			name:    "stops reading while a large text is written",
			script:  `exec /usr/bin/python3 ` + stopped,
			inputs:  []string{`{"kind":"input.text","payload":{"text":"x"}}`, `{"kind":"input.text","payload":{"text":"` + big + `"}}`},
			outcome: transcript.KindRunFailed, code: transcript.CodeAdapterRuntimeFailed,
			failure: FailureEpoch, during: "write", expired: "epoch",
		},
		{
			name:    "ends while a large text is written",
			script:  `exec /usr/bin/python3 ` + ends,
			inputs:  []string{`{"kind":"input.text","payload":{"text":"` + big + `"}}`},
			outcome: transcript.KindRunFinished, exit: `{"kind":"code","value":5}`,
		},
		{
			// Output past the budget after the hangup must not pass for
			// a quiet point: the stop's wait would spin past every
			// deadline and SIGINT.
			name:    "floods after the hangup",
			script:  `trap 'head -c 3000000 /dev/zero | tr "\0" x; exit 0' HUP; read x; sleep 30`,
			outcome: transcript.KindRunFailed, code: transcript.CodeAdapterRuntimeFailed, failure: FailureBudget,
		},
		{
			// After the exit the terminal is read to its end, not once:
			// a single bounded read would lose the end of output the
			// emulator is slow on.
			name:    "exits with slow output left",
			script:  `read x; yes "$(printf '\033#8')" | head -n 15000 | tr -d '\n'; printf '\033[HEND'; exit 3`,
			inputs:  []string{`{"kind":"input.key","payload":{"keys":["Enter"]}}`},
			outcome: transcript.KindRunFinished, exit: `{"kind":"code","value":3}`, frame: "END", size: [2]int64{200, 50},
		},
		{
			name:    "ignores the hangup",
			script:  `trap '' HUP; while read x; do :; done`,
			outcome: transcript.KindRunFinished, exit: `{"kind":"signal","value":"KILL"}`, diag: DiagStopGraceKilled,
		},
		{
			name:    "unencodable chord",
			script:  `exec cat`,
			inputs:  []string{`{"kind":"input.key","payload":{"keys":["Control","Enter"]}}`},
			outcome: transcript.KindRunFailed, code: transcript.CodeAdapterRuntimeFailed, failure: FailureInput,
		},
		{
			name:    "resizes its own terminal",
			script:  `read x; stty cols 20 rows 4; read y; read z`,
			inputs:  []string{`{"kind":"input.key","payload":{"keys":["Enter"]}}`, `{"kind":"input.key","payload":{"keys":["Enter"]}}`},
			outcome: transcript.KindRunFinished, diag: DiagSizeChanged, once: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := shRequest(t, tc.script, tc.inputs...)
			req.Deadlines = Deadlines{Handshake: 2 * time.Second, Epoch: 2 * time.Second, Run: 60 * time.Second}
			if tc.size != [2]int64{} {
				req.Config.Terminal.Columns, req.Config.Terminal.Rows = tc.size[0], tc.size[1]
			}
			began := time.Now()
			o := runCase(t, req)
			took := time.Since(began)
			if o.res.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s\n%.3000s", o.res.Outcome, tc.outcome, o.data)
			}
			if tc.code != "" && o.errorCode() != tc.code {
				t.Errorf("error code %s, want %s", o.errorCode(), tc.code)
			}
			if tc.failure != "" && o.detail("failure") != tc.failure {
				t.Errorf("failure %s, want %s", o.detail("failure"), tc.failure)
			}
			if tc.during != "" && o.detail("during") != tc.during {
				t.Errorf("during %s, want %s", o.detail("during"), tc.during)
			}
			if tc.expired != "" {
				// The phase's own deadline, not the run's: a wait bounded
				// only by the run would end as late as the run does.
				ms := strconv.FormatInt(req.Deadlines.Epoch.Milliseconds(), 10)
				if tc.expired == "handshake" {
					ms = strconv.FormatInt(req.Deadlines.Handshake.Milliseconds(), 10)
				}
				if o.detail("deadline") != tc.expired || o.detail("deadline_ms") != ms {
					t.Errorf("deadline %s (%s ms), want %s (%s ms)", o.detail("deadline"), o.detail("deadline_ms"), tc.expired, ms)
				}
				// The details name the phase whose deadline had passed
				// when the wait ended; only the time says the wait ended
				// then. Half the run's deadline leaves a loaded machine
				// ample slack over the phase's 2 s.
				if took >= req.Deadlines.Run/2 {
					t.Errorf("the run took %v: the wait was not bounded by the %s deadline (%s ms)", took.Round(time.Second), tc.expired, ms)
				}
			}
			if tc.exit != "" {
				if got := jsonText(mustGet(t, o.terminal(), "exit")); got != tc.exit {
					t.Errorf("exit %s, want %s", got, tc.exit)
				}
			}
			if tc.diag != "" && !strings.Contains(strings.Join(diagnosticCodes(o), " "), tc.diag) {
				t.Errorf("diagnostics %q lack %s", diagnosticCodes(o), tc.diag)
			}
			if n := strings.Count(strings.Join(diagnosticCodes(o), " "), tc.diag); tc.once && n != 1 {
				t.Errorf("%s recorded %d times, want once: %q", tc.diag, n, diagnosticCodes(o))
			}
			if tc.frame != "" {
				last := o.lastObservation()
				if last == nil {
					t.Fatalf("no observation")
				}
				if lines := frameLines(t, last); !strings.Contains(strings.Join(lines, "\n"), tc.frame) {
					t.Errorf("last frame lacks %q; its first line: %.80q", tc.frame, lines[0])
				}
			}
			if len(o.data) > 4<<20 {
				t.Errorf("the transcript is %d bytes: the flood reached it", len(o.data))
			}
		})
	}
}

func TestPTYRefusals(t *testing.T) {
	needSandbox(t)
	cases := []struct {
		name  string
		edit  func(*Request)
		code  string
		state string // the terminal receipt
	}{
		{"isolation none", func(r *Request) { r.Isolation = receipts.IsolationNone }, receipts.CodeUnsupported, "unsupported"},
		{"capabilities", func(r *Request) { r.Config.Terminal.Capabilities = []string{"x-colour"} }, receipts.CodeUnsupported, "unsupported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := shRequest(t, `exec cat`)
			tc.edit(&req)
			o := runCase(t, req)
			if o.res.Outcome != transcript.KindRunUnsupported || o.res.Refusal.Constraint != receipts.Terminal || o.res.Refusal.Code != tc.code {
				t.Fatalf("outcome %s %+v, want run.unsupported terminal %s\n%s", o.res.Outcome, o.res.Refusal, tc.code, o.data)
			}
			if got := o.tierOf(receipts.Terminal); got != tc.state {
				t.Errorf("terminal receipt %s, want %s", got, tc.state)
			}
			if len(o.res.Sandboxes) != 0 {
				t.Errorf("a refused run started sandboxes %v", o.res.Sandboxes)
			}
		})
	}
	t.Run("require terminal os", func(t *testing.T) {
		req := shRequest(t, `exec cat`)
		req.Require = map[receipts.Constraint]receipts.Tier{receipts.Terminal: receipts.OS}
		if o := runCase(t, req); o.res.Outcome != transcript.KindRunFinished || o.tierOf(receipts.Terminal) != "os" {
			t.Errorf("outcome %s terminal %s, want run.finished with os", o.res.Outcome, o.tierOf(receipts.Terminal))
		}
	})
	t.Run("usage", func(t *testing.T) {
		dir := t.TempDir()
		req := shRequest(t, `exec cat`)
		req.TranscriptPath = filepath.Join(dir, "t.jsonl")
		req.StderrPath = filepath.Join(dir, "stderr")
		if _, err := Run(t.Context(), req); err == nil || !strings.Contains(err.Error(), "PTY mode") {
			t.Errorf("--stderr with --pty: %v", err)
		}
		req = shRequest(t, `exec cat`)
		req.TranscriptPath = filepath.Join(dir, "t.jsonl")
		req.Config.Terminal.Columns = 100000
		if _, err := Run(t.Context(), req); err == nil || !strings.Contains(err.Error(), "at most") {
			t.Errorf("a terminal too wide: %v", err)
		}
	})
}

// TestPTYForkBomb: a fork bomb on the terminal is contained by the pids
// limit and leaves nothing behind; only where that limit is enforced.
func TestPTYForkBomb(t *testing.T) {
	needSandbox(t)
	probe := shRequest(t, `exec cat`)
	box, err := sandbox.Start(t.Context(), buildSpec(&plan{Request: probe, adapter: ptyAdapter{}}, sandbox.IsolationOS, receipts.Outcome{Env: map[string]string{}}, stdio{}))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	unenforced := box.Applied().Unenforced()
	_ = box.Kill()
	noteSandboxes([]string{box.ID()})
	if err := box.Destroy(); err != nil {
		t.Fatal(err)
	}
	for _, m := range unenforced {
		if strings.Contains(m.Name, "pids") {
			t.Skipf("the pids limit is not enforced here (%s): a fork bomb would not be contained", m.Reason)
		}
	}
	req := shRequest(t, `read x; b() { b | b & }; b; read y`,
		`{"kind":"input.key","payload":{"keys":["Enter"]}}`)
	req.Deadlines = Deadlines{Handshake: 2 * time.Second, Epoch: 2 * time.Second, Run: 60 * time.Second}
	o := runCase(t, req)
	// Whether the bomb's epoch closes (every fork refused, the shell back
	// at its read) or times out, the run ends and nothing survives it
	// (TestMain's leak check).
	if o.res.Outcome == transcript.KindRunUnsupported {
		t.Fatalf("outcome %s\n%s", o.res.Outcome, o.data)
	}
}

// TestPTYReadyMarker: upstream's opt-in readiness marker closes epochs
// instead of quiesce. Its token is random per run and the marker never
// reaches the screen or the transcript, so input echo cannot forge it
// (not even the line discipline's editing: XOFF/XON not echoed, ^R
// reprinting a line) and two runs give the same bytes. Typed text holding
// the marker's prefix is
// refused before anything starts, even split across inputs.
func TestPTYReadyMarker(t *testing.T) {
	needSandbox(t)
	script := `printf '%s\n' "$TERMVERIFY_READY_MARKER"; while read x; do echo "got $x"; sleep 0.1; printf 'A%sB\n' "$TERMVERIFY_READY_MARKER"; done`
	req := shRequest(t, script,
		`{"kind":"input.text","payload":{"text":"abc\n"}}`,
		`{"kind":"input.stop","payload":{}}`)
	req.ReadyMarker = true
	o := runCase(t, req)
	if o.res.Outcome != transcript.KindRunFinished {
		t.Fatalf("outcome %s\n%s", o.res.Outcome, o.data)
	}
	obs := observationPayloads(o)
	if len(obs) != 3 {
		t.Fatalf("%d observations, want readiness, the epoch, the exit\n%s", len(obs), o.data)
	}
	if bytes.Contains(o.data, []byte("termverify.ready")) {
		t.Errorf("the marker reached the transcript:\n%s", o.data)
	}
	// The epoch closed at the marker printed after the answer, which the
	// screen shows without it.
	if got := strings.Join(frameLines(t, obs[1]), "|"); !strings.Contains(got, "got abc|AB") {
		t.Errorf("epoch frame %q, want the answer and then AB (the marker taken out)", got)
	}
	if again := runCase(t, req); !bytes.Equal(o.data, again.data) {
		t.Errorf("two runs differ:\n%s\n---\n%s", o.data, again.data)
	}

	for _, tc := range []struct {
		name   string
		inputs []string
	}{
		{"one text", []string{`{"kind":"input.text","payload":{"text":"x <<termverify.ready:y>>"}}`}},
		{"split texts", []string{`{"kind":"input.text","payload":{"text":"<<termverify."}}`, `{"kind":"input.key","payload":{"keys":["Enter"]}}`, `{"kind":"input.text","payload":{"text":"ready:z>>"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := shRequest(t, `exec cat`, tc.inputs...)
			req.ReadyMarker = true
			req.TranscriptPath = filepath.Join(t.TempDir(), "t.jsonl")
			if _, err := Run(t.Context(), req); err == nil || !strings.Contains(err.Error(), "readiness marker") {
				t.Errorf("want a refusal naming the readiness marker, got %v", err)
			}
		})
	}
	t.Run("needs pty", func(t *testing.T) {
		req := exampleRequest(t)
		req.ReadyMarker = true
		req.TranscriptPath = filepath.Join(t.TempDir(), "t.jsonl")
		if _, err := Run(t.Context(), req); err == nil || !strings.Contains(err.Error(), "--pty") {
			t.Errorf("want a refusal naming --pty, got %v", err)
		}
	})
}
