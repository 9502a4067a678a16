package interminai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The two reply statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Reply is one reply line: {"status":"ok"} or {"status":"ok","data":…}, or
// {"status":"error","error":"…"}. Data is the raw JSON of the "data"
// member, nil when there is none (INPUT's reply has none).
type Reply struct {
	Status string
	Data   json.RawMessage
	Error  string
}

// OK is the success reply carrying data, one of the *Data types below or
// nil for a reply without data.
func OK(data any) (Reply, error) {
	if data == nil {
		return Reply{Status: StatusOK}, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a screen full of "<" stays readable, as in requests
	if err := enc.Encode(data); err != nil {
		return Reply{}, fmt.Errorf("encode reply data: %w", err)
	}
	return Reply{Status: StatusOK, Data: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}, nil
}

// Fail is the error reply for err. Its text is err's message as it is:
// for an *Error from Decode, the seed's wording.
// Bytes that are not UTF-8 (a file name in an OS error) become U+FFFD,
// since JSON carries only text. A nil err or an empty message, a caller's
// bug, still makes a valid error reply rather than one EncodeReply
// refuses or a panic in the daemon.
func Fail(err error) Reply {
	if err == nil || err.Error() == "" {
		return Reply{Status: StatusError, Error: "Internal error: no error message"}
	}
	return Reply{Status: StatusError, Error: strings.ToValidUTF8(err.Error(), "\uFFFD")}
}

// DecodeData unmarshals an ok reply's data into v, one of the *Data types.
func (r Reply) DecodeData(v any) error {
	if r.Status != StatusOK || r.Data == nil {
		return fmt.Errorf("decode reply data: a %q reply without data", r.Status)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		return fmt.Errorf("decode reply data: %w", err)
	}
	return nil
}

// wireReply is the reply's JSON shape.
type wireReply struct {
	Status string          `json:"status"`
	Data   json.RawMessage `json:"data,omitempty"`
	Error  *string         `json:"error,omitempty"`
}

// EncodeReply writes r as one reply line, newline included. It refuses a
// reply DecodeReply would not read back the same: a status other than ok
// and error, an error reply without a message or with data, an ok reply
// with a message, data that is not one JSON value, and a line longer than
// MaxLine (the daemon then owes the client a shorter reply, an error
// saying so).
func EncodeReply(r Reply) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	w := wireReply{Status: r.Status, Data: r.Data}
	if r.Status == StatusError {
		w.Error = &r.Error
	}
	if r.Data != nil {
		// Compact, so data arriving pretty-printed still makes one line.
		var buf bytes.Buffer
		if err := json.Compact(&buf, r.Data); err != nil {
			return nil, fmt.Errorf("encode reply: data: %w", err)
		}
		w.Data = buf.Bytes()
	}
	return encodeLine(w, "reply")
}

func (r Reply) check() error {
	switch {
	case r.Status == StatusOK && r.Error != "":
		return fmt.Errorf("encode reply: an ok reply with an error message")
	case r.Status == StatusError && (r.Error == "" || r.Data != nil):
		return fmt.Errorf("encode reply: an error reply needs a message and no data")
	case r.Status != StatusOK && r.Status != StatusError:
		return fmt.Errorf("encode reply: status %q", r.Status)
	case !utf8.ValidString(r.Error):
		return fmt.Errorf("encode reply: the error message is not valid UTF-8")
	case r.Data != nil && (!json.Valid(r.Data) || checkData(r.Data) != nil):
		return fmt.Errorf("encode reply: data is not one strict JSON value")
	}
	return nil
}

// checkData holds a data value to the strict JSON DecodeReply reads,
// wrapping it in an object so checkJSON's top-level rule passes.
func checkData(data json.RawMessage) error {
	return checkJSON(append(append([]byte(`{"d":`), data...), '}'), "invalid reply")
}

