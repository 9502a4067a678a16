package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// tricky are strings that exercise every branch of encoding/json's string
// encoder: escapes, control characters, HTML characters (not escaped here),
// invalid UTF-8, U+2028/U+2029 and multi-byte runes.
var tricky = []string{
	"", "hello", `quo"te`, `back\slash`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"<a&b>", "\u2028\u2029", "é漢字😀", "\xff", "a\xc3", "\xed\xa0\x80", "key: Control+c",
}

func randomString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	return tricky[r.IntN(len(tricky))]
}

func randomStrings(r *rand.Rand) []string {
	if r.IntN(5) == 0 {
		return nil
	}
	list := make([]string, r.IntN(4))
	for i := range list {
		list[i] = randomString(r)
	}
	return list
}

// randomSession is a session in an arbitrary state, as far as the
// observation reads it.
func randomSession(r *rand.Rand) *session {
	env := map[string]string{}
	for range r.IntN(4) {
		env["TERMVERIFY_"+randomString(r)] = randomString(r)
	}
	if r.IntN(4) == 0 {
		env = nil
	}
	s := &session{
		opts: Options{Dir: randomString(r)}, runID: randomString(r), seed: randomString(r),
		columns: 1 + r.IntN(30), rows: 1 + r.IntN(4), nowMS: r.Int64N(1 << 53),
		text: randomString(r), lastKey: randomStrings(r), inputs: r.IntN(5000), draw: r.Uint64(),
		env: env,
	}
	envJSON, err := encode(env)
	if err != nil {
		panic(err)
	}
	s.envJSON = envJSON[:len(envJSON)-1]
	datas := []any{
		runIDData{RunID: randomString(r)}, textData{Text: randomString(r)}, keysData{Keys: randomStrings(r)},
		sizeData{Columns: r.IntN(100), Rows: r.IntN(100)}, clockData{AtMS: r.Int64N(1<<53) - 1<<52},
		inputsData{Inputs: r.IntN(100)}, nil, map[string]any{"x": []any{1, "<y>", nil}},
	}
	s.event = event{Type: randomString(r), Data: datas[r.IntN(len(datas))]}
	return s
}

// TestAppendMessage checks the hand encoder against encoding/json on
// observations of random states, in every shape the modes send.
func TestAppendMessage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		s := randomSession(r)
		o := s.observation()
		switch i % 5 {
		case 1:
			o.Frame = nil
		case 2:
			o.Process = &process{State: "exited", Exit: &exitRecord{Kind: "code", Value: r.IntN(256)}}
		case 3:
			o.Process = &process{State: randomString(r)}
			o.UI.Focus, o.UI.Mode, o.UI.Regions, o.Events = nil, nil, nil, nil
		case 4:
			o.State = map[string]any{"state": randomString(r)}
		}
		payloads := []any{o, &o, map[string]any{"observation": o}, s.state()}
		for _, payload := range payloads {
			want, err := encode(envelope{Kind: "observation", Payload: payload, Protocol: protocol})
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendMessage(nil, "observation", payload)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d (%T):\n got %s\nwant %s", i, payload, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want[:len(want)-1]) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want[:len(want)-1])
		}
	})
}

// FuzzSplitMessage checks that the fast paths of read and input accept only
// lines whose encoding/json decoding they reproduce exactly.
func FuzzSplitMessage(f *testing.F) {
	for _, line := range []string{
		`{"kind":"input.key","payload":{"keys":["Control","c"]},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.text","payload":{"text":"héllo <&>"},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.text","payload":{"text":"a\"b"},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.stop","payload":{},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.key","payload":{"keys":["a"]},"kind":"input.text","protocol":"termverify.control/v1"}`,
		`{"kind":"input.key","payload":{"keys":["a"],"keys":"b"},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.key","payload":{"keys":"x"},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.text","payload":{"text":"a","text":"b"},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.text","payload":{"text":"\xff"},"protocol":"termverify.control/v1"}`,
		`{"kind":"input.resize","payload":{"columns":1,"rows":2},"protocol":"termverify.control/v1"}`,
	} {
		f.Add([]byte(line + "\n"))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		kind, payload, ok := splitMessage(line)
		if ok {
			var env struct {
				Protocol string          `json:"protocol"`
				Kind     string          `json:"kind"`
				Payload  json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(line, &env); err != nil {
				t.Fatalf("splitMessage accepted %q, encoding/json: %v", line, err)
			}
			if env.Protocol != protocol || env.Kind != kind || !bytes.Equal(env.Payload, payload) {
				t.Fatalf("splitMessage(%q) = %q, %q; encoding/json: %q, %q, %q", line, kind, payload, env.Protocol, env.Kind, env.Payload)
			}
		} else {
			payload = line
		}
		p, ok := fastPayload(payload)
		if !ok {
			return
		}
		var want inputPayload
		if err := json.Unmarshal(payload, &want); err != nil {
			t.Fatalf("fastPayload accepted %q, encoding/json: %v", payload, err)
		}
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("fastPayload(%q) = %+v, encoding/json %+v", payload, p, want)
		}
	})
}
