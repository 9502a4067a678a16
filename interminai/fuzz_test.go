package interminai

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzRequest holds Decode to its contract: it never panics, every refusal
// is an *Error, and every request it accepts re-encodes to a line that
// decodes to the same value. It seeds from the decoding table.
func FuzzRequest(f *testing.F) {
	for _, tc := range decodeCases() {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := Decode(line)
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("Decode(%q) = %v, not an *Error", line, err)
			}
			return
		}
		enc, err := EncodeRequest(req)
		if err != nil {
			t.Fatalf("Decode(%q) = %#v, which EncodeRequest refuses: %v", line, req, err)
		}
		again, err := Decode(enc[:len(enc)-1])
		if err != nil {
			t.Fatalf("EncodeRequest(%#v) = %s, which Decode refuses: %v", req, enc, err)
		}
		if !reflect.DeepEqual(again, req) {
			t.Fatalf("%q decodes to %#v, its encoding %s to %#v", line, req, enc, again)
		}
	})
}

// FuzzReply holds DecodeReply to the same contract for replies.
func FuzzReply(f *testing.F) {
	for _, s := range []string{
		`{"status":"ok"}`,
		`{"status":"ok","data":{"running":true,"exit_code":0}}`,
		`{"status":"error","error":"Unknown command: X"}`,
		`{"status":"error","error":"e","data":{"a":[1,2]}}`,
		`{"status":"ok","data":"\u001b[1m","error":null}`,
		`{"status":"ok","status":"ok"}`,
		`{"status":"ok"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rep, err := DecodeReply(line)
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("DecodeReply(%q) = %v, not an *Error", line, err)
			}
			return
		}
		enc, err := EncodeReply(rep)
		if err != nil {
			t.Fatalf("DecodeReply(%q) = %+v, which EncodeReply refuses: %v", line, rep, err)
		}
		again, err := DecodeReply(enc[:len(enc)-1])
		if err != nil {
			t.Fatalf("EncodeReply(%+v) = %s, which DecodeReply refuses: %v", rep, enc, err)
		}
		if again.Status != rep.Status || again.Error != rep.Error || (again.Data == nil) != (rep.Data == nil) {
			t.Fatalf("%q decodes to %+v, its encoding %s to %+v", line, rep, enc, again)
		}
		if rep.Data != nil && !sameJSON(t, again.Data, rep.Data) {
			t.Fatalf("%q: data %s re-encoded as %s", line, rep.Data, again.Data)
		}
	})
}