// DecodeReply reads one reply line (without its newline), as strictly as
// Decode reads a request. It returns an *Error with a reply.* or json.*
// rule for a line that is not a seed reply.
func DecodeReply(line []byte) (Reply, error) {
	const what = "invalid reply"
	if err := checkJSON(line, what); err != nil {
		return Reply{}, err
	}
	var m members
	_ = json.Unmarshal(line, &m) // an object: checkJSON passed
	var r Reply
	if raw, ok := m["status"]; !ok || json.Unmarshal(raw, &r.Status) != nil || r.Status != StatusOK && r.Status != StatusError {
		return Reply{}, lineErr(what, RuleReply, -1, `"status" must be "ok" or "error"`)
	}
	if raw, ok := m["data"]; ok && !isNull(raw) {
		r.Data = raw
	}
	raw, ok := m["error"]
	switch {
	case ok && isNull(raw):
		ok = false
	case ok && json.Unmarshal(raw, &r.Error) != nil:
		return Reply{}, lineErr(what, RuleReply, -1, `"error" must be a string`)
	}
	if r.Status == StatusError && (!ok || r.Error == "") {
		return Reply{}, lineErr(what, RuleReply, -1, `an error reply without an "error" message`)
	}
	if r.Status == StatusOK {
		r.Error = "" // the seed's ok replies carry none; one sent anyway means nothing
	}
	if r.Status == StatusError {
		r.Data = nil
	}
	return r, nil
}

// OutputData is OUTPUT's reply data. Cursor is 0-based (the seed's
// "0-indexed"); From and To are the range returned, clamped to the lines
// that exist.
type OutputData struct {
	Screen              string `json:"screen"`
	Cursor              Cursor `json:"cursor"`
	Size                Size   `json:"size"`
	From                int    `json:"from"`
	To                  int    `json:"to"`
	ScrollbackAvailable int    `json:"scrollback_available"`
	ScrollbackCapacity  int    `json:"scrollback_capacity"`
}

// Cursor is the cursor's cell relative to the visible screen, 0-based.
type Cursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// StatusData is STATUS's reply data. ExitCode is present once the program
// has exited; Activity only in activity mode, as the seed shows.
type StatusData struct {
	Running  bool `json:"running"`
	ExitCode *int `json:"exit_code,omitempty"`
	// ExitUnobserved (ours), beside an exit code, says why the program's
	// end was not observed (its sandbox's init died without reporting
	// it): the code is then a stand-in (128 + the init's fatal signal),
	// not the program's own status.
	ExitUnobserved string `json:"exit_unobserved,omitempty"`
	Activity       *bool  `json:"activity,omitempty"`
	// Sandbox (ours) says how the program is sandboxed: the enforcement
	// tier of its filesystem, network and terminal ("os", "delivered"),
	// as RECEIPTS gives them. Absent where the program never started.
	Sandbox *SandboxData `json:"sandbox,omitempty"`
}

// SandboxData is STATUS's description of the sandbox.
type SandboxData struct {
	Isolation  string `json:"isolation"`
	Filesystem string `json:"filesystem"`
	Network    string `json:"network"`
	Terminal   string `json:"terminal"`
	// Downgrade, when set, says why the program runs without the os-tier
	// sandbox: `term start --isolation auto` found the os tier
	// unavailable (Isolation is then "none").
	Downgrade string `json:"downgrade,omitempty"`
}

// Summary is the sandbox in one line, as `term status` prints it after
// "Sandbox: ": the isolation and the three tiers, and the downgrade when
// there is one.
func (s SandboxData) Summary() string {
	line := fmt.Sprintf("isolation %s, filesystem %s, network %s, terminal %s", s.Isolation, s.Filesystem, s.Network, s.Terminal)
	if s.Downgrade != "" {
		line += " (downgraded by --isolation auto: " + s.Downgrade + ")"
	}
	return line
}

// ExitLines are the program's end as `term status` and term mcp's text
// print it: "Exit code: N", and "Exit unobserved: WHY" when N is a
// stand-in; "" while the program runs. The reason is printed as given;
// a caller that prints it to a terminal escapes it.
func (s StatusData) ExitLines() string {
	if s.ExitCode == nil {
		return ""
	}
	line := fmt.Sprintf("Exit code: %d\n", *s.ExitCode)
	if s.ExitUnobserved != "" {
		line += fmt.Sprintf("Exit unobserved: %s (%d is not the program's status)\n", s.ExitUnobserved, *s.ExitCode)
	}
	return line
}

// ReceiptsData is RECEIPTS' reply data (ours): one receipt for each of
// the seven constraints, in the transcript receipts' order and words.
type ReceiptsData struct {
	Receipts []ReceiptData `json:"receipts"`
}

