package interminai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"
)

// The commands, spelled as the "type" member spells them. RECEIPTS is
// ours (docs/TERM.md); the rest are interminai's, RESIZE included although the
// seed omits it.
const (
	TypeInput    = "INPUT"
	TypeOutput   = "OUTPUT"
	TypeStatus   = "STATUS"
	TypeWait     = "WAIT"
	TypeKill     = "KILL"
	TypeStop     = "STOP"
	TypeDebug    = "DEBUG"
	TypeResize   = "RESIZE"
	TypeReceipts = "RECEIPTS"
)

// Request is one decoded request: *Input, *Output, *Status, *Wait, *Kill,
// *Stop, *Debug, *Resize or *Receipts.
type Request interface {
	// Type is the request's "type" member.
	Type() string
	// check holds the request to what Decode accepts, so EncodeRequest
	// refuses the same requests Decode does.
	check() *Error
}

// Input is INPUT: Data is written to the program's terminal as it is.
type Input struct {
	Data string
}

// Format is OUTPUT's "format": FormatASCII (the default) or FormatANSI.
type Format string

// The two formats the seed defines.
const (
	FormatASCII Format = "ascii"
	FormatANSI  Format = "ansi"
)

// LineKind says how an OUTPUT bound was given.
type LineKind uint8

// The three shapes of "from" and "to": absent or null (the seed's default:
// from the first screen line, to the last), a line number in the seed's
// numbering (negative scrollback, positive screen, 0 the boundary), or "-"
// (the oldest scrollback line).
const (
	LineDefault LineKind = iota
	LineNumber
	LineOldest
)

// Line is one bound of OUTPUT's range. N is meaningful only for
// LineNumber; the zero Line is the default.
type Line struct {
	Kind LineKind
	N    int
}

// Output is OUTPUT: the screen and scrollback lines From to To
// (inclusive), plain or with SGR colours.
type Output struct {
	Format   Format // FormatASCII when absent
	From, To Line
}

// Status is STATUS. With Activity it also reports, and clears, whether the
// program printed since the last look.
type Status struct {
	Activity bool
}

// Wait is WAIT. Its modes are exclusive: the seed's two (until exit; with
// Activity, until output or exit) and ours (Settled: until the program
// waits for input again, by quiesce's rule; Contains: until the screen
// shows the text, on screen line Line when Line is not 0). Timeout, when
// HasTimeout, bounds any mode.
type Wait struct {
	Activity   bool
	Settled    bool
	Contains   string // "" when not waiting for text; never "" otherwise
	Line       int    // 1-based screen line for Contains; 0: anywhere on the screen
	Timeout    time.Duration
	HasTimeout bool
}

// MaxTimeout is the longest "timeout_ms" WAIT takes: as long as a
// time.Duration can count in milliseconds.
const MaxTimeout = time.Duration(1<<63-1) / time.Millisecond * time.Millisecond

// Kill is KILL: Signal goes to the program. Absent, it is SIGTERM.
type Kill struct {
	Signal syscall.Signal
}

// Stop is STOP: the program and its sandbox end, and the daemon exits.
type Stop struct{}

// Debug is DEBUG. With Clear, the unhandled-sequence buffer is returned and
// emptied in one step.
type Debug struct {
	Clear bool
}

// Resize is RESIZE: the terminal becomes Size (TIOCSWINSZ, SIGWINCH). The
// seed omits RESIZE; its members here are "cols" and "rows", the names of
// OUTPUT's "size".
type Resize struct {
	Size Size
}

// Receipts is RECEIPTS (ours): the enforcement tiers the sandbox applied,
// per constraint.
type Receipts struct{}

func (*Input) Type() string    { return TypeInput }
func (*Output) Type() string   { return TypeOutput }
func (*Status) Type() string   { return TypeStatus }
func (*Wait) Type() string     { return TypeWait }
func (*Kill) Type() string     { return TypeKill }
func (*Stop) Type() string     { return TypeStop }
func (*Debug) Type() string    { return TypeDebug }
func (*Resize) Type() string   { return TypeResize }
func (*Receipts) Type() string { return TypeReceipts }

