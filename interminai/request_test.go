package interminai

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// decodeCase is one request line and what Decode makes of it: want, or an
// *Error with rule and field.
type decodeCase struct {
	name  string
	line  string
	want  Request
	rule  string
	field string
}

// decodeCases is the decoding table; FuzzRequest seeds from it too.
func decodeCases() []decodeCase {
	return []decodeCase{
		// The seed's own wire examples.
		{name: "seed INPUT", line: `{"type":"INPUT","data":"ihello\u001b:wq\n"}`, want: &Input{Data: "ihello\x1b:wq\n"}},
		{name: "seed OUTPUT", line: `{"type":"OUTPUT","format":"ascii"}`, want: &Output{Format: FormatASCII}},
		{name: "seed OUTPUT range", line: `{"type":"OUTPUT","format":"ansi","from":0,"to":null}`, want: &Output{Format: FormatANSI, From: Line{Kind: LineNumber}}},
		{name: "seed STATUS", line: `{"type":"STATUS","activity":false}`, want: &Status{}},
		{name: "seed WAIT", line: `{"type":"WAIT","activity":false}`, want: &Wait{}},
		{name: "seed KILL", line: `{"type":"KILL","signal":"SIGTERM"}`, want: &Kill{Signal: syscall.SIGTERM}},
		{name: "seed STOP", line: `{"type":"STOP"}`, want: &Stop{}},
		{name: "seed DEBUG", line: `{"type":"DEBUG","data":{"clear":false}}`, want: &Debug{}},

		// INPUT.
		{name: "input empty", line: `{"type":"INPUT","data":""}`, want: &Input{}},
		{name: "input surrogate pair", line: `{"type":"INPUT","data":"\ud83d\ude00"}`, want: &Input{Data: "😀"}},
		{name: "input escaped backslash before u", line: `{"type":"INPUT","data":"\\ud800"}`, want: &Input{Data: `\ud800`}},
		{name: "input missing data", line: `{"type":"INPUT"}`, rule: RuleMissingField, field: "data"},
		{name: "input null data", line: `{"type":"INPUT","data":null}`, rule: RuleMissingField, field: "data"},
		{name: "input data not string", line: `{"type":"INPUT","data":["a"]}`, rule: RuleFieldType, field: "data"},

		// OUTPUT's range.
		{name: "output defaults", line: `{"type":"OUTPUT"}`, want: &Output{Format: FormatASCII}},
		{name: "output from oldest", line: `{"type":"OUTPUT","from":"-","to":0}`, want: &Output{Format: FormatASCII, From: Line{Kind: LineOldest}, To: Line{Kind: LineNumber}}},
		{name: "output to oldest", line: `{"type":"OUTPUT","to":"-"}`, want: &Output{Format: FormatASCII, To: Line{Kind: LineOldest}}},
		{name: "output negative", line: `{"type":"OUTPUT","from":-100,"to":-1}`, want: &Output{Format: FormatASCII, From: Line{Kind: LineNumber, N: -100}, To: Line{Kind: LineNumber, N: -1}}},
		{name: "output null format", line: `{"type":"OUTPUT","format":null}`, want: &Output{Format: FormatASCII}},
		{name: "output format unknown", line: `{"type":"OUTPUT","format":"html"}`, rule: RuleFieldValue, field: "format"},
		{name: "output format not string", line: `{"type":"OUTPUT","format":1}`, rule: RuleFieldType, field: "format"},
		{name: "output from other string", line: `{"type":"OUTPUT","from":"5"}`, rule: RuleFieldType, field: "from"},
		{name: "output from two dashes", line: `{"type":"OUTPUT","from":"--"}`, rule: RuleFieldType, field: "from"},
		{name: "output from fraction", line: `{"type":"OUTPUT","from":1.5}`, rule: RuleFieldType, field: "from"},
		{name: "output from exponent", line: `{"type":"OUTPUT","from":1e2}`, rule: RuleFieldType, field: "from"},
		{name: "output from bool", line: `{"type":"OUTPUT","from":true}`, rule: RuleFieldType, field: "from"},
		{name: "output to object", line: `{"type":"OUTPUT","to":{}}`, rule: RuleFieldType, field: "to"},
		{name: "output from beyond int64", line: `{"type":"OUTPUT","from":-9223372036854775809}`, rule: RuleFieldType, field: "from"},
		{name: "output ignores data placement", line: `{"type":"OUTPUT","data":{"from":"x"}}`, want: &Output{Format: FormatASCII}},

		// STATUS.
		{name: "status activity", line: `{"type":"STATUS","activity":true}`, want: &Status{Activity: true}},
		{name: "status activity not bool", line: `{"type":"STATUS","activity":"yes"}`, rule: RuleFieldType, field: "activity"},
		{name: "status unknown member ignored", line: `{"type":"STATUS","verbose":[1,{"x":null}]}`, want: &Status{}},

		// WAIT, both placements and our modes.
		{name: "wait activity top", line: `{"type":"WAIT","activity":true}`, want: &Wait{Activity: true}},
		{name: "wait activity in data", line: `{"type":"WAIT","data":{"activity":true}}`, want: &Wait{Activity: true}},
		{name: "wait top wins over data", line: `{"type":"WAIT","activity":false,"data":{"activity":true}}`, want: &Wait{}},
		{name: "wait null top falls to data", line: `{"type":"WAIT","activity":null,"data":{"activity":true}}`, want: &Wait{Activity: true}},
		{name: "wait null data", line: `{"type":"WAIT","data":null}`, want: &Wait{}},
		{name: "wait settled with timeout", line: `{"type":"WAIT","settled":true,"timeout_ms":1500}`, want: &Wait{Settled: true, Timeout: 1500 * time.Millisecond, HasTimeout: true}},
		{name: "wait settled in data", line: `{"type":"WAIT","data":{"settled":true,"timeout_ms":0}}`, want: &Wait{Settled: true, HasTimeout: true}},
		{name: "wait contains on line", line: `{"type":"WAIT","contains":"$ ","line":24,"timeout_ms":100}`, want: &Wait{Contains: "$ ", Line: 24, Timeout: 100 * time.Millisecond, HasTimeout: true}},
		{name: "wait contains in data", line: `{"type":"WAIT","data":{"contains":"ok"}}`, want: &Wait{Contains: "ok"}},
		{name: "wait data not object", line: `{"type":"WAIT","data":"activity"}`, rule: RuleFieldType, field: "data"},
		{name: "wait activity not bool in data", line: `{"type":"WAIT","data":{"activity":1}}`, rule: RuleFieldType, field: "data.activity"},
		{name: "wait two modes", line: `{"type":"WAIT","activity":true,"settled":true}`, rule: RuleWaitModes},
		{name: "wait contains and settled", line: `{"type":"WAIT","settled":true,"data":{"contains":"x"}}`, rule: RuleWaitModes},
		{name: "wait empty contains", line: `{"type":"WAIT","contains":""}`, rule: RuleFieldValue, field: "contains"},
		{name: "wait line without contains", line: `{"type":"WAIT","line":3}`, rule: RuleMissingField, field: "contains"},
		{name: "wait line zero", line: `{"type":"WAIT","contains":"x","line":0}`, rule: RuleFieldValue, field: "line"},
		{name: "wait line past the screen", line: `{"type":"WAIT","contains":"x","line":1025}`, rule: RuleFieldValue, field: "line"},
		{name: "wait negative timeout", line: `{"type":"WAIT","timeout_ms":-1}`, rule: RuleFieldValue, field: "timeout_ms"},
		{name: "wait timeout too long", line: `{"type":"WAIT","timeout_ms":9223372036854775807}`, rule: RuleFieldValue, field: "timeout_ms"},
		{name: "wait timeout fraction", line: `{"type":"WAIT","timeout_ms":1.5}`, rule: RuleFieldType, field: "timeout_ms"},
		{name: "wait timeout string", line: `{"type":"WAIT","data":{"timeout_ms":"100"}}`, rule: RuleFieldType, field: "data.timeout_ms"},

		// KILL.
		{name: "kill default", line: `{"type":"KILL"}`, want: &Kill{Signal: syscall.SIGTERM}},
		{name: "kill number string", line: `{"type":"KILL","signal":"9"}`, want: &Kill{Signal: syscall.SIGKILL}},
		{name: "kill bare number", line: `{"type":"KILL","signal":2}`, want: &Kill{Signal: syscall.SIGINT}},
		{name: "kill short name in data", line: `{"type":"KILL","data":{"signal":"INT"}}`, want: &Kill{Signal: syscall.SIGINT}},
		{name: "kill top wins", line: `{"type":"KILL","signal":"HUP","data":{"signal":"KILL"}}`, want: &Kill{Signal: syscall.SIGHUP}},
		{name: "kill not a signal", line: `{"type":"KILL","signal":"NOTASIGNAL"}`, rule: RuleSignal, field: "signal"},
		{name: "kill 9999 in data", line: `{"type":"KILL","data":{"signal":"9999"}}`, rule: RuleSignal, field: "data.signal"},
		{name: "kill negative", line: `{"type":"KILL","signal":-9}`, rule: RuleSignal, field: "signal"},
		{name: "kill bool", line: `{"type":"KILL","signal":true}`, rule: RuleFieldType, field: "signal"},

		// RESIZE: ours to name (the seed omits it), both placements.
		{name: "resize top", line: `{"type":"RESIZE","cols":120,"rows":40}`, want: &Resize{Size: Size{Cols: 120, Rows: 40}}},
		{name: "resize in data", line: `{"type":"RESIZE","data":{"cols":100,"rows":30}}`, want: &Resize{Size: Size{Cols: 100, Rows: 30}}},
		{name: "resize split", line: `{"type":"RESIZE","cols":90,"data":{"cols":1,"rows":20}}`, want: &Resize{Size: Size{Cols: 90, Rows: 20}}},
		{name: "resize missing rows", line: `{"type":"RESIZE","cols":80}`, rule: RuleMissingField, field: "rows"},
		{name: "resize zero cols", line: `{"type":"RESIZE","cols":0,"rows":24}`, rule: RuleSize, field: "cols"},
		{name: "resize too many rows", line: `{"type":"RESIZE","cols":80,"rows":1025}`, rule: RuleSize, field: "rows"},
		{name: "resize huge", line: `{"type":"RESIZE","cols":80,"rows":4294967297}`, rule: RuleSize, field: "rows"},
		{name: "resize string", line: `{"type":"RESIZE","cols":"80","rows":24}`, rule: RuleFieldType, field: "cols"},

		// DEBUG.
		{name: "debug bare", line: `{"type":"DEBUG"}`, want: &Debug{}},
		{name: "debug clear top", line: `{"type":"DEBUG","clear":true}`, want: &Debug{Clear: true}},
		{name: "debug clear in data", line: `{"type":"DEBUG","data":{"clear":true}}`, want: &Debug{Clear: true}},
		{name: "debug data array", line: `{"type":"DEBUG","data":[]}`, rule: RuleFieldType, field: "data"},

		// RECEIPTS.
		{name: "receipts", line: `{"type":"RECEIPTS"}`, want: &Receipts{}},

		// "type".
		{name: "missing type", line: `{"data":"x"}`, rule: RuleMissingType, field: "type"},
		{name: "null type", line: `{"type":null}`, rule: RuleMissingType, field: "type"},
		{name: "type not string", line: `{"type":7}`, rule: RuleTypeNotString, field: "type"},
		{name: "unknown command", line: `{"type":"INVALID_COMMAND"}`, rule: RuleUnknownCommand, field: "type"},
		{name: "command is case-sensitive", line: `{"type":"status"}`, rule: RuleUnknownCommand, field: "type"},
		{name: "member names are case-sensitive", line: `{"Type":"STATUS"}`, rule: RuleMissingType, field: "type"},

		// The line's JSON.
		{name: "empty line", line: ``, rule: RuleSyntax},
		{name: "blank line", line: " \t", rule: RuleSyntax},
		{name: "not JSON", line: `hello`, rule: RuleSyntax},
		{name: "truncated", line: `{"type":"STATUS"`, rule: RuleSyntax},
		{name: "array", line: `[{"type":"STATUS"}]`, rule: RuleNotObject},
		{name: "string", line: `"STATUS"`, rule: RuleNotObject},
		{name: "null", line: `null`, rule: RuleNotObject},
		{name: "number", line: `15`, rule: RuleNotObject},
		{name: "trailing garbage", line: `{"type":"STATUS"} x`, rule: RuleTrailing},
		{name: "two objects", line: `{"type":"STATUS"}{"type":"STOP"}`, rule: RuleTrailing},
		{name: "trailing whitespace and CR", line: "{\"type\":\"STATUS\"} \r", want: &Status{}},
		{name: "duplicate type", line: `{"type":"STATUS","type":"STOP"}`, rule: RuleDuplicate, field: "type"},
		{name: "duplicate by escape", line: `{"type":"STATUS","\u0074ype":"STOP"}`, rule: RuleDuplicate, field: "type"},
		{name: "duplicate in data", line: `{"type":"KILL","data":{"signal":"9","signal":"15"}}`, rule: RuleDuplicate, field: "data.signal"},
		{name: "duplicate deep", line: `{"type":"STATUS","x":[{"a":1,"a":2}]}`, rule: RuleDuplicate},
		{name: "invalid UTF-8", line: "{\"type\":\"INPUT\",\"data\":\"\xff\"}", rule: RuleUTF8},
		{name: "overlong UTF-8", line: "{\"type\":\"INPUT\",\"data\":\"\xc0\xaf\"}", rule: RuleUTF8},
		{name: "lone high surrogate", line: `{"type":"INPUT","data":"\ud800"}`, rule: RuleUTF8},
		{name: "lone low surrogate", line: `{"type":"INPUT","data":"a\udc00"}`, rule: RuleUTF8},
		{name: "high surrogate then letter", line: `{"type":"INPUT","data":"\ud800\u0041"}`, rule: RuleUTF8},
		{name: "surrogate in a member name", line: `{"type":"STATUS","\udfff":1}`, rule: RuleUTF8},
		{name: "raw control character", line: "{\"type\":\"INPUT\",\"data\":\"\x1b\"}", rule: RuleSyntax},
		{name: "too deep", line: `{"type":"STATUS","x":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, rule: RuleDepth},
		{name: "just deep enough", line: `{"type":"STATUS","x":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`, want: &Status{}},
		{name: "too many members", line: `{"type":"STATUS"` + manyMembers(MaxMembers) + `}`, rule: RuleMembers},
		{name: "just enough members", line: `{"type":"STATUS"` + manyMembers(MaxMembers-1) + `}`, want: &Status{}},
	}
}

// manyMembers is n distinct members, each preceded by a comma.
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"m%d":0`, i)
	}
	return b.String()
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.line))
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Decode = %#v, want %#v", got, tc.want)
				}
				return
			}
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("Decode = %#v, %v; want an *Error with rule %s", got, err, tc.rule)
			}
			if e.Rule != tc.rule || e.Field != tc.field {
				t.Fatalf("rule %q field %q (%v), want rule %q field %q", e.Rule, e.Field, e, tc.rule, tc.field)
			}
			if got != nil {
				t.Fatalf("Decode returned %#v with its error", got)
			}
		})
	}
}

