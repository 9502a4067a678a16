package interminai

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadLine(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		limit    int
		want     string
		rule     string
	}{
		{name: "line", in: "abc\n", limit: 3, want: "abc"},
		{name: "empty line", in: "\n", limit: 3, want: ""},
		{name: "stops at the first newline", in: "a\nb\n", limit: 3, want: "a"},
		{name: "one over", in: "abcd\n", limit: 3, rule: RuleTooLong},
		{name: "one over without newline", in: "abcd", limit: 3, rule: RuleTooLong},
		{name: "at the limit without newline", in: "abc", limit: 3, rule: RuleUnterminated},
		{name: "nothing", in: "", limit: 3, rule: RuleUnterminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLine(strings.NewReader(tc.in), tc.limit, "Invalid request")
			if tc.rule != "" {
				e, ok := errors.AsType[*Error](err)
				if !ok || e.Rule != tc.rule {
					t.Fatalf("readLine = %q, %v; want rule %s", got, err, tc.rule)
				}
				if tc.rule == RuleTooLong && e.Limit != tc.limit {
					t.Fatalf("Limit = %d, want %d", e.Limit, tc.limit)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("readLine = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestReadRequestMaxLine holds the 10 MiB bound at its edge: a request
// line of exactly MaxLine bytes is read, one byte more is refused with
// RuleTooLong and Limit MaxLine.
func TestReadRequestMaxLine(t *testing.T) {
	head, tail := `{"type":"INPUT","data":"`, `"}`
	exact := head + strings.Repeat("a", MaxLine-len(head)-len(tail)) + tail
	req, err := ReadRequest(strings.NewReader(exact + "\n"))
	if err != nil {
		t.Fatalf("a %d-byte request: %v", len(exact), err)
	}
	if in, ok := req.(*Input); !ok || len(in.Data) != MaxLine-len(head)-len(tail) {
		t.Fatalf("a %d-byte request read as %T", len(exact), req)
	}
	over := head + strings.Repeat("a", MaxLine-len(head)-len(tail)+1) + tail
	_, err = ReadRequest(strings.NewReader(over + "\n"))
	if e, ok := errors.AsType[*Error](err); !ok || e.Rule != RuleTooLong || e.Limit != MaxLine {
		t.Fatalf("a %d-byte request: %v, want rule %s with limit %d", len(over), err, RuleTooLong, MaxLine)
	}
}

// countingReader is an endless line without a newline that counts what
// was read from it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += len(p)
	copy(p, bytes.Repeat([]byte("a"), len(p)))
	return len(p), nil
}

// TestReadRequestStopsAtLimit: a client that never sends a newline costs
// the daemon the limit and one buffer, not the whole stream.
func TestReadRequestStopsAtLimit(t *testing.T) {
	r := &countingReader{}
	_, err := ReadRequest(io.Reader(r))
	if e, ok := errors.AsType[*Error](err); !ok || e.Rule != RuleTooLong {
		t.Fatalf("ReadRequest = %v, want rule %s", err, RuleTooLong)
	}
	if r.n > MaxLine+128<<10 {
		t.Fatalf("read %d bytes for a %d-byte limit", r.n, MaxLine)
	}
}
