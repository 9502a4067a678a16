package control

import (
	"errors"
	"fmt"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// Encode returns m as one canonical message line: the RFC 8785 form of its
// envelope followed by LF. It refuses to write what Parse would reject (a
// zero Resize, an empty Key, a string that is not UTF-8, a breached limit):
// the line is parsed back before it is returned, so a defective message is
// caught on our side of the pipe, not blamed on the subject. The returned
// error wraps the *Error that Parse gave.
func Encode(m Message) ([]byte, error) {
	return encode(make([]byte, 0, 256), m, nil)
}

// Encoder is Encode for a caller that encodes message after message: it
// appends each line to the caller's buffer, and the parse that checks it
// decodes into the same memory every time. The zero Encoder is ready to
// use; it is not safe for concurrent use.
type Encoder struct {
	check canon.Decoder
}

// Append appends m's line (LF included) to dst, as Encode returns it.
// On error dst is returned unchanged.
func (e *Encoder) Append(dst []byte, m Message) ([]byte, error) {
	// The check's message is dropped before the next: recycle at once.
	e.check.Recycle()
	return encode(dst, m, &e.check)
}

func encode(dst []byte, m Message, check *canon.Decoder) ([]byte, error) {
	if m == nil {
		return dst, errors.New("encode control message: nil message")
	}
	env := canon.ObjectValue(
		canon.M("protocol", canon.StringValue(Protocol)),
		canon.M("kind", canon.StringValue(string(m.Kind()))),
		canon.M("payload", m.payload()),
	)
	line, err := canon.Append(dst, &env)
	if err != nil {
		return dst, fmt.Errorf("encode %s: %w", m.Kind(), err)
	}
	line = append(line, '\n')
	if _, err := parse(line[len(dst):], check); err != nil {
		return dst, fmt.Errorf("encode %s: %w", m.Kind(), err)
	}
	return line, nil
}

func str(s string) canon.Value { return canon.StringValue(s) }
func num(n int64) canon.Value  { return canon.IntValue(n) }

func stringArray(list []string) canon.Value {
	items := make([]canon.Value, len(list))
	for i, s := range list {
		items[i] = str(s)
	}
	return canon.ArrayValue(items...)
}

// optional appends member name when v is present.
func optional(members []canon.Member, name string, v *canon.Value) []canon.Member {
	if v != nil {
		members = append(members, canon.M(name, *v))
	}
	return members
}

func (m Hello) payload() canon.Value {
	return canon.ObjectValue(
		canon.M("run_id", str(m.RunID)),
		canon.M("config", m.Config.Value()),
		canon.M("at_ms", num(m.AtMS)),
	)
}

func (m Text) payload() canon.Value { return canon.ObjectValue(canon.M("text", str(m.Text))) }

func (m Key) payload() canon.Value { return canon.ObjectValue(canon.M("keys", stringArray(m.Keys))) }

func (m Resize) payload() canon.Value {
	return canon.ObjectValue(canon.M("columns", num(m.Columns)), canon.M("rows", num(m.Rows)))
}

func (m Clock) payload() canon.Value { return canon.ObjectValue(canon.M("at_ms", num(m.AtMS))) }

func (Stop) payload() canon.Value { return canon.ObjectValue() }

func (m Unsupported) payload() canon.Value {
	return canon.ObjectValue(optional([]canon.Member{
		canon.M("constraint", str(string(m.Constraint))),
		canon.M("code", str(m.Code)),
		canon.M("message", str(m.Message)),
	}, "details", m.Details)...)
}

func (f Failure) value() canon.Value {
	return canon.ObjectValue(optional([]canon.Member{
		canon.M("code", str(f.Code)),
		canon.M("message", str(f.Message)),
	}, "details", f.Details)...)
}

func (m SessionFailed) payload() canon.Value {
	return canon.ObjectValue(canon.M("error", m.Error.value()))
}

func (m Ready) payload() canon.Value {
	return canon.ObjectValue(canon.M("observation", m.Observation.payload()))
}

func (m Diagnostic) payload() canon.Value {
	return canon.ObjectValue(optional([]canon.Member{
		canon.M("code", str(m.Code)),
		canon.M("message", str(m.Message)),
	}, "details", m.Details)...)
}

func (m Observation) payload() canon.Value {
	events := make([]canon.Value, len(m.Events))
	for i, e := range m.Events {
		events[i] = canon.ObjectValue(canon.M("type", str(e.Type)), canon.M("data", e.Data))
	}
	members := []canon.Member{
		canon.M("state", m.State),
		canon.M("ui", m.UI.value()),
		canon.M("events", canon.ArrayValue(events...)),
	}
	if f := m.Frame; f != nil {
		members = append(members, canon.M("frame", canon.ObjectValue(
			canon.M("lines", stringArray(f.Lines)),
			canon.M("columns", num(f.Columns)),
			canon.M("rows", num(f.Rows)),
		)))
	}
	if p := m.Process; p != nil {
		proc := []canon.Member{canon.M("state", str(string(p.State)))}
		if p.Exit != nil {
			proc = append(proc, canon.M("exit", p.Exit.value()))
		}
		members = append(members, canon.M("process", canon.ObjectValue(proc...)))
	}
	return canon.ObjectValue(members...)
}

// value writes focus and mode as explicit nulls when nil: the transcript's
// UiObservation always carries both, so the canonical wire form does too.
func (u UI) value() canon.Value {
	regions := make([]canon.Value, len(u.Regions))
	for i, r := range u.Regions {
		regions[i] = canon.ObjectValue(
			canon.M("id", str(r.ID)),
			canon.M("role", str(r.Role)),
			canon.M("column", num(r.Column)),
			canon.M("row", num(r.Row)),
			canon.M("columns", num(r.Columns)),
			canon.M("rows", num(r.Rows)),
		)
	}
	return canon.ObjectValue(
		canon.M("regions", canon.ArrayValue(regions...)),
		canon.M("focus", nullable(u.Focus)),
		canon.M("cursor", canon.ObjectValue(
			canon.M("column", num(u.Cursor.Column)),
			canon.M("row", num(u.Cursor.Row)),
			canon.M("visible", canon.BoolValue(u.Cursor.Visible)),
		)),
		canon.M("mode", nullable(u.Mode)),
	)
}

func nullable(s *string) canon.Value {
	if s == nil {
		return canon.NullValue()
	}
	return str(*s)
}

func (e Exit) value() canon.Value {
	v := str(e.Signal)
	if e.Kind == ExitCode {
		v = num(e.Code)
	}
	return canon.ObjectValue(canon.M("kind", str(string(e.Kind))), canon.M("value", v))
}

func (m RunFinished) payload() canon.Value { return canon.ObjectValue(canon.M("exit", m.Exit.value())) }

func (m RunFailed) payload() canon.Value { return canon.ObjectValue(canon.M("error", m.Error.value())) }
