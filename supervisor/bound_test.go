package supervisor

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// The longest run id a Writer takes: the bounds must hold for it.
var boundRunID = strings.Repeat("r", transcript.MaxRunIDBytes)

// readyWriter returns a Writer of the example request, to io.Discard,
// with the receipts and the readiness observation written.
func readyWriter(tb testing.TB, runID string) *transcript.Writer {
	tb.Helper()
	rf, err := ReadRunFile("../examples/request.json")
	if err != nil {
		tb.Fatal(err)
	}
	rf.Subject.Adapter = transcript.Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion}
	req := &plan{Request: Request{Config: rf.Config, Subject: rf.Subject, Isolation: receipts.IsolationNone,
		Roots: map[string]string{"app": "/tmp"}}, adapter: controlAdapter{}}
	none := receipts.Mechanism{Tier: receipts.Delivered}
	rec := &recorder{w: transcript.NewWriter(io.Discard, runID),
		outcome: receipts.Negotiate(negotiationRequest(req, sandbox.IsolationNone, none, none, none))}
	if err := rec.w.Start(rf.Config, rf.Subject); err != nil {
		tb.Fatal(err)
	}
	if err := rec.writeReceipts(); err != nil {
		tb.Fatal(err)
	}
	if err := rec.w.Observe(observationRecord(&control.Observation{})); err != nil {
		tb.Fatal(err)
	}
	return rec.w
}

