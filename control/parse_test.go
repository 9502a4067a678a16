package control

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// line builds a message line from its kind and payload JSON text.
func line(kind, payload string) []byte {
	return []byte(`{"protocol":"termverify.control/v1","kind":"` + kind + `","payload":` + payload + "}\n")
}

// withEnvelope builds a line whose envelope also carries extra members.
func withEnvelope(kind, payload, extra string) []byte {
	return []byte(`{"protocol":"termverify.control/v1","kind":"` + kind + `","payload":` + payload + `,` + extra + "}\n")
}

const (
	helloConfig = `{"seed":"42","clock":{"mode":"manual","initial_ms":0},"locale":"en-US","timezone":"UTC",` +
		`"terminal":{"columns":80,"rows":24,"capabilities":[]},"filesystem":{"mode":"sandbox","root_id":"root"},"network":{"mode":"deny"}}`
	cursor = `"cursor":{"column":0,"row":0,"visible":true}`
)

func hello(runID, atMS string) []byte {
	return line("session.hello", `{"run_id":"`+runID+`","config":`+helloConfig+`,"at_ms":`+atMS+`}`)
}

// obs returns an observation payload with the given ui members (after
// regions) and extra payload members.
func obs(ui, extra string) string {
	return `{"state":null,"ui":{"regions":[]` + ui + `,` + cursor + `},"events":[]` + extra + `}`
}

func region(id string) string {
	return `{"id":"` + id + `","role":"main","column":0,"row":0,"columns":10,"rows":5}`
}

// padded returns an input.stop line whose body is exactly n bytes, padded
// with insignificant whitespace (accepted on this wire) so that no string
// budget is touched.
func padded(n int) []byte {
	head := `{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}`
	return []byte(head + strings.Repeat(" ", n-len(head)-1) + "}\n")
}

// nested returns a JSON array nested n deep.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// zeros returns a JSON array of n zeros.
func zeros(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }

// valuesArray returns an x-v array that brings a message to exactly n JSON
// values: the envelope object, protocol, kind and payload are 4 values, the
// x-v array 1, and 7 inner arrays hold the rest without breaking the
// per-collection item limit.
func valuesArray(n int) string {
	rest := n - 4 - 1 - 7
	inner := make([]string, 7)
	for i := range inner {
		k := rest / 7
		if i < rest%7 {
			k++
		}
		inner[i] = zeros(k)
	}
	return `"x-v":[` + strings.Join(inner, ",") + `]`
}

// stringsLine returns an input.text line whose strings and keys total
// exactly n UTF-8 bytes, with no single string over 1 MiB.
func stringsLine(n int) []byte {
	fixed := len("protocol") + len(Protocol) + len("kind") + len("input.text") + len("payload") + len("text") + len("x-a")
	text := canon.MaxStringBytes
	return withEnvelope("input.text", `{"text":"`+strings.Repeat("a", text)+`"}`, `"x-a":"`+strings.Repeat("b", n-fixed-text)+`"`)
}

type ruleCase struct {
	name   string
	line   []byte
	rule   string // "" means valid
	member string // checked when set
	kind   Kind   // checked for valid lines when set
}

