package supervisor

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// synthesizedExit is upstream's synthesized exited-process observation
// with exit code 0 and at_ms 0, as recorded: no state, no events, an
// empty UI with the cursor at 0,0 and not visible, and the OS exit.
const synthesizedExit = `{"at_ms":0,"events":[],"process":{"exit":{"kind":"code","value":0},"state":"exited"},"state":null,` +
	`"ui":{"cursor":{"column":0,"row":0,"visible":false},"focus":null,"mode":null,"regions":[]}}`

// afterStop returns the kinds of the records after input.stop, and the
// payloads of the observations among them.
func (o outcome) afterStop(t *testing.T) (kinds, observations []string) {
	t.Helper()
	i := slices.Index(o.kinds, transcript.KindInputStop)
	if i < 0 {
		t.Fatalf("no input.stop in %v", o.kinds)
	}
	for _, r := range o.tr.Records[i+1:] {
		kinds = append(kinds, r.Kind)
		if r.Kind == transcript.KindObservation {
			observations = append(observations, jsonText(r.Payload()))
		}
	}
	return kinds, observations
}

// stopOnly is a script of one input.stop, at manual time 0.
func stopOnly(r *Request) { r.Inputs = []input.Input{input.Stop{}} }

// TestParity: against real subjects, each ending is recorded with
// upstream's record sequence and failure details, so a transcript of
// ours reads as theirs.
func TestParity(t *testing.T) {
	needSandbox(t)
	short := func(r *Request) {
		r.Deadlines.Handshake, r.Deadlines.Epoch = 500*time.Millisecond, 500*time.Millisecond
	}
	cases := []struct {
		name  string
		args  []string
		edit  func(*Request)
		check func(t *testing.T, o outcome)
	}{
		// Item 1 (kept ours, documented): see TestUpstreamDifferences.
		{"1: exit before the handshake reply stays run.failed", []string{"exit-in-handshake", "5"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{
				"failure": FailureLifecycle, "violation": violExitedInStart, "during": "handshake", "phase": "handshake",
				"exit": `{"kind":"code","value":5}`,
			})
			if o.count(transcript.KindObservation) != 0 {
				t.Errorf("records %v", o.kinds)
			}
		}},

		// Item 2: one rule for subject-reported failures, upstream's.
		{"2: run.failed is adapter-runtime-failed with subject-code and subject-details", []string{"run-failed", "4"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"subject-code": "echo-subject-gave-up", "subject-details": `{"inputs":1}`,
			})
			if msg := jsonText(mustGet(t, mustGet(t, o.terminal(), "error"), "message")); msg != `"the subject reported run.failed: echo-subject (mode run-failed) gives up"` {
				t.Errorf("message %s", msg)
			}
			// The epoch is closed by the synthesized exited-process
			// observation with the OS exit, as upstream records it.
			n := len(o.kinds)
			if o.kinds[n-3] != transcript.KindInputText || o.kinds[n-2] != transcript.KindObservation ||
				jsonText(o.lastObservation()) != strings.Replace(synthesizedExit, `"value":0`, `"value":4`, 1) {
				t.Errorf("records %v, last observation %s", o.kinds, jsonText(o.lastObservation()))
			}
		}},
		{"2: session.failed follows the same rule, subject-details null when absent", []string{"failed"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{
				"subject-code": "echo-subject-failed", "subject-details": "null",
			})
			if d := jsonText(mustGet(t, mustGet(t, o.terminal(), "error"), "details")); d != `{"subject-code":"echo-subject-failed","subject-details":null}` {
				t.Errorf("details %s: want exactly upstream's members", d)
			}
		}},

		// Item 3: the stop drain's observation is checked, not recorded.
		{"3: drain observation then run.finished: input.stop, the synthesized observation, run.finished", nil, stopOnly, func(t *testing.T, o outcome) {
			kinds, obs := o.afterStop(t)
			if !slices.Equal(kinds, []string{transcript.KindObservation, transcript.KindRunFinished}) || obs[0] != synthesizedExit {
				t.Errorf("after input.stop: %v %v\nwant the synthesized observation %s", kinds, obs, synthesizedExit)
			}
		}},
		{"3: the synthesized observation carries the OS exit", []string{"finish-exit", "3"}, stopOnly, func(t *testing.T, o outcome) {
			kinds, obs := o.afterStop(t)
			want := strings.Replace(synthesizedExit, `"value":0`, `"value":3`, 1)
			if !slices.Equal(kinds, []string{transcript.KindObservation, transcript.KindRunFinished}) || obs[0] != want ||
				jsonText(mustGet(t, o.terminal(), "exit")) != `{"kind":"code","value":3}` {
				t.Errorf("after input.stop: %v %v %s", kinds, obs, jsonText(o.terminal()))
			}
		}},
		{"3: a differing claim adds exit-record-mismatch before the synthesized observation", []string{"wrong-exit"}, stopOnly, func(t *testing.T, o outcome) {
			kinds, obs := o.afterStop(t)
			if !slices.Equal(kinds, []string{transcript.KindDiagnostic, transcript.KindObservation, transcript.KindRunFinished}) || obs[0] != synthesizedExit {
				t.Errorf("after input.stop: %v %v", kinds, obs)
			}
		}},
		{"3: the drain observation is checked", []string{"drain-exited"}, stopOnly, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"failure": FailureLifecycle, "violation": violExited, "during": "stop", "phase": "stop", "kind": "observation",
			})
			if kinds, _ := o.afterStop(t); len(kinds) != 1 {
				t.Errorf("after input.stop: %v", kinds)
			}
		}},

		// Item 4: upstream's failure details, ours beside them.
		{"4: handshake deadline, reply never came", []string{"silent"}, short, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{
				"failure": FailureHandshake, "abort-deadline-ms": "500", "during": "read", "phase": "handshake",
				"deadline": "handshake", "deadline_ms": "500",
			})
		}},
		{"4: handshake deadline, hello never read", []string{"deaf"}, short, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{
				"failure": FailureHandshake, "abort-deadline-ms": "500", "during": "write", "phase": "handshake",
			})
		}},
		{"4: epoch deadline", []string{"hang"}, short, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"failure": FailureEpoch, "abort-deadline-ms": "500", "during": "read", "phase": "epoch",
				"deadline": "epoch", "deadline_ms": "500", "input": "1",
			})
		}},
		{"4: stop deadline", []string{"hang-stop"}, func(r *Request) { short(r); stopOnly(r) }, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"failure": FailureEpoch, "abort-deadline-ms": "500", "during": "read", "phase": "stop", "input": "1",
			})
		}},
		{"4: diagnostic budget in an epoch", []string{"diagnostics", "101"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"failure": FailureMalformed, "budget": "100", "during": "epoch",
				"rule": "limit.diagnostics", "limit": "100", "phase": "epoch",
			})
		}},
		{"4: diagnostic budget in the handshake", []string{"diagnostics", "101", "hello"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{
				"failure": FailureMalformed, "budget": "100", "during": "handshake", "rule": "limit.diagnostics", "phase": "handshake",
			})
		}},
		{"4: peer-lifecycle, wrong kind", []string{"second-ready"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"failure": FailureLifecycle, "during": "epoch", "kind": "session.ready", "violation": violSecondReady,
			})
		}},
		{"4: peer-lifecycle, exited-process observation", []string{"exited-observation"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"failure": FailureLifecycle, "during": "epoch", "kind": "observation", "violation": violExited,
			})
		}},
		{"4: peer-lifecycle in the handshake", nil, func(r *Request) {
			r.Args = []string{"/bin/sh", "-c", `read h; echo '` + obsLine + `'; sleep 5`, leakMarker}
		}, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{
				"failure": FailureLifecycle, "during": "handshake", "kind": "observation", "violation": violBeforeReply,
			})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := exampleRequest(t, tc.args...)
			if tc.edit != nil {
				tc.edit(&req)
			}
			tc.check(t, runCase(t, req))
		})
	}
}

