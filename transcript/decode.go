package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
)

// This file decodes what records.go encodes, as encoding/json keeps
// Unmarshal beside Marshal: a subject, an input script, and the inputs of
// a parsed transcript. The decoders apply the validator's rules (the same
// checks, the same Rule ids), so what they accept the Writer records; they
// stop at the first violation and never repair.

// DecodeSubject reads a replay subject: what Subject.Value writes, or the
// same without format, adapter or platform, as a request gives it (the
// recorder names itself as the adapter and fills the platform from the
// host). A member that is present is held to run.started's rules: format
// is SubjectFormat, each object is closed (x- members aside), and each of
// its strings matches [a-z0-9._-]+. A refusal is a *DecodeError with Rule
// RuleSubject and the Path of the member at fault. An absent adapter or
// platform is left zero (nil).
func DecodeSubject(v *canon.Value) (Subject, error) {
	var s Subject
	if v == nil {
		return s, &DecodeError{Path: "subject", Rule: RuleSubject, Err: errors.New("missing")}
	}
	if err := closed(v, []string{"application", "fixture", "normalizer", "state_schema"},
		[]string{"format", "adapter", "platform"}); err != nil {
		return s, &DecodeError{Path: "subject", Rule: RuleSubject, Err: err}
	}
	if f, ok := v.Get("format"); ok {
		if got, _ := str(f); got != SubjectFormat {
			return s, &DecodeError{Path: "subject.format", Rule: RuleSubject, Err: detail("must be %q", SubjectFormat)}
		}
	}
	var platform Platform
	selector := []string{"id", "version"}
	for _, m := range []struct {
		name    string
		members []string
		dst     []*string
	}{
		{"application", []string{"id", "version", "build"}, []*string{&s.Application.ID, &s.Application.Version, &s.Application.Build}},
		{"fixture", selector, []*string{&s.Fixture.ID, &s.Fixture.Version}},
		{"adapter", selector, []*string{&s.Adapter.ID, &s.Adapter.Version}},
		{"normalizer", selector, []*string{&s.Normalizer.ID, &s.Normalizer.Version}},
		{"state_schema", selector, []*string{&s.StateSchema.ID, &s.StateSchema.Version}},
		{"platform", []string{"os", "architecture"}, []*string{&platform.OS, &platform.Architecture}},
	} {
		x, ok := v.Get(m.name)
		if !ok {
			continue // optional (the required ones were checked above)
		}
		if err := identifiers(x, "subject."+m.name, m.members, m.dst); err != nil {
			return Subject{}, err
		}
	}
	if _, ok := v.Get("platform"); ok {
		s.Platform = &platform
	}
	return s, nil
}

// identifiers reads the closed object v, at path, whose members are all
// identifiers, into dst in the order of members.
func identifiers(v *canon.Value, path string, members []string, dst []*string) error {
	if err := closed(v, members, nil); err != nil {
		return &DecodeError{Path: path, Rule: RuleSubject, Err: err}
	}
	for i, name := range members {
		id, ok := str(get(v, name))
		if !ok || !config.ValidIdentifier(id) {
			return &DecodeError{Path: path + "." + name, Rule: RuleSubject, Err: errors.New("must be a string matching [a-z0-9._-]+")}
		}
		*dst[i] = id
	}
	return nil
}