func ruleCases() []ruleCase {
	digits := strings.Repeat("7", 10_000)
	return []ruleCase{
		// Framing, in upstream's order.
		{name: "4 MiB body", line: padded(canon.MaxLineBytes), kind: KindInputStop},
		{name: "4 MiB + 1 body", line: padded(canon.MaxLineBytes + 1), rule: RuleLineBytes},
		{name: "over 4 MiB beats CR", line: append(padded(canon.MaxLineBytes + 1)[:canon.MaxLineBytes], "\r\n"...), rule: RuleLineBytes},
		{name: "BOM", line: append([]byte{0xEF, 0xBB, 0xBF}, line("input.stop", "{}")...), rule: RuleBOM},
		{name: "CRLF", line: []byte(`{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}}` + "\r\n"), rule: RuleCR},
		{name: "CR beats missing LF", line: []byte("{\r}"), rule: RuleCR},
		{name: "missing LF", line: []byte(`{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}}`), rule: RuleMissingLF},
		{name: "empty input", line: nil, rule: RuleMissingLF},
		{name: "embedded LF", line: []byte("{\"protocol\":\n\"x\"}\n"), rule: RuleEmbeddedLF},
		{name: "blank line", line: []byte("\n"), rule: canon.RuleSyntax},
		{name: "nesting 64", line: withEnvelope("input.stop", `{"x-v":`+nested(62)+`}`, `"x-a":1`), kind: KindInputStop},
		{name: "nesting 65", line: withEnvelope("input.stop", `{"x-v":`+nested(63)+`}`, `"x-a":1`), rule: RuleDepth},
		{name: "depth beats bad UTF-8", line: []byte(nested(65) + "\xff\n"), rule: RuleDepth},
		{name: "brackets in strings do not nest", line: withEnvelope("input.stop", `{}`, `"x-s":"`+strings.Repeat("[", 100)+`"`), kind: KindInputStop},
		{name: "bad UTF-8", line: []byte("{\"protocol\":\"\xff\"}\n"), rule: canon.RuleUTF8},
		{name: "not JSON", line: []byte("not json\n"), rule: canon.RuleSyntax},
		{name: "trailing data", line: []byte(`{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}} {}` + "\n"), rule: canon.RuleSyntax},
		{name: "top-level array", line: []byte("[1]\n"), rule: canon.RuleNotObject},

		// JSON-level rules, anywhere in the message.
		{name: "duplicate envelope member", line: []byte(`{"protocol":"termverify.control/v1","kind":"input.stop","kind":"input.stop","payload":{}}` + "\n"), rule: canon.RuleDuplicateMember},
		{name: "duplicate member deep in state", line: line("observation", `{"state":{"a":{"b":[{"c":1,"d":2,"c":3}]}},"ui":{"regions":[],`+cursor+`},"events":[]}`), rule: canon.RuleDuplicateMember},
		{name: "lone high surrogate", line: line("input.text", `{"text":"\ud800"}`), rule: canon.RuleLoneSurrogate},
		{name: "lone low surrogate", line: line("input.text", `{"text":"a\udc00b"}`), rule: canon.RuleLoneSurrogate},
		{name: "high surrogate then non-surrogate", line: line("input.text", `{"text":"\ud800\u0041"}`), rule: canon.RuleLoneSurrogate},
		{name: "lone surrogate in a key", line: line("observation", `{"state":{"k\udfff":1},"ui":{"regions":[],`+cursor+`},"events":[]}`), rule: canon.RuleLoneSurrogate},
		{name: "surrogate pair", line: line("input.text", `{"text":"\ud83d\ude00"}`), kind: KindInputText},
		{name: "NaN", line: withEnvelope("input.stop", "{}", `"x-v":NaN`), rule: canon.RuleNonFinite},
		{name: "overflowing float", line: withEnvelope("input.stop", "{}", `"x-v":1e400`), rule: canon.RuleNonFinite},
		{name: "16,384 items", line: withEnvelope("input.stop", "{}", `"x-v":`+zeros(canon.MaxItems)), kind: KindInputStop},
		{name: "16,385 items", line: withEnvelope("input.stop", "{}", `"x-v":`+zeros(canon.MaxItems+1)), rule: canon.RuleItems},
		{name: "100,000 values", line: withEnvelope("input.stop", "{}", valuesArray(canon.MaxValues)), kind: KindInputStop},
		{name: "100,001 values", line: withEnvelope("input.stop", "{}", valuesArray(canon.MaxValues+1)), rule: canon.RuleValues},
		{name: "1 MiB string", line: line("input.text", `{"text":"`+strings.Repeat("a", canon.MaxStringBytes)+`"}`), kind: KindInputText},
		{name: "1 MiB + 1 string", line: line("input.text", `{"text":"`+strings.Repeat("a", canon.MaxStringBytes+1)+`"}`), rule: canon.RuleStringBytes},
		{name: "2 MiB of strings", line: stringsLine(canon.MaxRecordStringBytes), kind: KindInputText},
		{name: "2 MiB + 1 of strings", line: stringsLine(canon.MaxRecordStringBytes + 1), rule: canon.RuleRecordStringBytes},

		// Integers: ours rejects beyond ±(2^53−1), upstream accepts (ADAPTER-RULES.md, better #3, #4).
		{name: "integer 2^53-1", line: line("input.clock", `{"at_ms":9007199254740991}`), kind: KindInputClock},
		{name: "integer 2^53", line: line("input.clock", `{"at_ms":9007199254740992}`), rule: canon.RuleIntegerRange},
		{name: "integer -(2^53-1) exit code", line: line("run.finished", `{"exit":{"kind":"code","value":-9007199254740991}}`), kind: KindRunFinished},
		{name: "integer -2^53 exit code", line: line("run.finished", `{"exit":{"kind":"code","value":-9007199254740992}}`), rule: canon.RuleIntegerRange},
		{name: "integer 2^53 in opaque state", line: line("observation", `{"state":9007199254740992,"ui":{"regions":[],`+cursor+`},"events":[]}`), rule: canon.RuleIntegerRange},
		{name: "float spelled as an integer beyond 2^53 in state", line: line("observation", `{"state":{"a":[1.5,1e20]},"ui":{"regions":[],`+cursor+`},"events":[]}`), rule: canon.RuleIntegerRange, member: "payload.state"},
		{name: "float spelled as 2^53 in event data", line: line("observation", `{"state":null,"ui":{"regions":[],`+cursor+`},"events":[{"type":"t","data":9007199254740992.0}]}`), rule: canon.RuleIntegerRange, member: "payload.events[0].data"},
		{name: "float spelled as an integer beyond 2^53 in details", line: line("diagnostic", `{"code":"c","message":"m","details":-1E+20}`), rule: canon.RuleIntegerRange, member: "payload.details"},
		{name: "float 1e21 in state", line: line("observation", `{"state":[1e21,9007199254740991.0],"ui":{"regions":[],`+cursor+`},"events":[]}`), kind: KindObservation},
		{name: "10,000-digit integer", line: line("input.clock", `{"at_ms":`+digits+`}`), rule: canon.RuleIntegerRange},
		{name: "10,000-digit integer in x-", line: withEnvelope("input.stop", "{}", `"x-v":-`+digits), rule: canon.RuleIntegerRange},
		{name: "10,000-digit float overflows", line: withEnvelope("input.stop", "{}", `"x-v":`+digits+`.5`), rule: canon.RuleNonFinite},
		{name: "10,000-digit fraction is finite", line: withEnvelope("input.stop", "{}", `"x-v":0.`+digits), kind: KindInputStop},
		{name: "float for integer 1.0", line: line("input.clock", `{"at_ms":1.0}`), rule: RuleInteger, member: "payload.at_ms"},
		{name: "float for integer 1e2", line: line("input.resize", `{"columns":1e2,"rows":1}`), rule: RuleInteger, member: "payload.columns"},
		{name: "string for integer", line: line("input.resize", `{"columns":80,"rows":"24"}`), rule: RuleInteger, member: "payload.rows"},
		{name: "boolean for integer", line: line("input.clock", `{"at_ms":true}`), rule: RuleInteger},

		// Envelope.
		{name: "non-canonical envelope", line: []byte(`{ "payload" : { } , "kind" : "input.stop" , "protocol" : "termverify.control\/v1" }` + "\n"), kind: KindInputStop},
		{name: "x- envelope member", line: withEnvelope("input.stop", "{}", `"x-trace":{"a":[1]}`), kind: KindInputStop},
		{name: "reserved envelope member", line: withEnvelope("input.stop", "{}", `"extra":1`), rule: RuleEnvelopeUnknown, member: "extra"},
		{name: "odd envelope member name", line: withEnvelope("input.stop", "{}", `"a b\n":1`), rule: RuleEnvelopeUnknown, member: `["a b\n"]`},
		{name: "reserved beats missing", line: []byte(`{"extra":1}` + "\n"), rule: RuleEnvelopeUnknown},
		{name: "missing protocol", line: []byte(`{"kind":"input.stop","payload":{}}` + "\n"), rule: RuleEnvelopeMissing, member: "protocol"},
		{name: "missing kind", line: []byte(`{"protocol":"termverify.control/v1","payload":{}}` + "\n"), rule: RuleEnvelopeMissing, member: "kind"},
		{name: "missing payload", line: []byte(`{"protocol":"termverify.control/v1","kind":"input.stop"}` + "\n"), rule: RuleEnvelopeMissing, member: "payload"},
		{name: "wrong protocol", line: []byte(`{"protocol":"termverify.control/v2","kind":"input.stop","payload":{}}` + "\n"), rule: RuleProtocol},
		{name: "protocol not a string", line: []byte(`{"protocol":1,"kind":"input.stop","payload":{}}` + "\n"), rule: RuleProtocol},
		{name: "protocol beats kind", line: []byte(`{"protocol":"x","kind":"bogus","payload":{}}` + "\n"), rule: RuleProtocol},
		{name: "unknown kind", line: line("bogus", "{}"), rule: RuleKind},
		{name: "transcript-only kind", line: line("input.clock_advanced", `{"delta_ms":1}`), rule: RuleKind},
		{name: "kind not a string", line: []byte(`{"protocol":"termverify.control/v1","kind":["input.stop"],"payload":{}}` + "\n"), rule: RuleKind},
		{name: "payload not an object", line: line("input.stop", "[]"), rule: RuleType, member: "payload"},

		// session.hello.
		{name: "hello", line: hello("run-1", "0"), kind: KindSessionHello},
		{name: "hello run_id grammar", line: hello("Run", "0"), rule: RuleIdentifier, member: "payload.run_id"},
		{name: "hello empty run_id", line: hello("", "0"), rule: RuleIdentifier},
		{name: "hello negative at_ms", line: hello("r", "-1"), rule: RuleRange, member: "payload.at_ms"},
		{name: "hello bad config", line: line("session.hello", `{"run_id":"r","config":{},"at_ms":0}`), rule: config.RuleMembers, member: "payload.config"},
		{name: "hello config seed", line: line("session.hello", `{"run_id":"r","config":`+strings.Replace(helloConfig, `"42"`, `"042"`, 1)+`,"at_ms":0}`), rule: config.RuleSeed, member: "payload.config.seed"},
		{name: "hello reserved member", line: line("session.hello", `{"run_id":"r","config":`+helloConfig+`,"at_ms":0,"seed":1}`), rule: RuleUnknownMember, member: "payload.seed"},
		{name: "hello missing at_ms", line: line("session.hello", `{"run_id":"r","config":`+helloConfig+`}`), rule: RuleMissingMember, member: "payload.at_ms"},

		// Inputs.
		{name: "text empty", line: line("input.text", `{"text":""}`), kind: KindInputText},
		{name: "text not a string", line: line("input.text", `{"text":null}`), rule: RuleType},
		{name: "key", line: line("input.key", `{"keys":["Control","c"]}`), kind: KindInputKey},
		{name: "key empty", line: line("input.key", `{"keys":[]}`), rule: RuleEmpty, member: "payload.keys"},
		{name: "key not strings", line: line("input.key", `{"keys":["a",1]}`), rule: RuleType, member: "payload.keys[1]"},
		{name: "resize zero", line: line("input.resize", `{"columns":0,"rows":1}`), rule: RuleRange},
		{name: "clock negative", line: line("input.clock", `{"at_ms":-1}`), rule: RuleRange},
		{name: "clock x- member", line: line("input.clock", `{"at_ms":5,"x-why":"t"}`), kind: KindInputClock},
		{name: "stop reserved", line: line("input.stop", `{"at_ms":0}`), rule: RuleUnknownMember, member: "payload.at_ms"},

		// Handshake replies.
		{name: "unsupported", line: line("session.unsupported", `{"constraint":"timezone","code":"constraint-unsupported","message":"m","details":{"zone":"X"}}`), kind: KindUnsupported},
		{name: "unsupported constraint", line: line("session.unsupported", `{"constraint":"gpu","code":"constraint-unsupported","message":"m"}`), rule: RuleVocabulary, member: "payload.constraint"},
		{name: "unsupported code", line: line("session.unsupported", `{"constraint":"seed","code":"nope","message":"m"}`), rule: RuleVocabulary, member: "payload.code"},
		{name: "session.failed", line: line("session.failed", `{"error":{"code":"boom","message":"m"}}`), kind: KindSessionFailed},
		{name: "session.failed empty code", line: line("session.failed", `{"error":{"code":"","message":"m"}}`), rule: RuleEmpty, member: "payload.error.code"},
		{name: "diagnostic", line: line("diagnostic", `{"code":"c","message":"","details":[1,{"b":2,"a":1}]}`), kind: KindDiagnostic},
		{name: "diagnostic reserved", line: line("diagnostic", `{"code":"c","message":"m","at_ms":0}`), rule: RuleUnknownMember},
		{name: "run.failed details", line: line("run.failed", `{"error":{"code":"c","message":"m","details":null}}`), kind: KindRunFailed},
		{name: "run.finished signal", line: line("run.finished", `{"exit":{"kind":"signal","value":"KILL"}}`), kind: KindRunFinished},
		{name: "run.finished signal empty", line: line("run.finished", `{"exit":{"kind":"signal","value":""}}`), rule: RuleEmpty},
		{name: "run.finished signal number", line: line("run.finished", `{"exit":{"kind":"signal","value":9}}`), rule: RuleType},
		{name: "run.finished code float", line: line("run.finished", `{"exit":{"kind":"code","value":0.0}}`), rule: RuleInteger},

		// Observations and readiness.
		{name: "observation minimal", line: line("observation", obs("", "")), kind: KindObservation},
		{name: "observation full", line: line("observation", `{"state":{"n":1.50},"ui":{"regions":[`+region("a")+`,`+region("b")+`],"focus":"b","mode":"insert",`+cursor+`},"events":[{"type":"t","data":{"k":[]}}],"frame":{"lines":["ab",""],"columns":2,"rows":2},"process":{"state":"running"}}`), kind: KindObservation},
		{name: "observation exited", line: line("observation", obs("", `,"process":{"state":"exited","exit":{"kind":"code","value":3}}`)), kind: KindObservation},
		{name: "ready exited", line: line("session.ready", `{"observation":`+obs("", `,"process":{"state":"exited","exit":{"kind":"signal","value":"TERM"}}`)+`}`), rule: RuleExitedInReady, member: "payload.observation.process"},
		{name: "ready running", line: line("session.ready", `{"observation":`+obs("", `,"process":{"state":"running"}`)+`}`), kind: KindSessionReady},
		{name: "ready nested reserved", line: line("session.ready", `{"observation":`+obs(`,"bogus":1`, "")+`}`), rule: RuleUnknownMember, member: "payload.observation.ui.bogus"},
		{name: "ready missing cursor", line: line("session.ready", `{"observation":{"state":null,"ui":{"regions":[]},"events":[]}}`), rule: RuleMissingMember, member: "payload.observation.ui.cursor"},
		{name: "cursor negative", line: line("observation", `{"state":null,"ui":{"regions":[],"cursor":{"column":0,"row":-1,"visible":true}},"events":[]}`), rule: RuleRange, member: "payload.ui.cursor.row"},
		{name: "cursor visible not bool", line: line("observation", `{"state":null,"ui":{"regions":[],"cursor":{"column":0,"row":0,"visible":"yes"}},"events":[]}`), rule: RuleType, member: "payload.ui.cursor.visible"},
		{name: "regions missing", line: line("observation", `{"state":null,"ui":{`+cursor+`},"events":[]}`), rule: RuleMissingMember, member: "payload.ui.regions"},
		{name: "events missing", line: line("observation", `{"state":null,"ui":{"regions":[],`+cursor+`}}`), rule: RuleMissingMember, member: "payload.events"},
		{name: "state null allowed, absent not", line: line("observation", `{"ui":{"regions":[],`+cursor+`},"events":[]}`), rule: RuleMissingMember, member: "payload.state"},
		{name: "duplicate region", line: line("observation", `{"state":null,"ui":{"regions":[`+region("a")+`,`+region("a")+`],`+cursor+`},"events":[]}`), rule: RuleDuplicateRegion, member: "payload.ui.regions[1].id"},
		{name: "duplicate region among many", line: line("observation", `{"state":null,"ui":{"regions":[`+manyRegions(20, 17)+`],`+cursor+`},"events":[]}`), rule: RuleDuplicateRegion, member: "payload.ui.regions[17].id"},
		{name: "many distinct regions", line: line("observation", `{"state":null,"ui":{"regions":[`+manyRegions(20, -1)+`],"focus":"r19",`+cursor+`},"events":[]}`), kind: KindObservation},
		{name: "focus unknown", line: line("observation", obs(`,"focus":"ghost"`, "")), rule: RuleFocusUnknown, member: "payload.ui.focus"},
		{name: "focus empty", line: line("observation", obs(`,"focus":""`, "")), rule: RuleEmpty},
		{name: "focus null", line: line("observation", obs(`,"focus":null,"mode":null`, "")), kind: KindObservation},
		{name: "mode number", line: line("observation", obs(`,"mode":1`, "")), rule: RuleType, member: "payload.ui.mode"},
		{name: "region zero columns", line: line("observation", `{"state":null,"ui":{"regions":[{"id":"a","role":"r","column":0,"row":0,"columns":0,"rows":1}],`+cursor+`},"events":[]}`), rule: RuleRange, member: "payload.ui.regions[0].columns"},
		{name: "transcript-shaped region", line: line("observation", `{"state":null,"ui":{"regions":[{"id":"a","role":"r","bounds":{"column":0,"row":0,"columns":1,"rows":1}}],`+cursor+`},"events":[]}`), rule: RuleUnknownMember, member: "payload.ui.regions[0].bounds"},
		{name: "event without data", line: line("observation", obs("", "")[:len(obs("", ""))-len(`"events":[]}`)]+`"events":[{"type":"t"}]}`), rule: RuleMissingMember, member: "payload.events[0].data"},
		{name: "frame rows mismatch", line: line("observation", obs("", `,"frame":{"lines":["a"],"columns":1,"rows":2}`)), rule: RuleFrameRows, member: "payload.frame.lines"},
		{name: "frame more lines than rows", line: line("observation", obs("", `,"frame":{"lines":["a","b","c"],"columns":1,"rows":2}`)), rule: RuleFrameRows, member: "payload.frame.lines"},
		{name: "frame line not a string", line: line("observation", obs("", `,"frame":{"lines":[null],"columns":1,"rows":1}`)), rule: RuleType, member: "payload.frame.lines[0]"},
		{name: "running with exit", line: line("observation", obs("", `,"process":{"state":"running","exit":{"kind":"code","value":0}}`)), rule: RuleRunningWithExit},
		{name: "exited without exit", line: line("observation", obs("", `,"process":{"state":"exited"}`)), rule: RuleExitedWithoutExit},
		{name: "process state", line: line("observation", obs("", `,"process":{"state":"zombie"}`)), rule: RuleVocabulary, member: "payload.process.state"},
		{name: "exit kind", line: line("observation", obs("", `,"process":{"state":"exited","exit":{"kind":"core","value":0}}`)), rule: RuleVocabulary, member: "payload.process.exit.kind"},
	}
}