// members is one JSON object's members, by exact name.
type members map[string]json.RawMessage

// Decode reads one request line (without its newline). It returns an
// *Error for every line it refuses, and never panics.
func Decode(line []byte) (Request, error) {
	if err := checkJSON(line, "Invalid request"); err != nil {
		return nil, err
	}
	var top members
	if err := json.Unmarshal(line, &top); err != nil {
		// checkJSON accepted the line as an object, so this is not reached;
		// it stays an *Error rather than a panic all the same.
		return nil, &Error{Rule: RuleSyntax, Offset: -1, Err: err, msg: "Invalid request: " + err.Error()}
	}
	raw, ok := top["type"]
	if !ok || isNull(raw) {
		return nil, requestErr(RuleMissingType, "type", "missing 'type' field")
	}
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil {
		return nil, requestErr(RuleTypeNotString, "type", "'type' must be a string")
	}
	req, err := decodeFields(typ, top)
	if err != nil {
		return nil, err
	}
	if err := req.check(); err != nil {
		return nil, err
	}
	return req, nil
}

// decodeFields reads the members of a request of type typ into its struct.
func decodeFields(typ string, top members) (Request, *Error) {
	switch typ {
	case TypeInput:
		data, err := str(top, "data", "data")
		if err != nil {
			return nil, err
		}
		if data == nil {
			return nil, requestErr(RuleMissingField, "data", "missing 'data' field")
		}
		return &Input{Data: *data}, nil
	case TypeOutput:
		return decodeOutput(top)
	case TypeStatus:
		act, err := boolean(top, "activity", "activity")
		return &Status{Activity: act}, err
	case TypeWait:
		return decodeWait(top)
	case TypeKill:
		return decodeKill(top)
	case TypeStop:
		return &Stop{}, nil
	case TypeDebug:
		m, err := placed(top)
		if err != nil {
			return nil, err
		}
		clear, err := m.boolean("clear")
		return &Debug{Clear: clear}, err
	case TypeResize:
		return decodeResize(top)
	case TypeReceipts:
		return &Receipts{}, nil
	}
	return nil, &Error{Rule: RuleUnknownCommand, Field: "type", Offset: -1, msg: "Unknown command: " + typ}
}

