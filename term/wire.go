package term

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/vt"
)

// This file is the daemon's interim codec of seed 002, until package
// interminai (the shared codec of the CLI and the daemon) is in the tree;
// its shapes follow that package's so that the switch is an import.

// MaxLine bounds a request line: the seed's 10 MB, which interminai states
// and does not enforce.
const MaxLine = 10 << 20

// The commands, as the "type" member spells them.
const (
	typeInput  = "INPUT"
	typeOutput = "OUTPUT"
	typeStatus = "STATUS"
	typeWait   = "WAIT"
	typeKill   = "KILL"
	typeStop   = "STOP"
	typeResize = "RESIZE"
)

// request is one decoded request line.
type request struct {
	Type     string
	Data     string // INPUT
	ANSI     bool   // OUTPUT
	Range    Range  // OUTPUT
	Activity bool   // STATUS, WAIT
	Signal   unix.Signal
	Cols     int // RESIZE
	Rows     int
}

// requestError is a request the daemon refuses; its text is the error
// reply's, in the seed's words.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &requestError{msg: "Invalid request: " + fmt.Sprintf(format, args...)}
}

// members reads each member at the top level first and, for the commands
// whose fields interminai's two clients place differently, from a "data"
// object when absent there.
type members struct {
	top, data map[string]json.RawMessage
}

func (m members) get(name string) (json.RawMessage, bool) {
	if v, ok := m.top[name]; ok && string(v) != "null" {
		return v, true
	}
	if v, ok := m.data[name]; ok && string(v) != "null" {
		return v, true
	}
	return nil, false
}

func (m members) bool(name string) (bool, error) {
	v, ok := m.get(name)
	if !ok {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, invalid("'%s' must be a boolean", name)
	}
	return b, nil
}

// decodeRequest decodes one request line (its newline removed).
func decodeRequest(line []byte) (request, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil || top == nil {
		return request{}, invalid("not a JSON object")
	}
	var r request
	t, ok := top["type"]
	if !ok || string(t) == "null" {
		return r, invalid("missing 'type' field")
	}
	if err := json.Unmarshal(t, &r.Type); err != nil {
		return r, invalid("'type' must be a string")
	}
	m := members{top: top}
	switch r.Type {
	case typeWait, typeKill, typeResize:
		if d, ok := top["data"]; ok {
			_ = json.Unmarshal(d, &m.data) // not an object: no members there
		}
	}
	var err error
	switch r.Type {
	case typeInput:
		v, ok := top["data"]
		if !ok {
			return r, invalid("missing 'data' field")
		}
		if json.Unmarshal(v, &r.Data) != nil {
			return r, invalid("'data' must be a string")
		}
	case typeOutput:
		err = r.decodeOutput(m)
	case typeStatus, typeWait:
		r.Activity, err = m.bool("activity")
	case typeKill:
		r.Signal = unix.SIGTERM
		if v, ok := m.get("signal"); ok {
			var s any
			_ = json.Unmarshal(v, &s)
			var name string
			switch s := s.(type) {
			case string:
				name = s
			case float64:
				name = strconv.FormatFloat(s, 'f', -1, 64)
			default:
				return r, invalid("'signal' must be a name or a number")
			}
			if r.Signal, err = ParseSignal(name); err != nil {
				return r, err
			}
		}
	case typeResize:
		err = r.decodeResize(m)
	case typeStop:
	default:
		return r, &requestError{msg: "Unknown command: " + r.Type}
	}
	return r, err
}

func (r *request) decodeOutput(m members) error {
	if v, ok := m.get("format"); ok {
		var f string
		if json.Unmarshal(v, &f) != nil || (f != "ascii" && f != "ansi") {
			return invalid("'format' must be \"ascii\" or \"ansi\"")
		}
		r.ANSI = f == "ansi"
	}
	if v, ok := m.get("from"); ok {
		if string(v) == `"-"` {
			r.Range.Oldest = true
		} else if json.Unmarshal(v, &r.Range.From) != nil {
			return invalid("'from' must be a line number or \"-\"")
		}
	}
	if v, ok := m.get("to"); ok {
		var to int
		if json.Unmarshal(v, &to) != nil {
			return invalid("'to' must be a line number")
		}
		r.Range.To = &to
	}
	return nil
}

func (r *request) decodeResize(m members) error {
	if v, ok := m.get("size"); ok {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return invalid("'size' must be COLSxROWS")
		}
		var err error
		r.Cols, r.Rows, err = ParseSize(s)
		return err
	}
	for _, f := range []struct {
		name string
		to   *int
	}{{"cols", &r.Cols}, {"rows", &r.Rows}} {
		v, ok := m.get(f.name)
		if !ok {
			return invalid("missing '%s' field", f.name)
		}
		if json.Unmarshal(v, f.to) != nil {
			return invalid("'%s' must be a number", f.name)
		}
	}
	return nil
}