// manyRegions returns n regions r0…r(n-1); region dup (if ≥ 0) reuses r0's id.
func manyRegions(n, dup int) string {
	list := make([]string, n)
	for i := range list {
		id := fmt.Sprintf("r%d", i)
		if i == dup {
			id = "r0"
		}
		list[i] = region(id)
	}
	return strings.Join(list, ",")
}

// TestParseRules asserts the Rule (and member path) each table case breaks,
// or that it is valid; never the message text.
func TestParseRules(t *testing.T) {
	for _, tc := range ruleCases() {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.line)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if tc.kind != "" && m.Kind() != tc.kind {
					t.Fatalf("kind %s, want %s", m.Kind(), tc.kind)
				}
				roundTrip(t, m)
				return
			}
			if err == nil {
				t.Fatalf("accepted as %s, want %s", m.Kind(), tc.rule)
			}
			ce, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("error %T is not a *control.Error: %v", err, err)
			}
			if ce.Rule != tc.rule {
				t.Fatalf("rule %s, want %s (%v)", ce.Rule, tc.rule, err)
			}
			if ce.Class != PeerMalformed {
				t.Fatalf("class %q, want %q", ce.Class, PeerMalformed)
			}
			if tc.member != "" && ce.Member != tc.member {
				t.Fatalf("member %q, want %q (%v)", ce.Member, tc.member, err)
			}
		})
	}
}