// ReadScript reads an input script from r: JSONL, one input per line,
// each {"kind": K, "payload": P} where P is the input record's payload
// without at_ms (the Writer stamps it), e.g.
// {"kind":"input.clock_advanced","payload":{"delta_ms":250}}. Lines need
// not be canonical; blank lines are skipped. kinds, when given, are the
// input kinds the caller can carry: any other is refused.
//
// Each line is held to the rules its record would be (RuleKeyChord,
// RuleResize, ...) and no input may follow input.stop. The first violation
// is a *DecodeError naming the line. The limits are enforced while
// reading, so an oversized script is never read whole: a line longer than
// canon.MaxLineBytes (one record) is refused as soon as its excess
// arrives, and a script longer than canon.MaxTranscriptBytes (every input
// is recorded in one transcript) after that many bytes and one more.
// An error from r is returned wrapped, not as a *DecodeError.
func ReadScript(r io.Reader, kinds ...string) ([]Input, error) {
	var out []Input
	lr := &io.LimitedReader{R: r, N: canon.MaxTranscriptBytes + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	for line := 1; ; line++ {
		text, err := readLine(br, canon.MaxLineBytes)
		if lr.N <= 0 {
			return nil, &DecodeError{Rule: RuleTranscriptBytes,
				Err: detail("the script is larger than %d bytes, the most one transcript holds (refused after reading %d)", canon.MaxTranscriptBytes, canon.MaxTranscriptBytes+1)}
		}
		switch {
		case errors.Is(err, errLongLine):
			return nil, &DecodeError{Line: line, Rule: canon.RuleLineBytes,
				Err: detail("longer than %d bytes, the limit of one transcript record", canon.MaxLineBytes)}
		case err != nil && !errors.Is(err, io.EOF):
			// Before decoding: a line cut short by a failed read is the
			// reader's fault, not a syntax error of the script.
			return nil, fmt.Errorf("read line %d: %w", line, err)
		}
		if body := bytes.TrimSpace(text); len(body) > 0 {
			in, derr := decodeScriptLine(body, kinds)
			if derr == nil && len(out) > 0 {
				if _, stop := out[len(out)-1].(Stop); stop {
					derr = &DecodeError{Rule: RuleAfterStop, Err: errors.New("no input may follow input.stop")}
				}
			}
			if derr != nil {
				derr.Line = line
				return nil, derr
			}
			out = append(out, in)
		}
		if err != nil { // io.EOF: that was the last line
			return out, nil
		}
	}
}

var errLongLine = errors.New("line too long")

// readLine returns the next line with its LF, or errLongLine as soon as
// more than max bytes (LF excluded) arrive without one; io.EOF ends the
// last line.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		body := len(line) + len(frag)
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			body--
		}
		if body > max {
			return nil, errLongLine
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, frag...)
			continue
		}
		// A copy: frag is the Reader's buffer, and what is decoded from
		// the line may keep referring to its bytes.
		return append(line, frag...), err
	}
}

// decodeScriptLine decodes one non-blank script line; the caller sets Line.
func decodeScriptLine(text []byte, kinds []string) (Input, *DecodeError) {
	v, _, err := canon.Decode(text)
	if err != nil {
		rule := canon.RuleSyntax
		if ce, ok := errors.AsType[*canon.Error](err); ok {
			rule = ce.Rule
		}
		return nil, &DecodeError{Rule: rule, Err: err}
	}
	if err := closed(&v, []string{"kind", "payload"}, nil); err != nil {
		return nil, &DecodeError{Rule: RuleScriptLine, Err: err}
	}
	kind, ok := str(get(&v, "kind"))
	if !ok {
		return nil, &DecodeError{Path: "kind", Rule: RuleScriptLine, Err: errors.New("must be a string")}
	}
	return decodeInput(kind, get(&v, "payload"), kinds, false /* withAt */)
}

// Inputs returns the transcript's inputs in order, as the Writer was given
// them: replaying them reproduces its manual clock. kinds, when given, are
// the input kinds the caller can carry; an input of another kind is an
// *Error naming its record, with Rule RuleInputKind. A transcript Parse
// returned decodes without any other error; one built by hand is held to
// the same rules.
func (t *Transcript) Inputs(kinds ...string) ([]Input, error) {
	var out []Input
	for i := range t.Records {
		r := &t.Records[i]
		if !isInput(r.Kind) {
			continue
		}
		in, derr := decodeInput(r.Kind, r.Payload(), kinds, true /* withAt */)
		if derr != nil {
			return nil, &Error{Record: r.Seq, Line: r.Seq + 1, Kind: r.Kind, Rule: derr.Rule, Err: fmt.Errorf("%s: %w", derr.Path, derr.Err)}
		}
		out = append(out, in)
	}
	return out, nil
}