// ReceiptData is one constraint's receipt. Status is "applied" (with
// Tier "os" or "delivered") or "unsupported" (with Reason). Mechanism
// names what enforces an os tier.
type ReceiptData struct {
	Constraint string `json:"constraint"`
	Status     string `json:"status"`
	Tier       string `json:"tier,omitempty"`
	Mechanism  string `json:"mechanism,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Table is the receipts as `term receipts` and term mcp's text print
// them: a line a constraint, its tier (or "unsupported"), then what
// enforces it, or why not. A delivered receipt with a reason (a start
// downgraded by --isolation auto) says why it is not os. The columns are
// as wide as their widest value, so "unsupported" does not push its line
// out of line with the rest.
func (d ReceiptsData) Table() string {
	type row struct{ constraint, word, rest string }
	rows := make([]row, 0, len(d.Receipts))
	wc, ww := 0, 0
	for _, r := range d.Receipts {
		x := row{r.Constraint, r.Status, r.Reason}
		switch {
		case r.Tier != "" && r.Reason != "":
			x.word, x.rest = r.Tier, r.Mechanism+" ("+r.Reason+")"
		case r.Tier != "":
			x.word, x.rest = r.Tier, r.Mechanism
		}
		wc, ww = max(wc, len(x.constraint)), max(ww, len(x.word))
		rows = append(rows, x)
	}
	var b strings.Builder
	for _, x := range rows {
		line := fmt.Sprintf("%-*s  %-*s  %s", wc, x.constraint, ww, x.word, x.rest)
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// WaitExitData is WAIT's reply data in the seed's normal mode: the program
// has exited.
type WaitExitData struct {
	ExitCode int `json:"exit_code"`
	// ExitUnobserved (ours): as StatusData's.
	ExitUnobserved string `json:"exit_unobserved,omitempty"`
}

// WaitActivityData is WAIT's reply data in activity mode.
type WaitActivityData struct {
	Activity bool `json:"activity"`
	Exited   bool `json:"exited"`
}

// KillData is KILL's reply data: the signal's name, as SignalName spells it.
type KillData struct {
	SignalSent string `json:"signal_sent"`
}

// StopMessage is STOP's reply message, the seed's.
const StopMessage = "Shutting down"

// StopData is STOP's reply data.
type StopData struct {
	Message string `json:"message"`
}

// DebugData is DEBUG's reply data. Unhandled is oldest first; Dropped
// counts the sequences the ring lost to overflow.
type DebugData struct {
	Unhandled []Unhandled `json:"unhandled"`
	Dropped   int         `json:"dropped"`
	Termios   Termios     `json:"termios"`
}

// MarshalJSON writes an empty Unhandled (and Flags) as [] rather than
// null: the seed's clients iterate the array.
func (d DebugData) MarshalJSON() ([]byte, error) {
	type plain DebugData // without the method, so Marshal does not recurse
	if d.Unhandled == nil {
		d.Unhandled = []Unhandled{}
	}
	if d.Termios.Flags == nil {
		d.Termios.Flags = []string{}
	}
	return json.Marshal(plain(d))
}

// Unhandled is one escape sequence the emulator did not handle.
type Unhandled struct {
	Sequence string `json:"sequence"` // readable: `\e[?25l`
	RawHex   string `json:"raw_hex"`  // the bytes in hex: "1b5b3f32356c"
}

// Termios is the program's terminal settings as DEBUG reports them.
type Termios struct {
	Mode  string            `json:"mode"`  // "cooked" (ICANON) or "raw"
	Flags []string          `json:"flags"` // the flags set: "ECHO", "ISIG", …
	Hex   TermiosHex        `json:"hex"`
	CC    map[string]string `json:"c_cc"` // "VINTR": "^C", …
}

// TermiosHex is the four flag words in hex ("0x0500").
type TermiosHex struct {
	Iflag string `json:"iflag"`
	Oflag string `json:"oflag"`
	Lflag string `json:"lflag"`
	Cflag string `json:"cflag"`
}

// The two termios modes DEBUG reports, by ICANON.
const (
	ModeCooked = "cooked"
	ModeRaw    = "raw"
)