// TestDecodeOffsets checks the byte offsets JSON errors carry.
func TestDecodeOffsets(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		offset     int64
	}{
		{"invalid UTF-8", "{\"type\":\"\xff\"}", 9},
		{"trailing", `{"type":"STOP"}  ]`, 17},
		{"lone surrogate", `{"type":"INPUT","data":"ab\ud800"}`, 26},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.line))
			e, ok := errors.AsType[*Error](err)
			if !ok || e.Offset != tc.offset {
				t.Fatalf("Decode: %v; want offset %d", err, tc.offset)
			}
		})
	}
}

// TestSeedErrorTexts holds the two error replies the seed spells out to
// its exact bytes: they are the protocol, not a message for people.
func TestSeedErrorTexts(t *testing.T) {
	for _, tc := range []struct {
		line, reply string
	}{
		{`{"data":{}}`, `{"status":"error","error":"Invalid request: missing 'type' field"}` + "\n"},
		{`{"type":"INVALID_COMMAND"}`, `{"status":"error","error":"Unknown command: INVALID_COMMAND"}` + "\n"},
		{`{"type":"KILL","signal":"NOTASIGNAL"}`, `{"status":"error","error":"Invalid signal: NOTASIGNAL"}` + "\n"},
	} {
		_, err := Decode([]byte(tc.line))
		if err == nil {
			t.Fatalf("Decode(%s) accepted it", tc.line)
		}
		got, err := EncodeReply(Fail(err))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.reply {
			t.Errorf("reply to %s:\n got %s\nwant %s", tc.line, got, tc.reply)
		}
	}
}