// CheckInput reports whether the Writer would record in, by the rules
// ReadScript holds a script line to (the manual clock aside, which only a
// Writer knows). kinds, when given, are the input kinds the caller can
// carry. A refusal is a *DecodeError; nothing is written.
func CheckInput(in Input, kinds ...string) error {
	var c InputChecker
	return c.Check(in, kinds...)
}

// InputChecker applies CheckInput's rules to many inputs, reusing its
// scratch memory between them (a script of 100,000 key presses must not
// allocate a payload per input only to check it). The zero value is
// ready; it is not safe for concurrent use.
type InputChecker struct{ a canon.Arena }

// Check is CheckInput with c's scratch memory.
func (c *InputChecker) Check(in Input, kinds ...string) error {
	if in == nil {
		return &DecodeError{Rule: RuleInputKind, Err: errors.New("nil input")}
	}
	c.a.Reset()
	p := in.payload(0, &c.a)
	if _, derr := decodeInput(in.kind(), &p, kinds, true /* withAt */); derr != nil {
		return derr
	}
	return nil
}

// decodeInput is the inverse of an Input's payload method. withAt admits
// the at_ms member of a record, which is not checked here: Parse checked
// it against the manual clock, and the Writer stamps it anew. A script
// line must not carry it.
func decodeInput(kind string, p *canon.Value, kinds []string, withAt bool) (Input, *DecodeError) {
	names, known := payloadMembers(kind)
	if !known || !isInput(kind) {
		return nil, &DecodeError{Path: "kind", Rule: RuleInputKind,
			Err: detail("%s is not an input kind (want %s)", canon.Quote(kind), strings.Join(inputKinds(), ", "))}
	}
	if len(kinds) > 0 && !slices.Contains(kinds, kind) {
		return nil, &DecodeError{Path: "kind", Rule: RuleInputKind,
			Err: detail("%s cannot be carried here (want %s)", kind, strings.Join(kinds, ", "))}
	}
	if p == nil || p.Kind != canon.Object {
		return nil, &DecodeError{Path: "payload", Rule: RulePayloadMembers, Err: errors.New("must be an object")}
	}
	for i := range p.Members {
		k := p.Members[i].Key
		switch {
		case k == "at_ms" && !withAt:
			return nil, &DecodeError{Path: "payload.at_ms", Rule: RulePayloadMembers,
				Err: errors.New("not allowed in a script: the recorder stamps the manual time")}
		case !hasWord(names, k) && !isExtension(k):
			return nil, &DecodeError{Path: "payload", Rule: RulePayloadMembers,
				Err: errors.New("member " + canon.Quote(k) + " is not defined for " + kind)}
		}
	}
	if rule, err := checkInputPayload(kind, p); err != nil {
		return nil, &DecodeError{Path: "payload", Rule: rule, Err: err}
	}
	// Checked above: every member read below is present and well typed.
	text := func() string { s, _ := str(get(p, "text")); return s }
	integer := func(name string) int64 { n, _ := get(p, name).Int(); return n }
	switch kind {
	case KindInputText:
		return Text{Text: text()}, nil
	case KindInputClipboard:
		return ClipboardSet{Text: text()}, nil
	case KindInputKey:
		items := get(p, "keys").Items
		keys := make([]string, len(items))
		for i := range items {
			keys[i] = items[i].Str
		}
		return Key{Keys: keys}, nil
	case KindInputResize:
		return Resize{Columns: integer("columns"), Rows: integer("rows")}, nil
	case KindInputMouse:
		m := Mouse{Column: integer("column"), Row: integer("row")}
		m.Action, _ = str(get(p, "action"))
		m.Button, _ = str(get(p, "button"))
		if d, ok := p.Get("delta"); ok {
			m.Delta, _ = d.Int()
		}
		return m, nil
	case KindInputClock:
		return ClockAdvanced{DeltaMS: integer("delta_ms")}, nil
	}
	return Stop{}, nil
}

// inputKinds lists the v1 input kinds, for messages.
func inputKinds() []string {
	return []string{KindInputText, KindInputKey, KindInputResize, KindInputMouse,
		KindInputClipboard, KindInputClock, KindInputStop}
}
