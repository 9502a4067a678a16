package transcript

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// envLine renders one canonical record line (LF included).
func envLine(tb testing.TB, seq int, kind string, payload canon.Value) []byte {
	tb.Helper()
	v := canon.ObjectValue(
		canon.M("protocol", canon.StringValue(Protocol)),
		canon.M("run_id", canon.StringValue(testRunID)),
		canon.M("seq", canon.IntValue(int64(seq))),
		canon.M("id", canon.StringValue(fmt.Sprintf("record-%04d", seq))),
		canon.M("kind", canon.StringValue(kind)),
		canon.M("payload", payload),
	)
	b, err := canon.Marshal(&v)
	if err != nil {
		tb.Fatal(err)
	}
	return append(b, '\n')
}

func diagPayload(message string, details *canon.Value) canon.Value {
	m := []canon.Member{
		canon.M("at_ms", canon.IntValue(100)),
		canon.M("code", canon.StringValue("note")),
		canon.M("message", canon.StringValue(message)),
	}
	if details != nil {
		m = append(m, canon.M("details", *details))
	}
	return canon.ObjectValue(m...)
}

// openEpoch is negotiation, readiness and one input: 10 records, seq 0–9,
// with an epoch open so that diagnostics may follow.
func openEpoch(tb testing.TB) []byte { return build(tb, body(textAt(100))) }

const firstFree = 10 // seq of the first record after openEpoch

func failedLine(tb testing.TB, seq int) []byte {
	return envLine(tb, seq, KindRunFailed, canon.ObjectValue(canon.M("error", canon.ObjectValue(
		canon.M("code", canon.StringValue(CodeAdapterRuntimeFailed)), canon.M("message", canon.StringValue("x"))))))
}

// withDiags is openEpoch + diagnostics + run.failed.
func withDiags(tb testing.TB, diags ...canon.Value) []byte {
	data := openEpoch(tb)
	for i := range diags {
		data = append(data, envLine(tb, firstFree+i, KindDiagnostic, diags[i])...)
	}
	return append(data, failedLine(tb, firstFree+len(diags))...)
}

// measure returns the value budget spent by a diagnostic record at seq.
func measure(seq int, p canon.Value) canon.Budget {
	v := canon.ObjectValue(
		canon.M("protocol", canon.StringValue(Protocol)), canon.M("run_id", canon.StringValue(testRunID)),
		canon.M("seq", canon.IntValue(int64(seq))), canon.M("id", canon.StringValue(fmt.Sprintf("record-%04d", seq))),
		canon.M("kind", canon.StringValue(KindDiagnostic)), canon.M("payload", p))
	return canon.Measure(&v)
}

func nested(depth int) canon.Value {
	v := canon.ArrayValue()
	for range depth - 1 {
		v = canon.ArrayValue(v)
	}
	return v
}

func zeros(n int) canon.Value {
	items := make([]canon.Value, n)
	for i := range items {
		items[i] = canon.IntValue(0)
	}
	return canon.ArrayValue(items...)
}

// valuesDetails returns details that bring a diagnostic to exactly
// total JSON values, plus extra.
func valuesDetails(total, extra int) canon.Value {
	empty := canon.ArrayValue()
	need := total - measure(firstFree, diagPayload("m", &empty)).Values
	var inner []canon.Value
	for need > 0 {
		m := min(16000, need-1)
		inner = append(inner, zeros(m))
		need -= 1 + m
	}
	last := &inner[len(inner)-1]
	*last = zeros(len(last.Items) + extra)
	return canon.ArrayValue(inner...)
}

// recordStringsDetails returns a details string that brings a diagnostic
// whose message is 1 MiB to exactly 2 MiB of strings, plus extra.
func recordStringsDetails(extra int) canon.Value {
	msg := strings.Repeat("m", canon.MaxStringBytes)
	empty := canon.StringValue("")
	n := canon.MaxRecordStringBytes - measure(firstFree, diagPayload(msg, &empty)).StringBytes
	return canon.StringValue(strings.Repeat("d", n+extra))
}

