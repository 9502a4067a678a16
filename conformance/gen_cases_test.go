package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// base reads one of the repository's example files, split into lines
// (LF dropped).
func base(t *testing.T, rel string) []string {
	data, err := os.ReadFile(filepath.Join(sharedtest.RepoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

var (
	idRE  = regexp.MustCompile(`^\{"id":"record-\d{4}"`)
	seqRE = regexp.MustCompile(`"seq":\d+\}$`)
)

// renumber gives each record line its position's id and seq, so that a
// case built by dropping or moving lines breaks only the rule it means to.
func renumber(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = idRE.ReplaceAllString(l, fmt.Sprintf(`{"id":"record-%04d"`, i))
		out[i] = seqRE.ReplaceAllString(l, fmt.Sprintf(`"seq":%d}`, i))
	}
	return out
}

func join(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func splice(lines []string, i, drop int, add ...string) []string {
	out := append([]string{}, lines[:i]...)
	out = append(out, add...)
	return append(out, lines[i+drop:]...)
}

// ctl is a control/v1 message line.
func ctl(kind, payload string) []byte {
	return []byte(`{"protocol":"termverify.control/v1","kind":"` + kind + `","payload":` + payload + "}\n")
}

// obs is a control observation with state.
func obs(state string) []byte {
	return ctl("observation", `{"state":`+state+`,"events":[],"ui":{"regions":[],"cursor":{"row":0,"column":0,"visible":true}}}`)
}

// ownCases are the codec and daemon cases written here: the rules
// upstream's corpus does not reach, the large limits, and every
// deliberate difference from upstream with upstream's verdict beside it.
func ownCases(t *testing.T) []own {
	tr := base(t, "examples/transcripts/finished.jsonl")
	in := base(t, "examples/inputs.jsonl")
	mib := func(n int, c string) string { return strings.Repeat(c, n) }
	bigText := `{"kind":"input.text","payload":{"text":"` + mib(900<<10, "a") + `"}}`
	var bigScript []string
	for range 40 {
		bigScript = append(bigScript, bigText)
	}
	// 7 arrays of 15,000 zeros: 105,007 values, each array within the
	// 16,384 items budget, the line well under 4 MiB.
	zeros := "[" + strings.TrimSuffix(strings.Repeat("0,", 15000), ",") + "]"
	values := "[" + strings.TrimSuffix(strings.Repeat(zeros+",", 7), ",") + "]"
	const diffControl = "docs/CONTROL.md, Deliberate differences from upstream"
	return []own{
		// control/v1: valid shapes and the differences from upstream.
		{id: "codec/control/observation", format: FormatControl, data: obs(`{"text":"hi"}`), upstream: Valid},
		{id: "codec/control/ready", format: FormatControl, data: ctl("session.ready", `{"observation":{"state":null,"events":[],"ui":{"regions":[],"cursor":{"row":0,"column":0,"visible":false}}}}`), upstream: Valid},
		{id: "codec/control/stop", format: FormatControl, data: ctl("input.stop", `{}`), upstream: Valid},
		{id: "codec/control/integer-2^53-1", format: FormatControl, data: obs(`{"n":9007199254740991}`), upstream: Valid,
			note: "the largest integer v1 keeps exactly: accepted by both"},
		{id: "codec/control/integer-2^53", format: FormatControl, data: obs(`{"n":9007199254740992}`), upstream: Valid,
			difference: diffControl + ": an integer beyond 2^53-1 cannot enter the transcript; upstream's codec accepts it and its recorder then crashes"},
		{id: "codec/control/float-1e20", format: FormatControl, data: obs(`{"n":1e20}`), upstream: Valid,
			difference: diffControl + ": 1e20's canonical spelling is an integer beyond 2^53-1, which no v1 transcript can hold"},
		{id: "codec/control/float-1e21", format: FormatControl, data: obs(`{"n":1e21}`), upstream: Valid,
			note: "canonicalises to 1e+21, keeping its exponent: accepted by both"},
		{id: "codec/control/digits-10000", format: FormatControl, data: obs(`{"n":` + mib(10000, "7") + `}`), upstream: "crash",
			difference: diffControl + ": a very long digit string; a bare exception escapes upstream's codec, ours reports number.integer-range"},
		{id: "codec/control/fraction-10000", format: FormatControl, data: obs(`{"n":0.` + mib(10000, "7") + `}`),
			note: diffControl + ": a long fraction is finite and accepted where floats are (upstream's verdict on it is not recorded)"},
		{id: "codec/control/line-4MiB", format: FormatControl, gz: true, data: obs(`"` + mib(4<<20, "a") + `"`),
			note: "the line exceeds 4 MiB + LF"},
		{id: "codec/control/string-1MiB", format: FormatControl, gz: true, data: obs(`"` + mib(1<<20+1, "a") + `"`),
			note: "one string one byte over 1 MiB"},
		{id: "codec/control/string-1MiB-exact", format: FormatControl, gz: true, data: obs(`"` + mib(1<<20, "a") + `"`),
			note: "one string of exactly 1 MiB: the boundary, valid"},
		{id: "codec/control/line-4MiB-exact", format: FormatControl, gz: true, data: lineOf(4 << 20),
			note: "a line of exactly 4 MiB before its LF (in strings of under 1 MiB, 2 MiB per message): the boundary, valid"},
		{id: "codec/control/strings-2MiB", format: FormatControl, gz: true,
			data: obs(`["` + mib(900<<10, "a") + `","` + mib(900<<10, "b") + `","` + mib(900<<10, "c") + `"]`),
			note: "three strings within 1 MiB each, over 2 MiB together"},
		{id: "codec/control/values-100000", format: FormatControl, gz: true, data: obs(values),
			note: "105,007 values in one message, each array within its items budget"},

		// transcript/v1, from examples/transcripts/finished.jsonl.
		{id: "codec/transcript/finished", format: FormatTranscript, data: join(tr...), upstream: Valid},
		{id: "codec/transcript/bom", format: FormatTranscript, data: append([]byte("\xef\xbb\xbf"), join(tr...)...), upstream: Invalid},
		{id: "codec/transcript/no-final-lf", format: FormatTranscript, data: []byte(strings.Join(tr, "\n")), upstream: Invalid},
		{id: "codec/transcript/empty-line", format: FormatTranscript, data: join(splice(tr, 3, 0, "")...), upstream: Invalid},
		{id: "codec/transcript/not-canonical", format: FormatTranscript,
			data: join(splice(tr, 0, 1, strings.Replace(tr[0], `{"id":"record-0000",`, `{"id": "record-0000",`, 1))...), upstream: Invalid},
		{id: "codec/transcript/duplicate-id", format: FormatTranscript,
			data: join(splice(tr, 5, 1, strings.Replace(tr[5], `"id":"record-0005"`, `"id":"record-0004"`, 1))...), upstream: Invalid},
		{id: "codec/transcript/started-not-first", format: FormatTranscript, data: join(renumber(append(append([]string{}, tr[1:8]...), tr[0], tr[18]))...), upstream: Invalid},
		{id: "codec/transcript/negotiation-incomplete", format: FormatTranscript, data: join(renumber(append(append([]string{}, tr[:4]...), tr[8:]...))...), upstream: Invalid},
		{id: "codec/transcript/records-10001", format: FormatTranscript, gz: true, data: join(renumber(manyRecords(tr, 10001))...),
			note: "10,001 records: one over the v1 ceiling"},
		{id: "codec/transcript/records-10000", format: FormatTranscript, gz: true, data: join(renumber(manyRecords(tr, 10000))...),
			note: "exactly 10,000 records: valid"},
		{id: "codec/transcript/bytes-32MiB", format: FormatTranscript, gz: true, data: join(renumber(bigTranscript(tr))...),
			note: "over 32 MiB in diagnostics of 1.8 MiB, every line within its own limits"},

		// input scripts, from examples/inputs.jsonl.
		{id: "codec/inputs/example", format: FormatInputs, data: join(in...)},
		{id: "codec/inputs/not-an-object", format: FormatInputs, data: join(in[0], `[]`)},
		{id: "codec/inputs/mouse-in-control-mode", format: FormatInputs,
			data: join(in[0], `{"kind":"input.mouse","payload":{"action":"press","button":"left","column":1,"row":1}}`),
			note: "input.mouse is an input kind, but not one a control/v1 run admits"},
		{id: "codec/inputs/unknown-kind", format: FormatInputs, data: join(in[0], `{"kind":"input.bogus","payload":{}}`)},
		{id: "codec/inputs/clock-zero", format: FormatInputs, data: join(in[0], `{"kind":"input.clock_advanced","payload":{"delta_ms":0}}`)},
		{id: "codec/inputs/after-stop", format: FormatInputs, data: join(`{"kind":"input.stop","payload":{}}`, in[0])},
		{id: "codec/inputs/kind-not-string", format: FormatInputs, data: join(`{"kind":1,"payload":{}}`)},
		{id: "codec/inputs/no-payload", format: FormatInputs, data: join(`{"kind":"input.text"}`)},
		{id: "codec/inputs/extra-member", format: FormatInputs, data: join(`{"kind":"input.text","payload":{"text":"a","extra":1}}`)},
		{id: "codec/inputs/bad-chord", format: FormatInputs, data: join(`{"kind":"input.key","payload":{"keys":["Control","Nope"]}}`)},
		{id: "codec/inputs/resize-zero", format: FormatInputs, data: join(`{"kind":"input.resize","payload":{"columns":0,"rows":24}}`)},
		{id: "codec/inputs/text-not-string", format: FormatInputs, data: join(`{"kind":"input.text","payload":{"text":1}}`)},
		{id: "codec/inputs/duplicate-member", format: FormatInputs, data: join(`{"kind":"input.text","payload":{"text":"a","text":"b"}}`)},
		{id: "codec/inputs/line-4MiB", format: FormatInputs, gz: true, data: join(`{"kind":"input.text","payload":{"text":"` + mib(4<<20, "a") + `"}}`)},
		{id: "codec/inputs/script-32MiB", format: FormatInputs, gz: true, data: join(bigScript...),
			note: "40 text inputs of 900 KiB: every input is recorded in one transcript, which cannot exceed 32 MiB"},

		// interminai requests: what the daemon reads from one connection.
		{id: "daemon/stop", format: FormatDaemon, data: []byte(`{"type":"STOP"}` + "\n")},
		{id: "daemon/stop-repeated", format: FormatDaemon, data: []byte(`{"type":"STOP"}` + "\n" + `{"type":"STOP"}` + "\n"),
			note: "one request per connection: the daemon reads the first STOP and nothing after it; a second STOP on another connection is decoded the same"},
		{id: "daemon/stop-extras", format: FormatDaemon, data: []byte(`{"type":"STOP","data":{},"x":1}` + "\n"),
			note: "members the daemon does not read are ignored, as interminai's clients send extras"},
		{id: "daemon/status", format: FormatDaemon, data: []byte(`{"type":"STATUS"}` + "\n")},
		{id: "daemon/input", format: FormatDaemon, data: []byte(`{"type":"INPUT","data":"ls\n"}` + "\n")},
		{id: "daemon/output", format: FormatDaemon, data: []byte(`{"type":"OUTPUT","format":"ascii"}` + "\n")},
		{id: "daemon/wait-settled", format: FormatDaemon, data: []byte(`{"type":"WAIT","settled":true,"timeout_ms":500}` + "\n")},
		{id: "daemon/kill-nested", format: FormatDaemon, data: []byte(`{"type":"KILL","data":{"signal":"TERM"}}` + "\n")},
		{id: "daemon/resize", format: FormatDaemon, data: []byte(`{"type":"RESIZE","cols":100,"rows":30}` + "\n")},
		{id: "daemon/frame-oversized", format: FormatDaemon, gz: true, data: []byte(`{"type":"INPUT","data":"` + mib(10<<20, "a") + `"}` + "\n"),
			note: "a request line over 10 MiB is refused with an answer, and the rest is not read"},
		{id: "daemon/frame-10MiB-exact", format: FormatDaemon, gz: true,
			data: []byte(`{"type":"INPUT","data":"` + mib(10<<20-len(`{"type":"INPUT","data":""}`), "a") + `"}` + "\n"),
			note: "a request line of exactly 10 MiB before its newline: the boundary, read whole"},
		{id: "daemon/not-json", format: FormatDaemon, data: []byte("STOP\n")},
		{id: "daemon/trailing", format: FormatDaemon, data: []byte(`{"type":"STOP"} x` + "\n")},
		{id: "daemon/depth", format: FormatDaemon, data: []byte(`{"type":"STOP","x":` + mib(40, "[") + mib(40, "]") + "}\n")},
		{id: "daemon/members", format: FormatDaemon, data: []byte(`{"type":"STOP"` + manyMembers(1001) + "}\n")},
		{id: "daemon/duplicate", format: FormatDaemon, data: []byte(`{"type":"STOP","type":"STATUS"}` + "\n")},
		{id: "daemon/not-object", format: FormatDaemon, data: []byte(`["STOP"]` + "\n")},
		{id: "daemon/utf8", format: FormatDaemon, data: []byte("{\"type\":\"ST\xffOP\"}\n")},
		{id: "daemon/missing-type", format: FormatDaemon, data: []byte(`{"data":"x"}` + "\n")},
		{id: "daemon/type-not-string", format: FormatDaemon, data: []byte(`{"type":1}` + "\n")},
		{id: "daemon/unknown-command", format: FormatDaemon, data: []byte(`{"type":"REBOOT"}` + "\n")},
		{id: "daemon/input-missing-data", format: FormatDaemon, data: []byte(`{"type":"INPUT"}` + "\n")},
		{id: "daemon/input-data-type", format: FormatDaemon, data: []byte(`{"type":"INPUT","data":1}` + "\n")},
		{id: "daemon/kill-bad-signal", format: FormatDaemon, data: []byte(`{"type":"KILL","signal":"NOPE"}` + "\n")},
		{id: "daemon/output-bad-format", format: FormatDaemon, data: []byte(`{"type":"OUTPUT","format":"bogus"}` + "\n")},
		{id: "daemon/wait-negative-timeout", format: FormatDaemon, data: []byte(`{"type":"WAIT","timeout_ms":-1}` + "\n")},
		{id: "daemon/resize-zero", format: FormatDaemon, data: []byte(`{"type":"RESIZE","cols":0,"rows":30}` + "\n")},
		{id: "daemon/wait-two-modes", format: FormatDaemon, data: []byte(`{"type":"WAIT","settled":true,"activity":true}` + "\n")},
	}
}

// lineOf is a valid control observation line of exactly n bytes before
// its LF: whitespace (which control/v1 accepts) pads it, so no string or
// budget limit is reached.
func lineOf(n int) []byte {
	l := obs(`{"text":"x"}`)
	pad := n - (len(l) - 1)
	return append(append([]byte(`{"protocol":"termverify.control/v1",`), bytes.Repeat([]byte(" "), pad)...), l[len(`{"protocol":"termverify.control/v1",`):]...)
}

// manyRecords is a valid transcript of exactly n records: finished's
// start, negotiation and first epoch, then diagnostics in that epoch.
func manyRecords(tr []string, n int) []string {
	head := tr[:12] // run.started, 7 receipts, readiness, input.text, observation, input.key
	tail := tr[13:]
	diag := tr[12]
	out := append([]string{}, head...)
	for len(out)+len(tail) < n {
		out = append(out, diag)
	}
	return append(out, tail...)
}

// bigTranscript is over 32 MiB, in diagnostics of about 3.9 MiB each.
func bigTranscript(tr []string) []string {
	diag := strings.Replace(tr[12], `"message":"no binding for Control+a"`, `"details":["`+
		strings.Repeat("d", 900<<10)+`","`+strings.Repeat("e", 900<<10)+`"],"message":"x"`, 1)
	out := append([]string{}, tr[:12]...)
	for range 19 {
		out = append(out, diag)
	}
	return append(out, tr[13:]...)
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"m%d":0`, i)
	}
	return b.String()
}