// wantDetails checks run.failed's error code and the details members
// given (strings as is, other values as canonical JSON).
func wantDetails(t *testing.T, o outcome, code string, want map[string]string) {
	t.Helper()
	if o.res.Outcome != transcript.KindRunFailed || o.errorCode() != code {
		t.Fatalf("want run.failed %s, got %s %s", code, o.res.Outcome, jsonText(o.terminal()))
	}
	for k, v := range want {
		if got := o.detail(k); got != v {
			t.Errorf("details.%s = %q, want %q (%s)", k, got, v, jsonText(o.terminal()))
		}
	}
}

// TestReplayNotTerminated: a replay (Request.Replay) whose inputs run out
// with the run still open fails with CodeReplayNotTerminated; no input.stop
// is invented, and the last epoch's observation is recorded.
func TestReplayNotTerminated(t *testing.T) {
	needSandbox(t)
	text := func(s string) input.Input { return input.Text{Text: s} }
	cases := []struct {
		name   string
		inputs []input.Input
	}{
		{"two inputs, no stop", []input.Input{text("a"), text("b")}},
		{"no inputs", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := exampleRequest(t)
			req.Inputs, req.Replay = tc.inputs, true
			o := runCase(t, req)
			wantDetails(t, o, CodeReplayNotTerminated, map[string]string{
				"failure": CodeReplayNotTerminated, "phase": "idle", "inputs": strconv.Itoa(len(tc.inputs)),
			})
			if o.count(transcript.KindInputStop) != 0 || o.inputs() != len(tc.inputs) ||
				o.count(transcript.KindObservation) != len(tc.inputs)+1 || o.kinds[len(o.kinds)-2] != transcript.KindObservation {
				t.Errorf("records %v: want every input closed by its observation, and no input.stop", o.kinds)
			}
		})
	}
	t.Run("ending in input.stop is an ordinary run", func(t *testing.T) {
		t.Parallel()
		req := exampleRequest(t)
		req.Inputs = []input.Input{text("a"), input.Stop{}}
		plain := runCase(t, req)
		req.Replay = true
		replayed := runCase(t, req)
		if !plain.res.Succeeded() || !bytes.Equal(plain.data, replayed.data) {
			t.Errorf("replay differs from the plain run:\n%s\n---\n%s", plain.data, replayed.data)
		}
	})
	t.Run("without Replay a stop is appended", func(t *testing.T) {
		t.Parallel()
		req := exampleRequest(t)
		req.Inputs = []input.Input{text("a")}
		if o := runCase(t, req); !o.res.Succeeded() || o.count(transcript.KindInputStop) != 1 {
			t.Errorf("records %v %s", o.kinds, jsonText(o.terminal()))
		}
	})
}