// lineOf returns a diagnostic whose canonical line (LF excluded) is
// exactly n bytes: mostly control characters, which take six bytes each
// on the wire but one against the string budgets.
func lineOf(tb testing.TB, n int) canon.Value {
	base := len(envLine(tb, firstFree, KindDiagnostic, diagPayload("", nil))) - 1
	k := (n - base) * 9 / 10 / 6
	pad := n - base - 6*k
	return diagPayload(strings.Repeat("\x01", k)+strings.Repeat("a", pad), nil)
}

// sized returns a transcript of exactly n bytes: 500 kB diagnostics, then
// one whose message pads to n (always under 1 MiB).
func sized(tb testing.TB, n int) []byte {
	out := openEpoch(tb)
	seq := firstFree
	// Room for the padding record's envelope and the terminal record.
	overhead := len(envLine(tb, 9999, KindDiagnostic, diagPayload("", nil))) + len(failedLine(tb, 9999))
	for n-len(out)-overhead >= 1_000_000 {
		out = append(out, envLine(tb, seq, KindDiagnostic, diagPayload(strings.Repeat("a", 500_000), nil))...)
		seq++
	}
	term := failedLine(tb, seq+1)
	pad := n - len(out) - len(term) - len(envLine(tb, seq, KindDiagnostic, diagPayload("", nil)))
	out = append(out, envLine(tb, seq, KindDiagnostic, diagPayload(strings.Repeat("p", pad), nil))...)
	out = append(out, term...)
	if len(out) != n {
		tb.Fatalf("built %d bytes, want %d", len(out), n)
	}
	return out
}

// legacySeed returns a transcript whose seed receipt uses the legacy
// delivery form with env built by envOf.
func legacySeed(tb testing.TB, env canon.Value) []byte {
	rs := negotiated()
	data := build(tb, rs[:1])
	data = append(data, envLine(tb, 1, KindCapability, canon.ObjectValue(
		canon.M("constraint", canon.StringValue("seed")),
		canon.M("status", canon.StringValue("applied")),
		canon.M("effective", canon.StringValue("7")),
		canon.M("tier", canon.StringValue("delivered")),
		canon.M("delivery", canon.ObjectValue(canon.M("env", env))),
	))...)
	return append(data, failedLine(tb, 2)...)
}