// reply is one reply line.
type reply struct {
	Status string `json:"status"`
	Data   any    `json:"data,omitempty"`
	Error  string `json:"error,omitempty"`
}

// readLine reads one request line of at most MaxLine bytes.
func readLine(r io.Reader) ([]byte, error) {
	br := bufio.NewReader(io.LimitReader(r, MaxLine+1))
	line, err := br.ReadBytes('\n')
	switch {
	case err == nil:
		return bytes.TrimSuffix(line[:len(line)-1], []byte("\r")), nil
	case len(line) > MaxLine:
		return nil, &requestError{msg: fmt.Sprintf("Invalid request: longer than %d bytes", MaxLine)}
	case errors.Is(err, io.EOF):
		return nil, &requestError{msg: "Invalid request: the connection ended before the newline"}
	}
	return nil, err
}

// Call sends one request (a JSON object with its "type") to the daemon at
// socket and returns the reply's data. An error reply is a *RemoteError
// with the daemon's words.
func Call(ctx context.Context, socket string, req map[string]any) (json.RawMessage, error) {
	var dial net.Dialer
	conn, err := dial.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", socket, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("send the request: %w", err)
	}
	br := bufio.NewReader(io.LimitReader(conn, MaxLine+1))
	out, err := br.ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("read the reply: %w", err)
	}
	var rep struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("read the reply: %w", err)
	}
	switch rep.Status {
	case "ok":
		return rep.Data, nil
	case "error":
		return nil, &RemoteError{Message: rep.Error}
	}
	return nil, fmt.Errorf("read the reply: status %q", rep.Status)
}

// RemoteError is an error reply: the daemon's own words.
type RemoteError struct{ Message string }

func (e *RemoteError) Error() string { return e.Message }

// signals are the names KILL and `kill --signal` take, with or without
// "SIG".
var signals = map[string]unix.Signal{
	"HUP": unix.SIGHUP, "INT": unix.SIGINT, "QUIT": unix.SIGQUIT, "ILL": unix.SIGILL,
	"TRAP": unix.SIGTRAP, "ABRT": unix.SIGABRT, "BUS": unix.SIGBUS, "FPE": unix.SIGFPE,
	"KILL": unix.SIGKILL, "USR1": unix.SIGUSR1, "SEGV": unix.SIGSEGV, "USR2": unix.SIGUSR2,
	"PIPE": unix.SIGPIPE, "ALRM": unix.SIGALRM, "TERM": unix.SIGTERM, "CHLD": unix.SIGCHLD,
	"CONT": unix.SIGCONT, "STOP": unix.SIGSTOP, "TSTP": unix.SIGTSTP, "TTIN": unix.SIGTTIN,
	"TTOU": unix.SIGTTOU, "URG": unix.SIGURG, "XCPU": unix.SIGXCPU, "XFSZ": unix.SIGXFSZ,
	"VTALRM": unix.SIGVTALRM, "PROF": unix.SIGPROF, "WINCH": unix.SIGWINCH, "IO": unix.SIGIO,
	"PWR": unix.SIGPWR, "SYS": unix.SIGSYS,
}

// ParseSignal reads a signal name (SIGTERM, TERM, term) or number (1-64).
func ParseSignal(s string) (unix.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return 0, &requestError{msg: "Invalid signal: " + s}
		}
		return unix.Signal(n), nil
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if sig, ok := signals[name]; ok {
		return sig, nil
	}
	return 0, &requestError{msg: "Invalid signal: " + s}
}

// SignalName is "SIGTERM" for SIGTERM, the number for a signal without a
// name here.
func SignalName(sig unix.Signal) string {
	for name, s := range signals {
		if s == sig {
			return "SIG" + name
		}
	}
	return strconv.Itoa(int(sig))
}

// ParseSize reads COLSxROWS.
func ParseSize(s string) (cols, rows int, err error) {
	c, r, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		cols, err = strconv.Atoi(c)
		if err == nil {
			rows, err = strconv.Atoi(r)
		}
	}
	if !ok || err != nil || checkSize(cols, rows) != nil {
		return 0, 0, &requestError{msg: fmt.Sprintf("Invalid size: %q (want COLSxROWS, at most %dx%d)", s, vt.MaxCols, vt.MaxRows)}
	}
	return cols, rows, nil
}

// DecodeText turns the escapes of `input --text` into the bytes they name:
// \n \r \t \a \b \f \v \\ \e \E (ESC) and \xHH. An unknown escape, or \x
// without two hex digits, passes through unchanged.
func DecodeText(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			out = append(out, c)
			continue
		}
		if b, ok := simpleEscapes[s[i+1]]; ok {
			out = append(out, b)
			i++
			continue
		}
		if s[i+1] == 'x' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				out = append(out, byte(v))
				i += 3
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

var simpleEscapes = map[byte]byte{
	'n': '\n', 'r': '\r', 't': '\t', 'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v',
	'\\': '\\', 'e': 0x1b, 'E': 0x1b,
}