// TestUpstreamDifferences has one case per row of docs/SUPERVISOR.md's
// "Deliberate differences from upstream", each asserting ours.
func TestUpstreamDifferences(t *testing.T) {
	needSandbox(t)
	sh := func(script string) func(*Request) {
		return func(r *Request) { r.Args = []string{"/bin/sh", "-c", script, leakMarker} }
	}
	twoInputs := func(r *Request) {
		r.Inputs = []input.Input{input.Text{Text: "x"}, input.Text{Text: "y"}}
	}
	cases := []struct {
		name  string
		args  []string
		edit  func(*Request)
		check func(t *testing.T, o outcome)
	}{
		{"exit before the handshake reply", []string{"exit-in-handshake", "5"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{
				"failure": FailureLifecycle, "violation": violExitedInStart, "exit": `{"kind":"code","value":5}`,
			})
		}},
		{"a subject that never reads stdin", []string{"deaf"}, func(r *Request) { r.Deadlines.Handshake = 500 * time.Millisecond }, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{"failure": FailureHandshake, "during": "write"})
		}},
		{"session.unsupported", []string{"unsupported"}, nil, func(t *testing.T, o outcome) {
			if o.res.Outcome != transcript.KindRunUnsupported || o.tierOf(receipts.Terminal) != "unsupported" || o.count(transcript.KindCapability) != 5 {
				t.Errorf("records %v %s", o.kinds, jsonText(o.terminal()))
			}
		}},
		{"diagnostics before a refusal", nil, sh(`read h; echo '` + diagLine + `'; echo '` + unsupLine + `'`), func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterStartFailed, map[string]string{"failure": FailureLifecycle, "violation": violDiagBeforeReply})
		}},
		{"a death by signal", []string{"crash"}, nil, func(t *testing.T, o outcome) {
			if o.res.Outcome != transcript.KindRunFinished || jsonText(mustGet(t, o.terminal(), "exit")) != `{"kind":"signal","value":"ABRT"}` {
				t.Errorf("got %s", jsonText(o.terminal()))
			}
		}},
		{"an integer beyond 2^53", []string{"big-int"}, nil, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{"failure": FailureMalformed, "during": "parse"})
		}},
		{"a very long digit string", nil,
			sh(`read h; echo '` + readyLine + `'; read i; printf '%s' '{"protocol":"termverify.control/v1","kind":"observation","payload":{"state":{"n":'; head -c 200000 /dev/zero | tr '\0' 1; echo '},"ui":{"regions":[],"cursor":{"column":0,"row":0,"visible":false}},"events":[]}}'; sleep 5`),
			func(t *testing.T, o outcome) {
				wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{"failure": FailureMalformed, "during": "parse"})
			}},
		// Whether input 2 is written before the exit is seen is a race;
		// either way a write that meets the closed stdin is no failure.
		{"exit while idle, stdin closed", []string{"exit-idle"}, twoInputs, func(t *testing.T, o outcome) {
			if o.res.Outcome != transcript.KindRunFinished || o.res.Exit.Code != 0 {
				t.Errorf("got %v %s", o.kinds, jsonText(o.terminal()))
			}
		}},
		{"an exit claim while idle", nil,
			// One printf, one write: the claim is already buffered when the
			// observation closes the epoch, so it arrives while idle.
			func(r *Request) {
				twoInputs(r)
				sh(`read h; echo '` + readyLine + `'; read i; printf '%s\n%s\n' '` + obsLine + `' '` + strings.Replace(finishLine, `"value":0`, `"value":7`, 1) + `'`)(r)
			}, func(t *testing.T, o outcome) {
				claimed, ok := o.terminal().Get("x-claimed-exit")
				if o.res.Outcome != transcript.KindRunFinished || o.res.Exit.Code != 0 || !ok || jsonText(claimed) != `{"kind":"code","value":7}` {
					t.Errorf("got %v %s", o.kinds, jsonText(o.terminal()))
				}
			}},
		// The unsolicited observation races input 1 on the wire (see
		// TestFailures): caught at once, or after the stop drain.
		{"traffic while idle", []string{"idle-message"}, nil, func(t *testing.T, o outcome) {
			if o.detail("failure") != FailureLifecycle || !slices.Contains([]string{violIdleMessage, violAfterFinal}, o.detail("violation")) {
				t.Errorf("got %s", jsonText(o.terminal()))
			}
		}},
		{"the diagnostics of a failed epoch", []string{"diagnostics", "101"}, nil, func(t *testing.T, o outcome) {
			if o.detail("failure") != FailureMalformed || o.count(transcript.KindDiagnostic) != 100 {
				t.Errorf("%d diagnostics recorded, %s", o.count(transcript.KindDiagnostic), jsonText(o.terminal()))
			}
		}},
		{"a diagnostic after the stop drain's observation", []string{"drain-diagnostic"}, stopOnly, func(t *testing.T, o outcome) {
			wantDetails(t, o, transcript.CodeAdapterRuntimeFailed, map[string]string{
				"failure": FailureLifecycle, "violation": violAfterFinal, "during": "stop", "kind": "diagnostic",
			})
		}},
		{"a chatty epoch", nil, func(r *Request) {
			r.Deadlines.Epoch = time.Second
			sh(`read h; echo '` + readyLine + `'; read i; while :; do echo '` + diagLine + `'; sleep 0.2; done`)(r)
		}, func(t *testing.T, o outcome) {
			if o.detail("failure") != FailureEpoch || o.count(transcript.KindDiagnostic) > 10 {
				t.Errorf("got %s after %d diagnostics", jsonText(o.terminal()), o.count(transcript.KindDiagnostic))
			}
		}},
		{"a descendant that leaves the process group", []string{"daemon"}, nil, func(t *testing.T, o outcome) {
			if !o.res.Succeeded() {
				t.Fatalf("result %+v", o.res)
			}
			if pids := waitGone("__echo-subject-daemon-sleep", 2*time.Second); len(pids) > 0 {
				t.Errorf("daemon survived: %v", pids)
			}
		}},
		{"the environment", nil, func(r *Request) { r.Isolation = receipts.IsolationOS }, func(t *testing.T, o outcome) {
			var state string
			for _, r := range o.tr.Records {
				if r.Kind == transcript.KindObservation {
					state = jsonText(mustGet(t, r.Payload(), "state"))
					break
				}
			}
			if !strings.Contains(state, `"env":{"TERMVERIFY_`) || strings.Contains(state, "LANG") {
				t.Errorf("readiness state %s: want only the delivered variables", state)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := exampleRequest(t, tc.args...)
			if tc.edit != nil {
				tc.edit(&req)
			}
			tc.check(t, runCase(t, req))
		})
	}
}
