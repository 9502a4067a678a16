package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The hot path of an epoch — read one input, write one observation — by
// hand, without reflection: per epoch, encoding/json cost this subject more
// than the supervisor's whole round trip. Both directions are exact:
// appendMessage writes the bytes encode (encoding/json, HTML escaping off)
// writes, and splitMessage and fastPayload accept only lines whose
// encoding/json decoding they reproduce, leaving every other line to it.
// wire_test.go checks both against encoding/json.

// appendMessage appends the message line (LF included) of kind and payload.
func appendMessage(b []byte, kind string, payload any) ([]byte, error) {
	b = append(b, `{"kind":`...)
	b = appendString(b, kind)
	b = append(b, `,"payload":`...)
	b, err := appendValue(b, payload)
	if err != nil {
		return b, err
	}
	b = append(b, `,"protocol":"`+protocol+`"}`...)
	return append(b, '\n'), nil
}

// appendValue appends v as encoding/json would: by hand for the types an
// observation is made of, through encoding/json for anything else.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case observation:
		return v.appendJSON(b)
	case *stateDoc:
		if v.envJSON == nil {
			break // not made by state: encoding/json encodes Env
		}
		return v.appendJSON(b), nil
	case runIDData:
		return append(appendString(append(b, `{"run_id":`...), v.RunID), '}'), nil
	case textData:
		return append(appendString(append(b, `{"text":`...), v.Text), '}'), nil
	case keysData:
		return append(appendStrings(append(b, `{"keys":`...), v.Keys), '}'), nil
	case sizeData:
		b = strconv.AppendInt(append(b, `{"columns":`...), int64(v.Columns), 10)
		return append(strconv.AppendInt(append(b, `,"rows":`...), int64(v.Rows), 10), '}'), nil
	case clockData:
		return append(strconv.AppendInt(append(b, `{"at_ms":`...), v.AtMS, 10), '}'), nil
	case inputsData:
		return append(strconv.AppendInt(append(b, `{"inputs":`...), int64(v.Inputs), 10), '}'), nil
	}
	line, err := encode(v)
	if err != nil {
		return b, err
	}
	return append(b, line[:len(line)-1]...), nil // without encode's LF
}