// openEpochWriter is readyWriter with one input written: the next
// observation closes an epoch.
func openEpochWriter(t testing.TB) *transcript.Writer {
	w := readyWriter(t, boundRunID)
	if err := w.Input(input.Text{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	return w
}

// checkObservationBound: an observation the session would record after
// sending the next input (Parse-valid, no exited process, a short line)
// is accepted by the Writer, and its record is within observationBound.
// This is what makes sending first safe (session.sendFirst).
func checkObservationBound(t *testing.T, line []byte) {
	if len(line) > maxSentFirstLine {
		return
	}
	m, err := control.Parse(line)
	if err != nil {
		return
	}
	obs, ok := m.(control.Observation)
	if !ok || (obs.Process != nil && obs.Process.State == control.ProcessExited) {
		return
	}
	w := openEpochWriter(t)
	before := w.Bytes()
	if err := w.Observe(observationRecord(&obs)); err != nil {
		t.Fatalf("the Writer refused a Parse-valid observation: %v\n%.300q", err, line)
	}
	if size, bound := w.Bytes()-before, observationBound(len(line), boundRunID); size > bound {
		t.Fatalf("a %d-byte observation made a %d-byte record, over its bound %d", len(line), size, bound)
	}
}

// checkInputBound: an input the session would send before recording it
// (its wire line encodes and is short) is accepted by the Writer, and its
// record is within inputBound of its wire line.
func checkInputBound(t *testing.T, in input.Input) {
	var enc control.Encoder
	wire, err := enc.Append(nil, controlInput(in, 0))
	if err != nil || len(wire) > maxSentFirstLine {
		return
	}
	w := readyWriter(t, boundRunID)
	before := w.Bytes()
	if err := w.Input(in); err != nil {
		t.Fatalf("the Writer refused a %d-byte %T that would be sent first: %v", len(wire), in, err)
	}
	if size, bound := w.Bytes()-before, inputBound(len(wire), boundRunID); size > bound {
		t.Fatalf("a %d-byte %T line made a %d-byte record, over its bound %d", len(wire), in, size, bound)
	}
}

func FuzzRecordBound(f *testing.F) {
	obs := func(payload string) string {
		return `{"kind":"observation","payload":` + payload + `,"protocol":"termverify.control/v1"}` + "\n"
	}
	ui := `"ui":{"regions":[{"id":"a","role":"b","column":0,"row":0,"columns":1,"rows":1}],"cursor":{"column":0,"row":0,"visible":true}}`
	for _, s := range []string{
		echoObservation,
		obs(`{"state":[` + strings.Repeat("1e15,", 2000) + `1e21],"events":[],` + ui + `}`),
		obs(`{"state":[` + strings.Repeat("-9E+14,", 2000) + `0],"events":[],` + ui + `}`),
		obs(`{"state":{"x-a":1,"b":"\u00e9\u0041\/"},"events":[{"type":"terminal.output","data":{"chunk":"a"}},{"type":"terminal.output","data":{"chunk":"b"}}],` + ui + `,"x-extra":[1,2,3]}`),
		obs(` { "state" : null , "events" : [ ] , "ui" : { "regions" : [ ] , "cursor" : { "column" : 0 , "row" : 0 , "visible" : false } } } `),
		obs(`{"state":null,"events":[],"ui":{"regions":[` + strings.Repeat(`{"id":"a","role":"b","column":0,"row":0,"columns":1,"rows":1},`, 0) +
			`{"id":"z","role":"r","column":1,"row":2,"columns":3,"rows":4}],"cursor":{"column":0,"row":0,"visible":false}},"frame":{"lines":["ab"],"columns":2,"rows":1},"process":{"state":"running"}}`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkObservationBound(t, line)
		checkInputBound(t, input.Text{Text: string(line)})
	})
}

// TestRecordBounds pins the worst cases the bounds are derived from, and
// every input kind a script can hold (Request refuses mouse and clipboard
// inputs: control/v1 cannot carry them).
func TestRecordBounds(t *testing.T) {
	var regions []string
	for i := range 700 {
		regions = append(regions, `{"id":"`+strconv.Itoa(i)+`","role":"r","column":0,"row":0,"columns":1,"rows":1}`)
	}
	for _, line := range []string{
		`{"kind":"observation","payload":{"state":[` + strings.Repeat("1e15,", 13000) + `1],"events":[],"ui":{"regions":[],"cursor":{"column":0,"row":0,"visible":false}}},"protocol":"termverify.control/v1"}` + "\n",
		`{"kind":"observation","payload":{"state":null,"events":[],"ui":{"regions":[` + strings.Join(regions, ",") + `],"cursor":{"column":0,"row":0,"visible":false}}},"protocol":"termverify.control/v1"}` + "\n",
	} {
		if _, err := control.Parse([]byte(line)); err != nil {
			t.Fatalf("test line: %v", err)
		}
		checkObservationBound(t, []byte(line))
	}
	for _, in := range []input.Input{
		input.Text{Text: "\x01\x02\"\\é"}, input.Key{Keys: []string{"Control", "c"}},
		input.Resize{Columns: 9999, Rows: 9999}, input.Stop{},
		input.Text{Text: strings.Repeat("\x1f", 1000)},
		// The longest text sent first: 6-byte escapes up to 64 KiB.
		input.Text{Text: strings.Repeat("\x01", (maxSentFirstLine-100)/6)},
	} {
		checkInputBound(t, in)
	}
}

// TestRecordBoundsRandom checks the observation bound on a few thousand
// generated observations of every shape the bound's argument covers:
// numbers in every spelling, escapes, whitespace, regions, mergeable
// output events, x- members. (FuzzRecordBound does the same from
// mutations, but this package's test binary fuzzes at a few hundred
// executions a second here: CI relies on this test.)
func TestRecordBoundsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	numbers := []string{"0", "-7", "123456789012345", "1e15", "-9E+14", "1.5", "1.5e-7", "123.456e2", "1e21", "5e-324", "0.000001", "1E-6", "2.50"}
	strs := []string{`""`, `"a"`, `"\u00e9\u0041"`, `"\/\b\f\n\r\t\u0001"`, `"é😀"`, `"\ud83d\ude00"`, `"x-y"`}
	ws := func() string { return []string{"", " ", "\t", " \t "}[rng.IntN(4)] }
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(7); {
		case k == 0 || depth > 4:
			return numbers[rng.IntN(len(numbers))]
		case k == 1:
			return strs[rng.IntN(len(strs))]
		case k == 2:
			return []string{"true", "false", "null"}[rng.IntN(3)]
		case k == 3:
			var items []string
			for range rng.IntN(6) {
				items = append(items, ws()+value(depth+1)+ws())
			}
			return "[" + strings.Join(items, ",") + "]"
		default:
			var members []string
			for i := range rng.IntN(6) {
				members = append(members, ws()+`"k`+strconv.Itoa(5-i)+`"`+ws()+":"+ws()+value(depth+1))
			}
			return "{" + strings.Join(members, ",") + "}"
		}
	}
	valid := 0
	const n = 3000
	for range n {
		var regions, events []string
		for i := range rng.IntN(12) {
			regions = append(regions, fmt.Sprintf(`{"rows":%d,"id":"r%d","role":"b","column":%d,"row":0,"columns":1%s}`,
				1+rng.IntN(99), i, rng.IntN(1000), []string{"", `,"x-r":[1e15]`}[rng.IntN(2)]))
		}
		for range rng.IntN(8) {
			if rng.IntN(2) == 0 {
				events = append(events, `{"type":"terminal.output","data":{"chunk":`+strs[rng.IntN(len(strs))]+`}}`)
			} else {
				events = append(events, `{"data":`+value(1)+`,"type":"t"}`)
			}
		}
		payload := `{"state":` + value(0) + `,"events":[` + strings.Join(events, ",") + `],"ui":{"regions":[` + strings.Join(regions, ",") +
			`],"cursor":{"column":1,"row":2,"visible":true},"mode":` + []string{"null", `"m"`}[rng.IntN(2)] + `}`
		if rng.IntN(2) == 0 {
			payload += `,"frame":{"lines":["ab","c"],"columns":2,"rows":2}`
		}
		if rng.IntN(2) == 0 {
			payload += `,"process":{"state":"running"},"x-top":` + value(2)
		}
		line := []byte(`{"kind":"observation",` + ws() + `"payload":` + payload + `},"protocol":"termverify.control/v1"}` + "\n")
		if _, err := control.Parse(line); err != nil {
			continue
		}
		valid++
		checkObservationBound(t, line)
	}
	t.Logf("%d of %d generated observations valid", valid, n)
	if valid < n/2 {
		t.Fatalf("only %d of %d generated observations are valid: the generator is broken", valid, n)
	}
}