// TestLimits builds transcripts just under and just over every v1 limit.
func TestLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 32 MiB transcripts")
	}
	manyDiags := func(n int) []byte {
		d := make([]canon.Value, n)
		for i := range d {
			d[i] = diagPayload("m", nil)
		}
		return withDiags(t, d...)
	}
	oneMiB := strings.Repeat("s", canon.MaxStringBytes)
	keyObj := func(n int) canon.Value {
		v := canon.ObjectValue(canon.M(strings.Repeat("k", n), canon.IntValue(0)))
		return v
	}
	legacyLine := func(extra int) []byte {
		// A legacy seed receipt whose line is exactly 4 MiB + extra before
		// the compat rule adds "channel":"spawn-env", (22 bytes).
		probe := legacySeed(t, canon.ObjectValue(canon.M("A", canon.StringValue(""))))
		base := len(strings.Split(string(probe), "\n")[1])
		k := (canon.MaxLineBytes - base + extra) / 6
		pad := canon.MaxLineBytes + extra - base - 6*k
		return legacySeed(t, canon.ObjectValue(canon.M("A", canon.StringValue(strings.Repeat("\x01", k)+strings.Repeat("a", pad)))))
	}
	legacyStrings := func(extra int) []byte {
		probe := legacySeed(t, canon.ObjectValue(canon.M("A", canon.StringValue("")), canon.M("B", canon.StringValue(""))))
		v, _, _ := canon.Decode([]byte(strings.Split(string(probe), "\n")[1]))
		n := canon.MaxRecordStringBytes - canon.Measure(&v).StringBytes - 16 + extra // 16: "channel" + "spawn-env"
		return legacySeed(t, canon.ObjectValue(
			canon.M("A", canon.StringValue(strings.Repeat("a", n/2))),
			canon.M("B", canon.StringValue(strings.Repeat("b", n-n/2)))))
	}
	cases := []struct {
		name string
		data func() []byte
		want string
	}{
		{"transcript 32 MiB", func() []byte { return sized(t, canon.MaxTranscriptBytes) }, ""},
		{"transcript 32 MiB + 1", func() []byte { return sized(t, canon.MaxTranscriptBytes+1) }, RuleTranscriptBytes},
		{"line 4 MiB", func() []byte { return withDiags(t, lineOf(t, canon.MaxLineBytes)) }, ""},
		{"line 4 MiB + 1", func() []byte { return withDiags(t, lineOf(t, canon.MaxLineBytes+1)) }, canon.RuleLineBytes},
		{"10,000 records", func() []byte { return manyDiags(canon.MaxRecords - firstFree - 1) }, ""},
		{"10,001 records", func() []byte { return manyDiags(canon.MaxRecords - firstFree) }, RuleRecords},
		// envelope (1) > payload (2) > details (3...): details nested 62 deep is depth 64.
		{"depth 64", func() []byte { d := nested(62); return withDiags(t, diagPayload("m", &d)) }, ""},
		{"depth 65", func() []byte { d := nested(63); return withDiags(t, diagPayload("m", &d)) }, canon.RuleDepth},
		{"16,384 items", func() []byte { d := zeros(canon.MaxItems); return withDiags(t, diagPayload("m", &d)) }, ""},
		{"16,385 items", func() []byte { d := zeros(canon.MaxItems + 1); return withDiags(t, diagPayload("m", &d)) }, canon.RuleItems},
		{"100,000 values", func() []byte { d := valuesDetails(canon.MaxValues, 0); return withDiags(t, diagPayload("m", &d)) }, ""},
		{"100,001 values", func() []byte { d := valuesDetails(canon.MaxValues, 1); return withDiags(t, diagPayload("m", &d)) }, canon.RuleValues},
		{"1 MiB string", func() []byte { return withDiags(t, diagPayload(oneMiB, nil)) }, ""},
		{"1 MiB + 1 string", func() []byte { return withDiags(t, diagPayload(oneMiB+"s", nil)) }, canon.RuleStringBytes},
		{"1 MiB key", func() []byte { d := keyObj(canon.MaxStringBytes); return withDiags(t, diagPayload("m", &d)) }, ""},
		{"1 MiB + 1 key", func() []byte { d := keyObj(canon.MaxStringBytes + 1); return withDiags(t, diagPayload("m", &d)) }, canon.RuleStringBytes},
		{"2 MiB record strings", func() []byte { d := recordStringsDetails(0); return withDiags(t, diagPayload(oneMiB, &d)) }, ""},
		{"2 MiB + 1 record strings", func() []byte { d := recordStringsDetails(1); return withDiags(t, diagPayload(oneMiB, &d)) }, canon.RuleRecordStringBytes},
		// The compat rule re-checks limits on the rewritten record.
		{"legacy line fits after compat", func() []byte { return legacyLine(-22) }, ""},
		{"legacy line over after compat", func() []byte { return legacyLine(-21) }, canon.RuleLineBytes},
		{"legacy strings fit after compat", func() []byte { return legacyStrings(0) }, ""},
		{"legacy strings over after compat", func() []byte { return legacyStrings(1) }, canon.RuleRecordStringBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data()
			tr, err := Parse(data)
			sameAsStream(t, data, tr, err)
			if got := ruleOf(t, err); got != tc.want {
				t.Fatalf("rule %q, want %q (%.300v)", got, tc.want, err)
			}
		})
	}
}