// TestEncodeRequestRoundTrip encodes every request the table accepts and
// decodes it back to the same value.
func TestEncodeRequestRoundTrip(t *testing.T) {
	for _, tc := range decodeCases() {
		if tc.rule != "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			line, err := EncodeRequest(tc.want)
			if err != nil {
				t.Fatalf("EncodeRequest: %v", err)
			}
			if !strings.HasSuffix(string(line), "\n") || strings.Count(string(line), "\n") != 1 {
				t.Fatalf("EncodeRequest = %q, want one line", line)
			}
			got, err := Decode(line[:len(line)-1])
			if err != nil {
				t.Fatalf("Decode(%s): %v", line, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("round trip of %s = %#v, want %#v", line, got, tc.want)
			}
		})
	}
}

// TestEncodeRequestWire pins the line EncodeRequest writes: top-level
// members, the seed's names.
func TestEncodeRequestWire(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{&Input{Data: "ihello\x1b:wq\n"}, `{"data":"ihello\u001b:wq\n","type":"INPUT"}`},
		{&Output{Format: FormatANSI, From: Line{Kind: LineOldest}, To: Line{Kind: LineNumber}}, `{"format":"ansi","from":"-","to":0,"type":"OUTPUT"}`},
		{&Kill{Signal: syscall.SIGKILL}, `{"signal":"SIGKILL","type":"KILL"}`},
		{&Wait{Settled: true, Timeout: 2 * time.Second, HasTimeout: true}, `{"settled":true,"timeout_ms":2000,"type":"WAIT"}`},
		{&Resize{Size: Size{Cols: 80, Rows: 24}}, `{"cols":80,"rows":24,"type":"RESIZE"}`},
		{&Debug{Clear: true}, `{"clear":true,"type":"DEBUG"}`},
		{&Stop{}, `{"type":"STOP"}`},
		{&Input{Data: "<a&b>"}, `{"data":"<a&b>","type":"INPUT"}`},
	} {
		got, err := EncodeRequest(tc.req)
		if err != nil {
			t.Fatalf("EncodeRequest(%#v): %v", tc.req, err)
		}
		if string(got) != tc.want+"\n" {
			t.Errorf("EncodeRequest(%#v)\n got %s\nwant %s", tc.req, got, tc.want)
		}
	}
}

