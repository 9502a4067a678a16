package transcript

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// TestAccessors reads each kind of record of a hand-built transcript back
// into its type, and checks that an accessor of another kind says no.
func TestAccessors(t *testing.T) {
	obs := rec{KindObservation, `{"at_ms":100,"state":{"n":1},"events":[{"type":"e","data":[1]}],` +
		`"ui":{"regions":[{"id":"r","role":"main","bounds":{"column":1,"row":2,"columns":3,"rows":4}}],"focus":"r",` +
		`"cursor":{"column":5,"row":6,"visible":true},"mode":"insert"},"frame":{"columns":2,"rows":1,"lines":["ab"]},` +
		`"process":{"state":"exited","exit":{"kind":"code","value":3}}}`}
	tr, err := Parse(build(t, append(negotiated(), obs, finished(3))))
	if err != nil {
		t.Fatal(err)
	}
	subj, err := tr.Subject()
	if err != nil || !reflect.DeepEqual(subj, testSubject()) {
		t.Errorf("Subject() = %+v, %v", subj, err)
	}
	if rc, ok := tr.Records[1].Receipt(); !ok || rc.Constraint != receipts.Constraints()[0] || rc.Tier != receipts.OS {
		t.Errorf("Receipt() = %+v, %v", rc, ok)
	}
	o, ok := tr.Records[8].Observation()
	r, m := "r", "insert"
	want := Observation{
		State:   canon.ObjectValue(canon.M("n", canon.IntValue(1))),
		Events:  []Event{{Type: "e", Data: canon.Value{Kind: canon.Array, Items: []canon.Value{canon.IntValue(1)}}}},
		UI:      UI{Regions: []Region{{ID: "r", Role: "main", Bounds: Bounds{1, 2, 3, 4}}}, Focus: &r, Cursor: Cursor{5, 6, true}, Mode: &m},
		Frame:   &Frame{Lines: []string{"ab"}, Columns: 2, Rows: 1},
		Process: &Process{Exited: true, Exit: Exit{Kind: ExitCode, Code: 3}},
	}
	if !ok || !reflect.DeepEqual(o, want) {
		t.Errorf("Observation() = %+v, want %+v", o, want)
	}
	if at, ok := tr.Records[8].AtMS(); !ok || at != 100 {
		t.Errorf("AtMS() = %d, %v", at, ok)
	}
	if e, ok := tr.Records[9].Exit(); !ok || e != (Exit{Kind: ExitCode, Code: 3}) {
		t.Errorf("Exit() = %+v, %v", e, ok)
	}
	last := &tr.Records[9]
	if _, ok := last.Failure(); ok {
		t.Error("Failure() of run.finished")
	}
	if _, ok := last.Refusal(); ok {
		t.Error("Refusal() of run.finished")
	}
	if _, ok := last.Observation(); ok {
		t.Error("Observation() of run.finished")
	}
	if _, ok := last.AtMS(); ok {
		t.Error("AtMS() of run.finished")
	}
	if _, err := last.Subject(); !isDecodeRule(err, RuleSubject) {
		t.Errorf("Subject() of run.finished: %v", err)
	}

	tr, err = Parse(build(t, append(negotiated(), diagAt(100), obsAt(100, ""), failed())))
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := tr.Records[8].Diagnostic(); !ok || d.Code != "note" || d.Message != "m" || d.Details != nil {
		t.Errorf("Diagnostic() = %+v, %v", d, ok)
	}
	if f, ok := tr.Records[10].Failure(); !ok || f.Code != CodeAdapterRuntimeFailed || f.Message != "x" || f.Details != nil {
		t.Errorf("Failure() = %+v, %v", f, ok)
	}
}

