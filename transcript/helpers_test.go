package transcript

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// rec is one record of a hand-built transcript: kind and payload JSON
// (any member order and spacing; it is canonicalized).
type rec struct{ kind, payload string }

const testRunID = "run-test"

const configJSON = `{"seed":"7","clock":{"mode":"manual","initial_ms":100},"locale":"en-US","timezone":"UTC",
 "terminal":{"columns":80,"rows":24,"capabilities":["ansi"]},"filesystem":{"mode":"sandbox","root_id":"root"},
 "network":{"mode":"deny"}}`

const subjectJSON = `{"format":"termverify.replay-subject/v1","application":{"id":"app","version":"1","build":"b1"},
 "fixture":{"id":"fx","version":"1"},"adapter":{"id":"termverify-sandbox","version":"0.1.0"},
 "normalizer":{"id":"id","version":"1"},"state_schema":{"id":"st","version":"1"}}`

func startedRec() rec {
	return rec{KindRunStarted, `{"config":` + configJSON + `,"subject":` + subjectJSON + `}`}
}

var effective = map[string]string{
	"seed": `"7"`, "clock": `{"mode":"manual","initial_ms":100}`, "locale": `"en-US"`, "timezone": `"UTC"`,
	"terminal": `{"columns":80,"rows":24,"capabilities":["ansi"]}`, "filesystem": `{"mode":"sandbox","root_id":"root"}`,
	"network": `{"mode":"deny"}`,
}

func appliedRec(c string, extra string) rec {
	return rec{KindCapability, `{"constraint":"` + c + `","status":"applied","effective":` + effective[c] + `,"tier":"os"` + extra + `}`}
}

// negotiated is run.started and seven applied os-tier results.
func negotiated() []rec {
	out := []rec{startedRec()}
	for _, c := range receipts.Constraints() {
		out = append(out, appliedRec(string(c), ""))
	}
	return out
}

func obsAt(ms int64, extra string) rec {
	return rec{KindObservation, fmt.Sprintf(`{"at_ms":%d,"state":null,"events":[],"ui":{"regions":[],"focus":null,"cursor":{"column":0,"row":0,"visible":false},"mode":null}%s}`, ms, extra)}
}

func textAt(ms int64) rec { return rec{KindInputText, fmt.Sprintf(`{"at_ms":%d,"text":"hi"}`, ms)} }

func diagAt(ms int64) rec {
	return rec{KindDiagnostic, fmt.Sprintf(`{"at_ms":%d,"code":"note","message":"m"}`, ms)}
}

func finished(code int) rec {
	return rec{KindRunFinished, fmt.Sprintf(`{"exit":{"kind":"code","value":%d}}`, code)}
}

func failed() rec {
	return rec{KindRunFailed, `{"error":{"code":"adapter-runtime-failed","message":"x"}}`}
}

// body is negotiated + readiness at 100 + the given records.
func body(rs ...rec) []rec {
	return append(append(negotiated(), obsAt(100, "")), rs...)
}

// canonLine canonicalizes one JSON object (test input is trusted).
func canonLine(tb testing.TB, s string) []byte {
	tb.Helper()
	v, _, err := canon.Decode([]byte(s))
	if err != nil {
		tb.Fatalf("test JSON %q: %v", s, err)
	}
	out, err := canon.Marshal(&v)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// build renders records as a transcript with seq and ids assigned.
func build(tb testing.TB, rs []rec) []byte {
	tb.Helper()
	var b []byte
	for i, r := range rs {
		env := fmt.Sprintf(`{"protocol":%q,"run_id":%q,"seq":%d,"id":"record-%04d","kind":%q,"payload":%s}`,
			Protocol, testRunID, i, i, r.kind, r.payload)
		b = append(b, canonLine(tb, env)...)
		b = append(b, '\n')
	}
	return b
}

// ruleOf returns the Rule of a *transcript.Error, "" for nil, and fails
// the test for any other error type.
func ruleOf(tb testing.TB, err error) string {
	tb.Helper()
	if err == nil {
		return ""
	}
	e, ok := errors.AsType[*Error](err)
	if !ok {
		tb.Fatalf("error %T is not a *transcript.Error: %v", err, err)
	}
	return e.Rule
}

// testConfig is configJSON as a config.Config.
func testConfig(tb testing.TB) config.Config {
	tb.Helper()
	v, _, err := canon.Decode([]byte(strings.ReplaceAll(configJSON, "\n", "")))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := config.Decode(&v)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func testSubject() Subject {
	return Subject{
		Application: Application{ID: "app", Version: "1", Build: "b1"},
		Fixture:     Selector{"fx", "1"},
		Adapter:     Selector{"termverify-sandbox", "0.1.0"},
		Normalizer:  Selector{"id", "1"},
		StateSchema: Selector{"st", "1"},
	}
}
