package interminai

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestReplyDataSeedExamples decodes each reply the seed shows into its
// typed data, encodes it again and compares the two as JSON values: equal
// values mean every member name is the seed's, spelled exactly, and none
// is lost or added.
func TestReplyDataSeedExamples(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		data  any
	}{
		{"OUTPUT", `{"status":"ok","data":{"screen":"Plain text representation of screen\nwith newlines...","cursor":{"row":5,"col":10},"size":{"rows":24,"cols":80},"from":-100,"to":24,"scrollback_available":150,"scrollback_capacity":10000}}`, &OutputData{}},
		{"STATUS running", `{"status":"ok","data":{"running":true}}`, &StatusData{}},
		{"STATUS finished", `{"status":"ok","data":{"running":false,"exit_code":0}}`, &StatusData{}},
		{"STATUS activity", `{"status":"ok","data":{"running":true,"activity":true}}`, &StatusData{}},
		{"WAIT normal", `{"status":"ok","data":{"exit_code":0}}`, &WaitExitData{}},
		{"WAIT activity", `{"status":"ok","data":{"activity":true,"exited":false}}`, &WaitActivityData{}},
		{"KILL", `{"status":"ok","data":{"signal_sent":"SIGTERM"}}`, &KillData{}},
		{"STOP", `{"status":"ok","data":{"message":"Shutting down"}}`, &StopData{}},
		{"DEBUG", `{"status":"ok","data":{"unhandled":[{"sequence":"\\e[?25l","raw_hex":"1b5b3f32356c"},{"sequence":"\\e7","raw_hex":"1b37"}],"dropped":5,"termios":{"mode":"cooked","flags":["ECHO","ISIG","ICRNL","IXON","OPOST","ONLCR"],"hex":{"iflag":"0x0500","oflag":"0x0005","lflag":"0x8a3b","cflag":"0xf00bf"},"c_cc":{"VINTR":"^C","VEOF":"^D","VERASE":"^?","VKILL":"^U","VSUSP":"^Z","VQUIT":"^\\"}}}}`, &DebugData{}},
		{"seed wire example OUTPUT", `{"status":"ok","data":{"screen":"  File  Edit  View\n~\n~\n","cursor":{"row":1,"col":0},"size":{"rows":24,"cols":80}}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := DecodeReply([]byte(tc.reply))
			if err != nil {
				t.Fatalf("DecodeReply: %v", err)
			}
			if tc.data == nil {
				return // the wire example leaves out members the reference shows; it only has to decode
			}
			if err := rep.DecodeData(tc.data); err != nil {
				t.Fatal(err)
			}
			again, err := OK(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			line, err := EncodeReply(again)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, line, []byte(tc.reply)) {
				t.Fatalf("re-encoded\n got %s\nwant %s", line, tc.reply)
			}
		})
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestReplyWire pins the bytes of replies whose form the seed gives.
func TestReplyWire(t *testing.T) {
	exit := 137
	for _, tc := range []struct {
		name string
		data any
		want string
	}{
		{"INPUT", nil, `{"status":"ok"}`},
		{"STOP", StopData{Message: StopMessage}, `{"status":"ok","data":{"message":"Shutting down"}}`},
		{"STATUS exited", StatusData{ExitCode: &exit}, `{"status":"ok","data":{"running":false,"exit_code":137}}`},
		{"OUTPUT member order", OutputData{Screen: "<$ >", Size: Size{Rows: 24, Cols: 80}, To: 24, ScrollbackCapacity: 10000},
			`{"status":"ok","data":{"screen":"<$ >","cursor":{"row":0,"col":0},"size":{"rows":24,"cols":80},"from":0,"to":24,"scrollback_available":0,"scrollback_capacity":10000}}`},
		{"DEBUG empty ring", DebugData{}, `{"status":"ok","data":{"unhandled":[],"dropped":0,"termios":{"mode":"","flags":[],"hex":{"iflag":"","oflag":"","lflag":"","cflag":""},"c_cc":null}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := OK(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			line, err := EncodeReply(rep)
			if err != nil {
				t.Fatal(err)
			}
			if string(line) != tc.want+"\n" {
				t.Fatalf("\n got %s\nwant %s", line, tc.want)
			}
		})
	}
	for _, e := range []error{nil, errors.New(""), errors.New("open \xff: no such file")} {
		if line, err := EncodeReply(Fail(e)); err != nil {
			t.Fatalf("Fail(%#v) made %s, which EncodeReply refuses: %v", e, line, err)
		}
	}
	line, err := EncodeReply(Fail(errors.New("Failed to send input: Broken pipe")))
	if err != nil || string(line) != `{"status":"error","error":"Failed to send input: Broken pipe"}`+"\n" {
		t.Fatalf("error reply = %s, %v", line, err)
	}
}

func TestEncodeReplyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  Reply
	}{
		{"no status", Reply{}},
		{"other status", Reply{Status: "maybe"}},
		{"error without message", Reply{Status: StatusError}},
		{"error with data", Reply{Status: StatusError, Error: "x", Data: json.RawMessage(`{}`)}},
		{"ok with message", Reply{Status: StatusOK, Error: "x"}},
		{"data not JSON", Reply{Status: StatusOK, Data: json.RawMessage(`{`)}},
		{"data two values", Reply{Status: StatusOK, Data: json.RawMessage(`1 2`)}},
		{"data with a duplicate", Reply{Status: StatusOK, Data: json.RawMessage(`{"a":1,"a":2}`)}},
		{"message not UTF-8", Reply{Status: StatusError, Error: "\xff"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if line, err := EncodeReply(tc.rep); err == nil {
				t.Fatalf("EncodeReply = %s, want an error", line)
			}
		})
	}
	big, err := OK(OutputData{Screen: strings.Repeat("x", MaxLine)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = EncodeReply(big)
	if e, ok := errors.AsType[*Error](err); !ok || e.Rule != RuleTooLong || e.Limit != MaxLine {
		t.Fatalf("EncodeReply of a %d-byte screen: %v, want rule %s", MaxLine, err, RuleTooLong)
	}
}

func TestDecodeReply(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Reply
		rule       string
	}{
		{name: "ok", line: `{"status":"ok"}`, want: Reply{Status: StatusOK}},
		{name: "ok null data", line: `{"status":"ok","data":null}`, want: Reply{Status: StatusOK}},
		{name: "ok data", line: `{"status":"ok","data":{"running":true}}`, want: Reply{Status: StatusOK, Data: json.RawMessage(`{"running":true}`)}},
		{name: "ok ignores error", line: `{"status":"ok","error":"stale"}`, want: Reply{Status: StatusOK}},
		{name: "error", line: `{"status":"error","error":"Unknown command: X"}`, want: Reply{Status: StatusError, Error: "Unknown command: X"}},
		{name: "error drops data", line: `{"status":"error","error":"e","data":{}}`, want: Reply{Status: StatusError, Error: "e"}},
		{name: "no status", line: `{"data":{}}`, rule: RuleReply},
		{name: "status maybe", line: `{"status":"maybe"}`, rule: RuleReply},
		{name: "status number", line: `{"status":1}`, rule: RuleReply},
		{name: "error without message", line: `{"status":"error"}`, rule: RuleReply},
		{name: "error empty message", line: `{"status":"error","error":""}`, rule: RuleReply},
		{name: "error not string", line: `{"status":"error","error":{"msg":"x"}}`, rule: RuleReply},
		{name: "duplicate status", line: `{"status":"ok","status":"error","error":"x"}`, rule: RuleDuplicate},
		{name: "trailing", line: `{"status":"ok"}x`, rule: RuleTrailing},
		{name: "not object", line: `["ok"]`, rule: RuleNotObject},
		{name: "invalid UTF-8", line: "{\"status\":\"ok\",\"data\":\"\xfe\"}", rule: RuleUTF8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeReply([]byte(tc.line))
			if tc.rule != "" {
				e, ok := errors.AsType[*Error](err)
				if !ok || e.Rule != tc.rule {
					t.Fatalf("DecodeReply = %#v, %v; want rule %s", got, err, tc.rule)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeReply = %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
}

// TestEncodeReplyCompactsData keeps a reply one line when its data was
// indented.
func TestEncodeReplyCompactsData(t *testing.T) {
	line, err := EncodeReply(Reply{Status: StatusOK, Data: json.RawMessage("{\n  \"running\": true\n}")})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(line, []byte("\n")) != 1 || string(line) != `{"status":"ok","data":{"running":true}}`+"\n" {
		t.Fatalf("EncodeReply = %q", line)
	}
}

// TestReceiptsTable: the table's columns line up whatever the widest word
// is ("unsupported" is longer than "delivered"), a downgraded receipt
// says why it is not os, and no line ends in spaces.
func TestReceiptsTable(t *testing.T) {
	cases := []struct {
		name string
		in   []ReceiptData
		want string
	}{
		{
			name: "os and delivered",
			in: []ReceiptData{
				{Constraint: "filesystem", Status: "applied", Tier: "os", Mechanism: "mount-namespace"},
				{Constraint: "seed", Status: "applied", Tier: "delivered"},
			},
			want: "filesystem  os         mount-namespace\n" +
				"seed        delivered\n",
		},
		{
			name: "unsupported is the widest word",
			in: []ReceiptData{
				{Constraint: "terminal", Status: "applied", Tier: "os", Mechanism: "sandbox-devpts-pty"},
				{Constraint: "network", Status: "unsupported", Reason: "no network namespace"},
			},
			want: "terminal  os           sandbox-devpts-pty\n" +
				"network   unsupported  no network namespace\n",
		},
		{
			name: "downgraded",
			in: []ReceiptData{
				{Constraint: "terminal", Status: "applied", Tier: "delivered", Mechanism: "host-pty", Reason: "isolation none"},
			},
			want: "terminal  delivered  host-pty (isolation none)\n",
		},
		{name: "none", want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (ReceiptsData{Receipts: tc.in}).Table(); got != tc.want {
				t.Errorf("Table() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestStatusExitLines: nothing while the program runs, the exit code once
// it ended, and a stand-in code said to be one.
func TestStatusExitLines(t *testing.T) {
	code := 137
	cases := []struct {
		name string
		in   StatusData
		want string
	}{
		{"running", StatusData{Running: true}, ""},
		{"exited", StatusData{ExitCode: &code}, "Exit code: 137\n"},
		{"unobserved", StatusData{ExitCode: &code, ExitUnobserved: "the sandbox's init ended without reporting it"},
			"Exit code: 137\nExit unobserved: the sandbox's init ended without reporting it (137 is not the program's status)\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.ExitLines(); got != tc.want {
				t.Errorf("ExitLines() = %q, want %q", got, tc.want)
			}
		})
	}
}