// TestAccessorsHandBuilt: a record built by hand with members missing or
// mistyped reads as zero values; no accessor panics.
func TestAccessorsHandBuilt(t *testing.T) {
	for _, kind := range []string{KindRunStarted, KindCapability, KindObservation, KindDiagnostic, KindRunFinished, KindRunFailed, KindRunUnsupported} {
		for _, v := range []canon.Value{{}, canon.ObjectValue(canon.M("payload", canon.StringValue("x")))} {
			r := Record{Kind: kind, Value: v}
			_, _ = r.Subject()
			_, _ = r.Observation()
			_, _ = r.Diagnostic()
			_, _ = r.Exit()
			_, _ = r.Failure()
			_, _ = r.Refusal()
			_, _ = r.AtMS()
		}
	}
	var empty Transcript
	if _, err := empty.Subject(); !isDecodeRule(err, RuleSubject) {
		t.Error("Subject() of no records")
	}
}

// TestAccessorsInvert checks the accessors against the Writer's encoders
// on every record of every valid transcript at hand (the upstream corpus,
// the examples): what they read re-encodes to the record's own payload,
// unless the payload holds x- members, which no typed value carries.
func TestAccessorsInvert(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedDir(t), "conformance", "upstream", "transcript", "*-accept.jsonl"))
	more, _ := filepath.Glob(filepath.Join(repoRoot(t), "examples", "transcripts", "*.jsonl"))
	files = append(files, more...)
	if len(files) == 0 {
		t.Skip("no transcripts at hand")
	}
	var a canon.Arena
	checked := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Parse(data)
		if err != nil {
			continue // an accept file the strict codec refuses is conformance_test's business
		}
		for i := range tr.Records {
			r := &tr.Records[i]
			p := r.Payload()
			if hasExtension(p) {
				continue
			}
			var got canon.Value
			switch r.Kind {
			case KindObservation:
				o, _ := r.Observation()
				at, _ := r.AtMS()
				a.Reset()
				got = o.payload(at, &a)
			case KindDiagnostic:
				d, _ := r.Diagnostic()
				at, _ := r.AtMS()
				got = errorShape(d.Code, d.Message, d.Details)
				got.Members = append(got.Members, canon.M("at_ms", canon.IntValue(at)))
			case KindRunFinished:
				e, _ := r.Exit()
				got = canon.ObjectValue(canon.M("exit", e.Value()))
			case KindRunFailed:
				f, _ := r.Failure()
				got = canon.ObjectValue(canon.M("error", errorShape(f.Code, f.Message, f.Details)))
			case KindRunUnsupported:
				if _, ok := p.Get("details"); ok {
					continue
				}
				u, _ := r.Refusal()
				got = canon.ObjectValue(canon.M("constraint", canon.StringValue(string(u.Constraint))),
					canon.M("code", canon.StringValue(u.Code)), canon.M("message", canon.StringValue(u.Message)))
			case KindRunStarted:
				s, err := r.Subject()
				if err != nil {
					t.Errorf("%s: Subject(): %v", filepath.Base(path), err)
					continue
				}
				sv, _ := p.Get("subject")
				if _, ok := sv.Get("format"); !ok {
					continue // Value always writes the format
				}
				got = canon.ObjectValue(canon.M("config", *canon.Lookup(p, "config")), canon.M("subject", s.Value()))
			default:
				continue
			}
			gb, err1 := canon.Marshal(&got)
			wb, err2 := canon.Marshal(p)
			if err1 != nil || err2 != nil || string(gb) != string(wb) {
				t.Errorf("%s seq %d (%s): read back as %s, want %s", filepath.Base(path), r.Seq, r.Kind, gb, wb)
			}
			checked++
		}
	}
	t.Logf("%d records read back", checked)
	if checked == 0 {
		t.Error("no record checked")
	}
}

func isDecodeRule(err error, rule string) bool {
	e, ok := errors.AsType[*DecodeError](err)
	return ok && e.Rule == rule
}

// hasExtension reports whether v holds an x- member at any depth.
func hasExtension(v *canon.Value) bool {
	for i := range v.Members {
		if strings.HasPrefix(v.Members[i].Key, "x-") || hasExtension(&v.Members[i].Value) {
			return true
		}
	}
	for i := range v.Items {
		if hasExtension(&v.Items[i]) {
			return true
		}
	}
	return false
}