// TestSentUnrecordedFailure: should the Writer ever refuse a record after
// the epoch's input was sent, the run's failure says so, for a budget
// refusal as for a rule refusal; before a send, a budget refusal is the
// Writer's own FailBudget record.
func TestSentUnrecordedFailure(t *testing.T) {
	budget := &transcript.BudgetError{Limit: transcript.LimitLineBytes, Detail: "too long"}
	rule := &transcript.Error{Record: 9, Line: 10, Kind: transcript.KindInputText, Rule: transcript.RuleWriterValue, Err: io.ErrUnexpectedEOF}
	rec := &recorder{}
	if end := rec.fail(sentUnrecorded(budget, false), phaseEpoch); end.budget == nil {
		t.Errorf("a budget refusal before the send: %+v, want FailBudget", end)
	}
	for _, err := range []error{budget, rule} {
		end := rec.fail(sentUnrecorded(err, true), phaseEpoch)
		if end.failed == nil || end.failed.Details == nil {
			t.Fatalf("%v after the send: %+v, want run.failed", err, end)
		}
		sent, _ := end.failed.Details.Get("input_sent_unrecorded")
		if sent == nil || !sent.Bool || !strings.Contains(end.failed.Message, "already been sent") {
			t.Errorf("%v after the send: %s %s does not say the input was sent", err, end.failed.Message, jsonText(end.failed.Details))
		}
	}
}