// TestParseTyped checks the typed result of representative messages,
// including the canonical form of opaque values and dropped x- members.
func TestParseTyped(t *testing.T) {
	focus, mode := "b", "insert"
	state := canon.ObjectValue(canon.M("a", canon.IntValue(1)), canon.M("b", canon.Value{Kind: canon.Number, Str: "1.5"}))
	details := canon.ArrayValue(canon.IntValue(100))
	diagDetails := canon.ObjectValue(canon.M("a", canon.IntValue(2)), canon.M("b", canon.IntValue(1)))
	tests := []struct {
		name string
		line []byte
		want Message
	}{
		{"observation", line("observation", `{"state":{"b":1.50,"a":1.0},"ui":{"regions":[`+region("a")+`,`+region("b")+`],"focus":"b","mode":"insert",`+cursor+`,"x-t":1},"events":[{"type":"t","data":null,"x-e":2}],"frame":{"lines":["ab",""],"columns":2,"rows":2},"process":{"state":"exited","exit":{"kind":"signal","value":"KILL"}}}`),
			Observation{
				State: state,
				UI: UI{
					Regions: []Region{{ID: "a", Role: "main", Columns: 10, Rows: 5}, {ID: "b", Role: "main", Columns: 10, Rows: 5}},
					Focus:   &focus, Mode: &mode, Cursor: Cursor{Visible: true},
				},
				Events:  []Event{{Type: "t"}},
				Frame:   &Frame{Lines: []string{"ab", ""}, Columns: 2, Rows: 2},
				Process: &Process{State: ProcessExited, Exit: &Exit{Kind: ExitSignal, Signal: "KILL"}},
			}},
		{"unsupported", line("session.unsupported", `{"constraint":"network","code":"constraint-not-enforced","message":"m","details":[1e2]}`),
			Unsupported{Constraint: "network", Code: receipts.CodeNotEnforced, Message: "m", Details: &details}},
		{"scalar state and event data respelled", line("observation", `{"state":1.50,"ui":{"regions":[],`+cursor+`},"events":[{"type":"t","data":-0}]}`),
			Observation{State: canon.Value{Kind: canon.Number, Str: "1.5"}, UI: UI{Regions: []Region{}, Cursor: Cursor{Visible: true}},
				Events: []Event{{Type: "t", Data: canon.Value{Kind: canon.Number, Str: "0"}}}}},
		{"diagnostic details sorted", line("diagnostic", `{"code":"c","message":"m","details":{"b":1,"a":2}}`),
			Diagnostic{Code: "c", Message: "m", Details: &diagDetails}},
		{"run.failed without details", line("run.failed", `{"error":{"code":"c","message":"m"}}`), RunFailed{Error: Failure{Code: "c", Message: "m"}}},
		{"key", line("input.key", `{"keys":["Enter"]}`), Key{Keys: []string{"Enter"}}},
		{"resize", line("input.resize", `{"columns":120,"rows":40}`), Resize{Columns: 120, Rows: 40}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func testConfig() config.Config {
	return config.Config{
		Seed:       "42",
		Clock:      config.Clock{Mode: "manual", InitialMS: 1000},
		Locale:     "en-US",
		Timezone:   "UTC",
		Terminal:   config.Terminal{Columns: 80, Rows: 24, Capabilities: []string{}},
		Filesystem: config.Filesystem{Mode: "sandbox", RootID: "root"},
		Network:    config.Network{Mode: config.NetworkAllowList, Allowed: []config.HostPort{{Host: "example.org", Port: 443}}},
	}
}

// TestEncode pins the canonical bytes of the adapter's messages and checks
// that they parse back unchanged.
func TestEncode(t *testing.T) {
	tests := []struct {
		m    Message
		want string
	}{
		{NewHello("run-1", testConfig()), `{"kind":"session.hello","payload":{"at_ms":1000,"config":{"clock":{"initial_ms":1000,"mode":"manual"},"filesystem":{"mode":"sandbox","root_id":"root"},"locale":"en-US","network":{"allowed":[{"host":"example.org","port":443}],"mode":"allow-list"},"seed":"42","terminal":{"capabilities":[],"columns":80,"rows":24},"timezone":"UTC"},"run_id":"run-1"},"protocol":"termverify.control/v1"}`},
		{Text{Text: "é\n\"\x01"}, `{"kind":"input.text","payload":{"text":"é\n\"\u0001"},"protocol":"termverify.control/v1"}`},
		{Key{Keys: []string{"Control", "c"}}, `{"kind":"input.key","payload":{"keys":["Control","c"]},"protocol":"termverify.control/v1"}`},
		{Resize{Columns: 100, Rows: 30}, `{"kind":"input.resize","payload":{"columns":100,"rows":30},"protocol":"termverify.control/v1"}`},
		{Clock{AtMS: 1250}, `{"kind":"input.clock","payload":{"at_ms":1250},"protocol":"termverify.control/v1"}`},
		{Stop{}, `{"kind":"input.stop","payload":{},"protocol":"termverify.control/v1"}`},
		{Observation{State: canon.NullValue(), UI: UI{Regions: []Region{}}, Events: []Event{}}, `{"kind":"observation","payload":{"events":[],"state":null,"ui":{"cursor":{"column":0,"row":0,"visible":false},"focus":null,"mode":null,"regions":[]}},"protocol":"termverify.control/v1"}`},
		{RunFinished{Exit: Exit{Kind: ExitCode, Code: -1}}, `{"kind":"run.finished","payload":{"exit":{"kind":"code","value":-1}},"protocol":"termverify.control/v1"}`},
	}
	var enc Encoder // one for every case, as the supervisor uses one
	for _, tc := range tests {
		t.Run(string(tc.m.Kind()), func(t *testing.T) {
			got, err := Encode(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want+"\n" {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			roundTrip(t, tc.m)
			appended, err := enc.Append([]byte("prefix"), tc.m)
			if err != nil || string(appended) != "prefix"+tc.want+"\n" {
				t.Fatalf("Encoder.Append = %q, %v; want the prefix and the line", appended, err)
			}
		})
	}
}

// TestEncodeRefuses checks that Encode never writes what Parse rejects.
func TestEncodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		rule string // "" when the failure is canon's, before Parse
	}{
		{"nil", nil, ""},
		{"zero resize", Resize{}, RuleRange},
		{"empty key", Key{}, RuleEmpty},
		{"bad run id", NewHello("Run 1", testConfig()), RuleIdentifier},
		{"negative clock", Clock{AtMS: -5}, RuleRange},
		{"invalid UTF-8", Text{Text: "\xff"}, ""},
		{"clock beyond 2^53", Clock{AtMS: 1 << 53}, ""},
		{"exited readiness", Ready{Observation: Observation{UI: UI{Regions: []Region{}}, Events: []Event{}, Process: &Process{State: ProcessExited, Exit: &Exit{Kind: ExitCode}}}}, RuleExitedInReady},
		{"over 1 MiB", Text{Text: strings.Repeat("a", canon.MaxStringBytes+1)}, canon.RuleStringBytes},
	}
	var enc Encoder
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(tc.m)
			if err == nil {
				t.Fatalf("encoded %q", b)
			}
			dst, encErr := enc.Append([]byte("prefix"), tc.m)
			if encErr == nil || encErr.Error() != err.Error() || string(dst) != "prefix" {
				t.Fatalf("Encoder.Append = %q, %v; want the prefix and Encode's error %v", dst, encErr, err)
			}
			if tc.rule == "" {
				return
			}
			ce, ok := errors.AsType[*Error](err)
			if !ok || ce.Rule != tc.rule {
				t.Fatalf("error %v, want rule %s", err, tc.rule)
			}
		})
	}
}

// TestKinds checks the kind set and directions.
func TestKinds(t *testing.T) {
	adapter, subject := 0, 0
	for _, k := range Kinds() {
		switch k.Direction() {
		case AdapterToSubject:
			adapter++
		case SubjectToAdapter:
			subject++
		default:
			t.Errorf("%s has no direction", k)
		}
	}
	if adapter != 6 || subject != 7 {
		t.Errorf("%d adapter and %d subject kinds, want 6 and 7", adapter, subject)
	}
	if Kind("input.clock_advanced").Direction() != 0 {
		t.Error("a transcript kind has a direction")
	}
}
