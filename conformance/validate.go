package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Verdict is what a validator says about one case file.
type Verdict struct {
	Valid bool
	Rule  string // the rule id, when invalid
	Line  int    // the 1-based line at fault; 0 for a whole-file rule
	Kind  string // control: the message kind; daemon: the request type
	Reply string // daemon, when invalid: the error reply line, LF excluded
}

// String is the verdict as a summary prints it.
func (v Verdict) String() string {
	if v.Valid {
		if v.Kind != "" {
			return "valid " + v.Kind
		}
		return "valid"
	}
	s := "invalid " + v.Rule + " line " + strconv.Itoa(v.Line)
	if v.Reply != "" {
		s += " reply " + v.Reply
	}
	return s
}

// expected is a case's golden verdict as a Verdict.
func expected(e Expect) Verdict {
	return Verdict{Valid: e.Verdict == Valid, Rule: e.Rule, Line: e.Line, Kind: e.Kind, Reply: e.Reply}
}

// A Validator judges one case file of a format. data is the file's
// bytes, path a file holding exactly them (for a validator that runs a
// command). An error means the validator could not judge (it crashed, or
// broke the contract), which fails the case.
type Validator interface {
	Validate(ctx context.Context, format string, data []byte, path string) (Verdict, error)
}

// Ours is this module's codecs: control.Parse, transcript.Parse,
// input.ReadScript (the run command's input kinds, control mode) and
// interminai.ReadRequest, the daemon's half of a connection.
type Ours struct{}

// Validate judges data with our codec for format.
func (Ours) Validate(_ context.Context, format string, data []byte, _ string) (Verdict, error) {
	switch format {
	case FormatControl:
		m, err := control.Parse(data)
		if err == nil {
			return Verdict{Valid: true, Kind: string(m.Kind())}, nil
		}
		if ce, ok := errors.AsType[*control.Error](err); ok {
			return Verdict{Rule: ce.Rule, Line: 1}, nil
		}
		return Verdict{}, fmt.Errorf("control.Parse: not a *control.Error: %w", err)
	case FormatTranscript:
		_, err := transcript.Parse(data)
		if err == nil {
			return Verdict{Valid: true}, nil
		}
		if te, ok := errors.AsType[*transcript.Error](err); ok {
			return Verdict{Rule: te.Rule, Line: te.Line}, nil
		}
		return Verdict{}, fmt.Errorf("transcript.Parse: not a *transcript.Error: %w", err)
	case FormatInputs:
		_, err := input.ReadScript(bytes.NewReader(data), scriptKinds...)
		if err == nil {
			return Verdict{Valid: true}, nil
		}
		if ie, ok := errors.AsType[*input.Error](err); ok {
			return Verdict{Rule: ie.Rule, Line: ie.Line}, nil
		}
		return Verdict{}, fmt.Errorf("input.ReadScript: not an *input.Error: %w", err)
	case FormatDaemon:
		req, err := interminai.ReadRequest(bytes.NewReader(data))
		if err == nil {
			return Verdict{Valid: true, Kind: req.Type()}, nil
		}
		ie, ok := errors.AsType[*interminai.Error](err)
		if !ok {
			return Verdict{}, fmt.Errorf("interminai.ReadRequest: not an *interminai.Error: %w", err)
		}
		reply, err := interminai.EncodeReply(interminai.Fail(err))
		if err != nil {
			return Verdict{}, fmt.Errorf("encode the error reply: %w", err)
		}
		return Verdict{Rule: ie.Rule, Line: 1, Reply: string(bytes.TrimSuffix(reply, []byte("\n")))}, nil
	}
	return Verdict{}, fmt.Errorf("unknown format %q", format)
}

// scriptKinds are the input kinds a control/v1 run admits in its script
// (the run command's --inputs without --pty).
var scriptKinds = []string{input.KindText, input.KindKey, input.KindResize, input.KindClock, input.KindStop}

// Command is another implementation's validator: Argv with FORMAT and
// FILE appended. Its contract (docs/CONFORMANCE.md): exit 0 for valid,
// printing the kind (control) or request type (daemon) as stdout's first
// line; exit 1 for invalid, stderr's first line "RULE LINE" and, for the
// daemon format, the error reply line as stdout's first line. Anything
// else is a broken contract.
type Command struct {
	Argv []string
}

// Validate runs the command on path.
func (c Command) Validate(ctx context.Context, format string, _ []byte, path string) (Verdict, error) {
	if len(c.Argv) == 0 {
		return Verdict{}, errors.New("validator: empty command")
	}
	cmd := outsideCommand(ctx, c.Argv[0], append(append([]string{}, c.Argv[1:]...), format, path)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{w: &stdout, n: 64 << 10}, &limited{w: &stderr, n: 64 << 10}
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return Verdict{}, fmt.Errorf("validator %s: %w", c.Argv[0], err)
	}
	out := firstLine(stdout.Bytes())
	switch code {
	case 0:
		if format != FormatControl && format != FormatDaemon {
			out = "" // the contract asks nothing of stdout here
		}
		return Verdict{Valid: true, Kind: out}, nil
	case 1:
		fields := strings.Fields(firstLine(stderr.Bytes()))
		if len(fields) != 2 {
			return Verdict{}, fmt.Errorf("validator exited 1 but stderr's first line is %q, not \"RULE LINE\"", firstLine(stderr.Bytes()))
		}
		line, err := strconv.Atoi(fields[1])
		if err != nil || line < 0 {
			return Verdict{}, fmt.Errorf("validator's line %q is not a number ≥ 0", fields[1])
		}
		v := Verdict{Rule: fields[0], Line: line}
		if format == FormatDaemon {
			v.Reply = out
		}
		return v, nil
	}
	return Verdict{}, fmt.Errorf("validator exited %d (the contract is 0 valid, 1 invalid): %s", code, firstLine(stderr.Bytes()))
}

func firstLine(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	if sc.Scan() {
		return strings.TrimSuffix(sc.Text(), "\r")
	}
	return ""
}

// limited keeps the first n bytes written to it and drops the rest.
type limited struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}