func (o *observation) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"events":`...)
	if o.Events == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, e := range o.Events {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(append(b, `{"data":`...), e.Data); err != nil {
				return b, err
			}
			b = append(appendString(append(b, `,"type":`...), e.Type), '}')
		}
		b = append(b, ']')
	}
	if f := o.Frame; f != nil {
		b = strconv.AppendInt(append(b, `,"frame":{"columns":`...), int64(f.Columns), 10)
		b = appendStrings(append(b, `,"lines":`...), f.Lines)
		b = strconv.AppendInt(append(b, `,"rows":`...), int64(f.Rows), 10)
		b = append(b, '}')
	}
	if p := o.Process; p != nil {
		b = append(b, `,"process":{`...)
		if e := p.Exit; e != nil {
			b = appendString(append(b, `"exit":{"kind":`...), e.Kind)
			b = strconv.AppendInt(append(b, `,"value":`...), int64(e.Value), 10)
			b = append(b, "},"...)
		}
		b = append(appendString(append(b, `"state":`...), p.State), '}')
	}
	b, err := appendValue(append(b, `,"state":`...), o.State)
	if err != nil {
		return b, err
	}
	u := &o.UI
	b = strconv.AppendInt(append(b, `,"ui":{"cursor":{"column":`...), int64(u.Cursor.Column), 10)
	b = strconv.AppendInt(append(b, `,"row":`...), int64(u.Cursor.Row), 10)
	b = strconv.AppendBool(append(b, `,"visible":`...), u.Cursor.Visible)
	b = appendStringPtr(append(b, `},"focus":`...), u.Focus)
	b = appendStringPtr(append(b, `,"mode":`...), u.Mode)
	b = append(b, `,"regions":`...)
	if u.Regions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range u.Regions {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(append(b, `{"column":`...), int64(r.Column), 10)
			b = strconv.AppendInt(append(b, `,"columns":`...), int64(r.Columns), 10)
			b = appendString(append(b, `,"id":`...), r.ID)
			b = appendString(append(b, `,"role":`...), r.Role)
			b = strconv.AppendInt(append(b, `,"row":`...), int64(r.Row), 10)
			b = strconv.AppendInt(append(b, `,"rows":`...), int64(r.Rows), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}}"...), nil
}

func (s *stateDoc) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"columns":`...), int64(s.Columns), 10)
	b = appendString(append(b, `,"cwd":`...), s.Cwd)
	b = strconv.AppendUint(append(b, `,"draw":`...), s.Draw, 10)
	b = append(append(b, `,"env":`...), s.envJSON...)
	b = strconv.AppendInt(append(b, `,"inputs":`...), int64(s.Inputs), 10)
	b = appendStrings(append(b, `,"last_key":`...), s.LastKey)
	b = strconv.AppendInt(append(b, `,"now_ms":`...), s.NowMS, 10)
	b = strconv.AppendInt(append(b, `,"rows":`...), int64(s.Rows), 10)
	b = appendString(append(b, `,"run_id":`...), s.RunID)
	b = appendString(append(b, `,"seed":`...), s.Seed)
	b = appendString(append(b, `,"text":`...), s.Text)
	return append(b, '}')
}

// appendStrings appends a []string: null when nil, as encoding/json does.
func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendString is encoding/json's string encoder with HTML escaping off:
// the short escapes for \b \f \n \r \t, \u00XX for the other control
// characters, \ufffd for each invalid UTF-8 byte, and \u2028 and \u2029
// escaped (for JSONP) as encoding/json always does.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// splitMessage takes apart a line in the canonical envelope an adapter
// writes, {"kind":K,"payload":P,"protocol":"termverify.control/v1"} and
// LF, where K needs no escapes and P is one valid JSON value: exactly the
// lines whose encoding/json decoding gives kind K, payload P and our
// protocol. For any other line ok is false, and the caller decodes it with
// encoding/json. payload aliases line.
func splitMessage(line []byte) (kind string, payload []byte, ok bool) {
	const head, mid, tail = `{"kind":"`, `","payload":`, `,"protocol":"` + protocol + `"}` + "\n"
	if !bytes.HasPrefix(line, []byte(head)) || !bytes.HasSuffix(line, []byte(tail)) {
		return "", nil, false
	}
	rest := line[len(head) : len(line)-len(tail)]
	i := 0
	for i < len(rest) && (rest[i] >= 'a' && rest[i] <= 'z' || rest[i] == '.' || rest[i] == '_') {
		i++
	}
	if !bytes.HasPrefix(rest[i:], []byte(mid)) {
		return "", nil, false
	}
	payload = rest[i+len(mid):]
	// encoding/json's RawMessage holds the value without the whitespace
	// around it, which json.Valid allows.
	if len(payload) == 0 || isSpace(payload[0]) || isSpace(payload[len(payload)-1]) || !json.Valid(payload) {
		return "", nil, false
	}
	return string(rest[:i]), payload, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// fastPayload decodes the payloads of the hot inputs, {"keys":[S,...]}
// (at least one key) and {"text":S}, where every S is a string of valid
// UTF-8 with no escapes and no control characters: then its text is its
// bytes, as encoding/json would decode it. Anything else gives ok false.
func fastPayload(payload []byte) (p inputPayload, ok bool) {
	switch {
	case bytes.HasPrefix(payload, []byte(`{"keys":[`)) && bytes.HasSuffix(payload, []byte(`]}`)):
		list := payload[len(`{"keys":[`) : len(payload)-len(`]}`)]
		for {
			s, rest, ok := plainString(list)
			if !ok {
				return inputPayload{}, false
			}
			p.Keys = append(p.Keys, s)
			if len(rest) == 0 {
				return p, true
			}
			if rest[0] != ',' {
				return inputPayload{}, false
			}
			list = rest[1:]
		}
	case bytes.HasPrefix(payload, []byte(`{"text":`)) && bytes.HasSuffix(payload, []byte(`}`)):
		s, rest, ok := plainString(payload[len(`{"text":`) : len(payload)-1])
		if !ok || len(rest) != 0 {
			return inputPayload{}, false
		}
		p.Text = &s
		return p, true
	}
	return inputPayload{}, false
}

// plainString reads a JSON string without escapes or control characters
// at the start of b.
func plainString(b []byte) (s string, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return "", nil, false
	}
	raw := b[1 : 1+end]
	for _, c := range raw {
		if c < 0x20 || c == '\\' {
			return "", nil, false
		}
	}
	if !utf8.Valid(raw) {
		return "", nil, false
	}
	return string(raw), b[2+end:], true
}