func decodeOutput(top members) (Request, *Error) {
	out := &Output{Format: FormatASCII}
	f, err := str(top, "format", "format")
	if err != nil {
		return nil, err
	}
	if f != nil {
		out.Format = Format(*f)
	}
	if out.From, err = line(top, "from"); err != nil {
		return nil, err
	}
	if out.To, err = line(top, "to"); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeWait(top members) (Request, *Error) {
	m, err := placed(top)
	if err != nil {
		return nil, err
	}
	w := &Wait{}
	if w.Activity, err = m.boolean("activity"); err != nil {
		return nil, err
	}
	if w.Settled, err = m.boolean("settled"); err != nil {
		return nil, err
	}
	name, raw := m.get("contains")
	if raw != nil {
		c, err := str(members{name: raw}, name, name)
		if err != nil {
			return nil, err
		}
		if *c == "" {
			return nil, requestErr(RuleFieldValue, name, "'contains' must not be empty")
		}
		w.Contains = *c
	}
	if name, raw := m.get("line"); raw != nil {
		n, err := integer(raw, name)
		if err != nil {
			return nil, err
		}
		w.Line = -1 // out of range, and 0 is the boundary, not a line: check refuses it
		if n >= 1 && n <= MaxRows {
			w.Line = int(n)
		}
	}
	if name, raw := m.get("timeout_ms"); raw != nil {
		n, err := integer(raw, name)
		if err != nil {
			return nil, err
		}
		w.Timeout, w.HasTimeout = -1, true // out of range: check refuses it
		if n >= 0 && n <= int64(MaxTimeout/time.Millisecond) {
			w.Timeout = time.Duration(n) * time.Millisecond
		}
	}
	return w, nil
}

func decodeKill(top members) (Request, *Error) {
	m, err := placed(top)
	if err != nil {
		return nil, err
	}
	name, raw := m.get("signal")
	if raw == nil {
		return &Kill{Signal: syscall.SIGTERM}, nil
	}
	// The seed shows strings ("SIGTERM", "9"); a bare number is taken too.
	var s string
	switch {
	case raw[0] == '"':
		_ = json.Unmarshal(raw, &s) // a valid JSON string: checkJSON passed
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		s = string(raw)
	default:
		return nil, requestErr(RuleFieldType, name, "'signal' must be a signal name or number")
	}
	sig, perr := parseSignal(s)
	if perr != nil {
		perr.Field = name
		return nil, perr
	}
	return &Kill{Signal: sig}, nil
}

func decodeResize(top members) (Request, *Error) {
	m, err := placed(top)
	if err != nil {
		return nil, err
	}
	var sz Size
	for _, d := range []struct {
		member string
		to     *int
	}{{"cols", &sz.Cols}, {"rows", &sz.Rows}} {
		name, raw := m.get(d.member)
		if raw == nil {
			return nil, requestErr(RuleMissingField, d.member, "missing '%s' field", d.member)
		}
		n, err := integer(raw, name)
		if err != nil {
			return nil, err
		}
		if n < 1 || n > max(MaxCols, MaxRows) {
			n = 0 // out of any bound; Size.check names the size
		}
		*d.to = int(n)
	}
	return &Resize{Size: sz}, nil
}

// placement is a request's members as WAIT, KILL, RESIZE and DEBUG read
// them: the top level first, then the "data" object.
type placement struct {
	top, data members
}

// placed opens a request's "data" object for placement; absent or null
// means none. Any other non-object "data" is refused rather than ignored,
// because a client that put the fields there would otherwise see them
// silently dropped.
func placed(top members) (placement, *Error) {
	raw, ok := top["data"]
	if !ok || isNull(raw) {
		return placement{top: top}, nil
	}
	if raw[0] != '{' {
		return placement{}, requestErr(RuleFieldType, "data", "'data' must be an object")
	}
	var data members
	_ = json.Unmarshal(raw, &data) // an object: checkJSON passed
	return placement{top: top, data: data}, nil
}

// get returns a member's path and value, from the top level when present
// and not null, else from "data"; raw is nil when it is in neither.
func (p placement) get(member string) (path string, raw json.RawMessage) {
	if raw, ok := p.top[member]; ok && !isNull(raw) {
		return member, raw
	}
	if raw, ok := p.data[member]; ok && !isNull(raw) {
		return "data." + member, raw
	}
	return member, nil
}

func (p placement) boolean(member string) (bool, *Error) {
	name, raw := p.get(member)
	return boolean(members{name: raw}, name, name)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// boolean reads an optional boolean member; absent or null is false.
func boolean(m members, member, path string) (bool, *Error) {
	raw, ok := m[member]
	if !ok || raw == nil || isNull(raw) {
		return false, nil
	}
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, requestErr(RuleFieldType, path, "'%s' must be a boolean", member)
}

// str reads an optional string member; nil when absent or null.
func str(m members, member, path string) (*string, *Error) {
	raw, ok := m[member]
	if !ok || raw == nil || isNull(raw) {
		return nil, nil
	}
	if raw[0] != '"' {
		return nil, requestErr(RuleFieldType, path, "'%s' must be a string", member)
	}
	var s string
	_ = json.Unmarshal(raw, &s) // a valid JSON string: checkJSON passed
	return &s, nil
}

// integer reads a JSON integer literal: no fraction, no exponent, within
// int64. 1.0 and 1e2 are refused because the seed's members are line
// numbers and counts, and a client that sends a fraction has a bug worth
// seeing.
func integer(raw json.RawMessage, path string) (int64, *Error) {
	member := path[bytes.LastIndexByte([]byte(path), '.')+1:]
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, requestErr(RuleFieldType, path, "'%s' must be an integer", member)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, requestErr(RuleFieldType, path, "'%s' must be an integer within 64 bits, not %s", member, raw)
	}
	return n, nil
}

// line reads OUTPUT's "from" or "to".
func line(top members, member string) (Line, *Error) {
	raw, ok := top[member]
	if !ok || isNull(raw) {
		return Line{}, nil
	}
	if string(raw) == `"-"` {
		return Line{Kind: LineOldest}, nil
	}
	if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
		if n, err := strconv.ParseInt(string(raw), 10, 0); err == nil {
			return Line{Kind: LineNumber, N: int(n)}, nil
		}
	}
	return Line{}, requestErr(RuleFieldType, member, `'%s' must be an integer, null or "-", not %s`, member, truncate(raw))
}