// TestEncodeRequestRefuses checks that EncodeRequest refuses what Decode
// would refuse or read back differently.
func TestEncodeRequestRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		rule string
	}{
		{"input not UTF-8", &Input{Data: "\xff"}, RuleUTF8},
		{"output no format", &Output{}, RuleFieldValue},
		{"output number on a default bound", &Output{Format: FormatASCII, From: Line{N: 3}}, RuleFieldValue},
		{"output unknown kind", &Output{Format: FormatASCII, To: Line{Kind: 9}}, RuleFieldValue},
		{"wait two modes", &Wait{Activity: true, Contains: "x"}, RuleWaitModes},
		{"wait line alone", &Wait{Line: 2}, RuleMissingField},
		{"wait sub-millisecond timeout", &Wait{Timeout: time.Microsecond, HasTimeout: true}, RuleFieldValue},
		{"wait timeout without HasTimeout", &Wait{Timeout: time.Second}, RuleFieldValue},
		{"wait contains not UTF-8", &Wait{Contains: "\xc3"}, RuleUTF8},
		{"kill zero", &Kill{}, RuleSignal},
		{"kill 9999", &Kill{Signal: 9999}, RuleSignal},
		{"resize zero", &Resize{}, RuleSize},
		{"input too long", &Input{Data: strings.Repeat("a", MaxLine)}, RuleTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, err := EncodeRequest(tc.req)
			e, ok := errors.AsType[*Error](err)
			if !ok || e.Rule != tc.rule {
				t.Fatalf("EncodeRequest = %q, %v; want rule %s", line, err, tc.rule)
			}
		})
	}
	if _, err := EncodeRequest(nil); err == nil {
		t.Error("EncodeRequest(nil) succeeded")
	}
}
