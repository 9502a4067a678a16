package input

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// ReadScript reads an input script from r: JSONL, one input per line,
// each {"kind": K, "payload": P} where P is the input record's payload
// without at_ms (the Writer stamps it), e.g.
// {"kind":"input.clock_advanced","payload":{"delta_ms":250}}. Lines need
// not be canonical; blank lines are skipped. kinds, when given, are the
// input kinds the caller can carry: any other is refused.
//
// Each line is held to the rules its record would be (RuleKeyChord,
// RuleResize, ...) and no input may follow input.stop. The first violation
// is an *Error naming the line. The limits are enforced while reading, so
// an oversized script is never read whole: a line longer than
// canon.MaxLineBytes (one record) is refused as soon as its excess
// arrives, and a script longer than canon.MaxTranscriptBytes (every input
// is recorded in one transcript) after that many bytes and one more.
// An error from r is returned wrapped, not as an *Error.
func ReadScript(r io.Reader, kinds ...string) ([]Input, error) {
	var out []Input
	lr := &io.LimitedReader{R: r, N: canon.MaxTranscriptBytes + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	for line := 1; ; line++ {
		text, err := readLine(br, canon.MaxLineBytes)
		if lr.N <= 0 {
			return nil, &Error{Rule: RuleScriptBytes,
				Err: detail("the script is larger than %d bytes, the most one transcript holds (refused after reading %d)", canon.MaxTranscriptBytes, canon.MaxTranscriptBytes+1)}
		}
		switch {
		case errors.Is(err, errLongLine):
			return nil, &Error{Line: line, Rule: canon.RuleLineBytes,
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
					derr = &Error{Rule: RuleAfterStop, Err: errors.New("no input may follow input.stop")}
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
func decodeScriptLine(text []byte, kinds []string) (Input, *Error) {
	v, _, err := canon.Decode(text)
	if err != nil {
		rule := canon.RuleSyntax
		if ce, ok := errors.AsType[*canon.Error](err); ok {
			rule = ce.Rule
		}
		return nil, &Error{Rule: rule, Err: err}
	}
	if err := canon.Closed(&v, []string{"kind", "payload"}, nil); err != nil {
		return nil, &Error{Rule: RuleScriptLine, Err: err}
	}
	kind, ok := canon.Str(canon.Lookup(&v, "kind"))
	if !ok {
		return nil, &Error{Path: "kind", Rule: RuleScriptLine, Err: errors.New("must be a string")}
	}
	return decode(kind, canon.Lookup(&v, "payload"), kinds, false /* withAt */)
}

// DecodeRecord decodes the payload p of an input record of the given kind,
// at_ms admitted and not checked (a transcript's manual clock judges it,
// and a Writer stamps it anew). kinds, when given, are the input kinds the
// caller can carry. A refusal is an *Error whose Path names the member at
// fault.
func DecodeRecord(kind string, p *canon.Value, kinds ...string) (Input, error) {
	in, derr := decode(kind, p, kinds, true /* withAt */)
	if derr != nil {
		return nil, derr
	}
	return in, nil
}

// Check reports whether a transcript Writer would record in, by the rules
// ReadScript holds a script line to (the manual clock aside, which only a
// Writer knows). kinds, when given, are the input kinds the caller can
// carry. A refusal is an *Error; nothing is written.
func Check(in Input, kinds ...string) error {
	var c Checker
	return c.Check(in, kinds...)
}

// Checker applies Check's rules to many inputs, reusing its scratch
// memory between them (a script of 100,000 key presses must not allocate
// a payload per input only to check it). The zero value is ready; it is
// not safe for concurrent use.
type Checker struct{ a canon.Arena }

// Check is the package's Check with c's scratch memory.
func (c *Checker) Check(in Input, kinds ...string) error {
	if in == nil {
		return &Error{Rule: RuleKind, Err: errors.New("nil input")}
	}
	c.a.Reset()
	p := in.Payload(0, &c.a)
	if _, derr := decode(in.Kind(), &p, kinds, true /* withAt */); derr != nil {
		return derr
	}
	return nil
}

// decode is the inverse of an Input's Payload method. withAt admits the
// at_ms member of a record, which is not checked here: Parse checked it
// against the manual clock, and the Writer stamps it anew. A script line
// must not carry it.
func decode(kind string, p *canon.Value, kinds []string, withAt bool) (Input, *Error) {
	names, known := Members(kind)
	if !known {
		return nil, &Error{Path: "kind", Rule: RuleKind,
			Err: detail("%s is not an input kind (want %s)", canon.Quote(kind), strings.Join(Kinds(), ", "))}
	}
	if len(kinds) > 0 && !slices.Contains(kinds, kind) {
		return nil, &Error{Path: "kind", Rule: RuleKind,
			Err: detail("%s cannot be carried here (want %s)", kind, strings.Join(kinds, ", "))}
	}
	if p == nil || p.Kind != canon.Object {
		return nil, &Error{Path: "payload", Rule: RulePayloadMembers, Err: errors.New("must be an object")}
	}
	for i := range p.Members {
		k := p.Members[i].Key
		switch {
		case k == "at_ms" && !withAt:
			return nil, &Error{Path: "payload.at_ms", Rule: RulePayloadMembers,
				Err: errors.New("not allowed in a script: the recorder stamps the manual time")}
		case !canon.HasWord(names, k) && !canon.IsExtension(k):
			return nil, &Error{Path: "payload", Rule: RulePayloadMembers,
				Err: errors.New("member " + canon.Quote(k) + " is not defined for " + kind)}
		}
	}
	if rule, err := CheckPayload(kind, p); err != nil {
		return nil, &Error{Path: "payload", Rule: rule, Err: err}
	}
	// Checked above: every member read below is present and well typed.
	text := func() string { s, _ := canon.Str(canon.Lookup(p, "text")); return s }
	integer := func(name string) int64 { n, _ := canon.Lookup(p, name).Int(); return n }
	switch kind {
	case KindText:
		return Text{Text: text()}, nil
	case KindClipboard:
		return ClipboardSet{Text: text()}, nil
	case KindKey:
		items := canon.Lookup(p, "keys").Items
		keys := make([]string, len(items))
		for i := range items {
			keys[i] = items[i].Str
		}
		return Key{Keys: keys}, nil
	case KindResize:
		return Resize{Columns: integer("columns"), Rows: integer("rows")}, nil
	case KindMouse:
		m := Mouse{Column: integer("column"), Row: integer("row")}
		m.Action, _ = canon.Str(canon.Lookup(p, "action"))
		m.Button, _ = canon.Str(canon.Lookup(p, "button"))
		if d, ok := p.Get("delta"); ok {
			m.Delta, _ = d.Int()
		}
		return m, nil
	case KindClock:
		return ClockAdvanced{DeltaMS: integer("delta_ms")}, nil
	}
	return Stop{}, nil
}