// TestWriterLimits drives the Writer into every limit: it refuses the
// record with a *BudgetError, and FailBudget still ends a valid transcript.
func TestWriterLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 32 MiB transcripts")
	}
	control := strings.Repeat("\x01", canon.MaxStringBytes) // 6 MiB on the wire
	cases := []struct {
		name  string
		fill  func(w *Writer) error // called until it fails
		limit Limit
		once  bool
	}{
		{"records", func(w *Writer) error { return w.Diagnostic(Diagnostic{Code: "c", Message: "m"}) }, LimitRecords, false},
		{"bytes", func(w *Writer) error {
			d := canon.StringValue(strings.Repeat("d", 1_000_000))
			return w.Diagnostic(Diagnostic{Code: "c", Message: strings.Repeat("m", 1_000_000), Details: &d})
		}, LimitTranscriptBytes, false},
		{"line", func(w *Writer) error { return w.Diagnostic(Diagnostic{Code: "c", Message: control}) }, LimitLineBytes, true},
		{"values", func(w *Writer) error {
			d := zeros(canon.MaxItems + 1)
			return w.Diagnostic(Diagnostic{Code: "c", Message: "m", Details: &d})
		}, LimitValues, true},
		{"terminal", func(w *Writer) error {
			return w.Fail(Failure{Code: "c", Message: strings.Repeat("m", TerminalReserve)})
		}, LimitTerminalBytes, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			w := NewWriter(&out, "run-limits")
			mustWriteOpenEpoch(t, w)
			var err error
			for n := 0; err == nil; n++ {
				err = tc.fill(w)
				if tc.once && n == 0 && err == nil {
					t.Fatal("first fill accepted")
				}
			}
			be, ok := errors.AsType[*BudgetError](err)
			if !ok || be.Limit != tc.limit || !errors.Is(err, ErrBudget) {
				t.Fatalf("got %v, want budget %s", err, tc.limit)
			}
			if err := w.FailBudget(err); err != nil {
				t.Fatalf("FailBudget: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tr, err := Parse([]byte(out.String()))
			if err != nil {
				t.Fatalf("writer output rejected: %.300v", err)
			}
			if len(tr.Records) != w.Records() || len(out.String()) != w.Bytes() {
				t.Fatalf("counts: %d records/%d bytes vs writer %d/%d", len(tr.Records), len(out.String()), w.Records(), w.Bytes())
			}
			if tc.limit == LimitRecords && len(tr.Records) != canon.MaxRecords {
				t.Fatalf("%d records, want the full %d", len(tr.Records), canon.MaxRecords)
			}
		})
	}
}

// mustWriteOpenEpoch writes negotiation, readiness and one input.
func mustWriteOpenEpoch(t testing.TB, w *Writer) {
	t.Helper()
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(w.Start(testConfig(t), testSubject()))
	for _, c := range receipts.Constraints() {
		check(w.Applied(c, receipts.OS, nil))
	}
	check(w.Observe(Observation{}))
	check(w.Input(input.Text{Text: "hi"}))
}

// TestRoom: Room says yes exactly when the Writer accepts the next record
// for the record count and the transcript's bytes.
func TestRoom(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 32 MiB transcript")
	}
	cases := []struct {
		name  string
		fill  func(w *Writer) error
		limit Limit
	}{
		{"records", func(w *Writer) error { return w.Diagnostic(Diagnostic{Code: "c", Message: "m"}) }, LimitRecords},
		{"bytes", func(w *Writer) error {
			return w.Diagnostic(Diagnostic{Code: "c", Message: strings.Repeat("m", 1_000_000)})
		}, LimitTranscriptBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter(io.Discard, "run-room")
			mustWriteOpenEpoch(t, w)
			size := 0 // each fill record has the same size once seq has two digits
			for n := 0; ; n++ {
				room := w.Room(1, size)
				before := w.Bytes()
				err := tc.fill(w)
				if n > 0 && room != (err == nil) {
					t.Fatalf("record %d: Room %v, but the Writer said %v", w.Records(), room, err)
				}
				if err != nil {
					if be, ok := errors.AsType[*BudgetError](err); !ok || be.Limit != tc.limit {
						t.Fatalf("got %v, want budget %s", err, tc.limit)
					}
					return
				}
				size = w.Bytes() - before
			}
		})
	}
	w := NewWriter(io.Discard, "run-room")
	mustWriteOpenEpoch(t, w)
	if w.Room(canon.MaxRecords-w.Records(), 0) || !w.Room(canon.MaxRecords-w.Records()-1, 0) {
		t.Error("Room does not keep one record for the terminal")
	}
	if w.Room(1, canon.MaxTranscriptBytes-w.Bytes()-TerminalReserve+1) || !w.Room(1, canon.MaxTranscriptBytes-w.Bytes()-TerminalReserve) {
		t.Error("Room does not keep the terminal reserve")
	}
}

func TestRecordID(t *testing.T) {
	for _, seq := range []int{0, 7, 10, 99, 100, 999, 1000, 9999, 10000, 123456} {
		if got, want := recordID(seq), fmt.Sprintf("record-%04d", seq); got != want {
			t.Errorf("recordID(%d) = %q, want %q", seq, got, want)
		}
	}
}
