package interminai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// EncodeRequest writes req as one request line, newline included, with
// every member at the top level (where interminai's own daemon reads them
// too, by the seed). It refuses, with the *Error Decode would give, any
// request Decode would reject or read back differently, and a line longer
// than MaxLine.
func EncodeRequest(req Request) ([]byte, error) {
	if req == nil {
		return nil, fmt.Errorf("encode request: nil request")
	}
	if err := req.check(); err != nil {
		return nil, err
	}
	m := map[string]any{"type": req.Type()}
	switch r := req.(type) {
	case *Input:
		m["data"] = r.Data
	case *Output:
		m["format"] = r.Format
		putLine(m, "from", r.From)
		putLine(m, "to", r.To)
	case *Status:
		putTrue(m, "activity", r.Activity)
	case *Wait:
		putTrue(m, "activity", r.Activity)
		putTrue(m, "settled", r.Settled)
		if r.Contains != "" {
			m["contains"] = r.Contains
		}
		if r.Line != 0 {
			m["line"] = r.Line
		}
		if r.HasTimeout {
			m["timeout_ms"] = int64(r.Timeout / time.Millisecond)
		}
	case *Kill:
		m["signal"] = SignalName(r.Signal)
	case *Debug:
		putTrue(m, "clear", r.Clear)
	case *Resize:
		m["cols"], m["rows"] = r.Size.Cols, r.Size.Rows
	case *Stop, *Receipts:
	default:
		return nil, fmt.Errorf("encode request: unknown request type %T", req)
	}
	return encodeLine(m, "request")
}

func putLine(m map[string]any, member string, l Line) {
	switch l.Kind {
	case LineNumber:
		m[member] = l.N
	case LineOldest:
		m[member] = "-"
	}
}

func putTrue(m map[string]any, member string, on bool) {
	if on {
		m[member] = true
	}
}

// encodeLine marshals v as one line. HTML escaping is off so that a screen
// full of "<" stays readable in a socket trace; the seed's clients decode
// either spelling.
func encodeLine(v any, what string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line with '\n'
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	if buf.Len()-1 > MaxLine {
		return nil, &Error{Rule: RuleTooLong, Offset: -1, Limit: MaxLine, msg: fmt.Sprintf("%s line of %d bytes is longer than %d bytes", what, buf.Len()-1, MaxLine)}
	}
	return buf.Bytes(), nil
}