// truncate keeps an echoed value short: an error reply should not carry a
// client's 10 MiB member back to it.
func truncate(raw json.RawMessage) string {
	const n = 40
	if len(raw) <= n {
		return string(raw)
	}
	return string(raw[:n]) + "…"
}

func (r *Input) check() *Error {
	if !utf8.ValidString(r.Data) {
		return &Error{Rule: RuleUTF8, Field: "data", Offset: -1, msg: "Invalid request: 'data' is not valid UTF-8; INPUT carries text"}
	}
	return nil
}

func (r *Output) check() *Error {
	if r.Format != FormatASCII && r.Format != FormatANSI {
		return requestErr(RuleFieldValue, "format", `'format' must be "ascii" or "ansi"`)
	}
	for _, b := range []struct {
		member string
		l      Line
	}{{"from", r.From}, {"to", r.To}} {
		// N outside LineNumber would not survive encoding: refuse it
		// rather than let two values mean one request.
		if b.l.Kind > LineOldest || b.l.Kind != LineNumber && b.l.N != 0 {
			return requestErr(RuleFieldValue, b.member, "'%s' has kind %d and number %d", b.member, b.l.Kind, b.l.N)
		}
	}
	return nil
}

func (*Status) check() *Error   { return nil }
func (*Stop) check() *Error     { return nil }
func (*Debug) check() *Error    { return nil }
func (*Receipts) check() *Error { return nil }

func (r *Wait) check() *Error {
	modes := 0
	for _, on := range []bool{r.Activity, r.Settled, r.Contains != ""} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return requestErr(RuleWaitModes, "", "WAIT takes one of 'activity', 'settled' and 'contains'")
	}
	if !utf8.ValidString(r.Contains) {
		return &Error{Rule: RuleUTF8, Field: "contains", Offset: -1, msg: "Invalid request: 'contains' is not valid UTF-8"}
	}
	if r.Line < 0 || r.Line > MaxRows {
		return requestErr(RuleFieldValue, "line", "'line' must be a screen line, 1 to %d", MaxRows)
	}
	if r.Line != 0 && r.Contains == "" {
		return requestErr(RuleMissingField, "contains", "'line' needs 'contains': the text to wait for on that line")
	}
	if r.HasTimeout && (r.Timeout < 0 || r.Timeout%time.Millisecond != 0) || !r.HasTimeout && r.Timeout != 0 {
		return requestErr(RuleFieldValue, "timeout_ms", "'timeout_ms' must be a whole number of milliseconds, 0 to %d", int64(MaxTimeout/time.Millisecond))
	}
	return nil
}

func (r *Kill) check() *Error {
	if SignalName(r.Signal) == "" {
		e := invalidSignal(strconv.Itoa(int(r.Signal)))
		e.Field = "signal"
		return e
	}
	return nil
}

func (r *Resize) check() *Error {
	if err := r.Size.check(); err != nil {
		err.Field = "cols"
		if r.Size.Cols >= 1 && r.Size.Cols <= MaxCols {
			err.Field = "rows"
		}
		return err
	}
	return nil
}
