package asciicast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/ptyinput"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// The versions Encode writes.
const (
	V2 = 2 // asciicast v2: absolute times; what every player reads
	V3 = 3 // asciicast v3: intervals, a term object, the "x" exit event
)

// Pace bounds and default: the logical time between two epochs.
const (
	DefaultPace = time.Second
	MinPace     = time.Millisecond
	MaxPace     = time.Hour
)

// Term is the TERM a recording names: what PTY mode gives the program
// (docs/PTY.md) and what a control/v1 redraw is written for.
const Term = "xterm-256color"

// The event codes, as both versions define them.
const (
	CodeOutput = "o"
	CodeInput  = "i"
	CodeMarker = "m"
	CodeResize = "r"
	CodeExit   = "x" // v3 only
)

// Options choose the version and the pace.
type Options struct {
	Version int           // V2 or V3; 0 is V2
	Pace    time.Duration // time between epochs; 0 is DefaultPace
}

// Header is what the first line of a recording says.
type Header struct {
	Version       int
	Columns, Rows int64
	Term          string
	Title         string // the run id
}

// Event is one event of the stream. At is its logical time from the
// start, in microseconds (v2 writes it, v3 the interval from the event
// before).
type Event struct {
	At   int64
	Code string
	Data string
}

// Cast is a recording: its header and its events in order.
type Cast struct {
	Header Header
	Events []Event
}

// NoFramesError is a control/v1 transcript none of whose observations
// carries a frame: there is no screen to record.
type NoFramesError struct{ Observations int }

func (e *NoFramesError) Error() string {
	return fmt.Sprintf("the transcript was recorded over control/v1 and none of its %d observations carries a frame: "+
		"there is no screen to export (a PTY-mode transcript, or a control/v1 subject that reports frames, can be exported)", e.Observations)
}

// Build turns t into a recording. A PTY-mode transcript gives its
// terminal stream; a control/v1 one its frames as redraws, or a
// *NoFramesError when it has none.
func Build(t *transcript.Transcript, o Options) (*Cast, error) {
	if o.Version == 0 {
		o.Version = V2
	}
	if o.Version != V2 && o.Version != V3 {
		return nil, fmt.Errorf("asciicast version %d: want %d or %d", o.Version, V2, V3)
	}
	if o.Pace == 0 {
		o.Pace = DefaultPace
	}
	if o.Pace < MinPace || o.Pace > MaxPace {
		return nil, fmt.Errorf("pace %v: want from %v to %v", o.Pace, MinPace, MaxPace)
	}
	if len(t.Records) == 0 {
		return nil, errors.New("the transcript has no records")
	}
	cfg := t.Config()
	c := &Cast{Header: Header{Version: o.Version, Columns: cfg.Terminal.Columns, Rows: cfg.Terminal.Rows, Term: Term, Title: t.RunID}}
	b := builder{cast: c, version: o.Version, pace: o.Pace.Microseconds(), cols: cfg.Terminal.Columns, rows: cfg.Terminal.Rows}
	var err error
	if t.PTYMode() {
		err = b.pty(t)
	} else {
		err = b.control(t)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Encode writes t's recording (Build) to w.
func Encode(w io.Writer, t *transcript.Transcript, o Options) error {
	c, err := Build(t, o)
	if err != nil {
		return err
	}
	_, err = c.WriteTo(w)
	return err
}

// builder walks a transcript's records and appends events.
type builder struct {
	cast       *Cast
	version    int
	pace       int64 // µs
	cols, rows int64
	epoch      int   // the index of the next observation
	last       int64 // the time of the last event
}

// inputAt is when the inputs before observation b.epoch happen: half a
// pace before it.
func (b *builder) inputAt() int64 { return max(int64(b.epoch)*b.pace-b.pace/2, 0) }

func (b *builder) add(at int64, code, data string) {
	at = max(at, b.last)
	b.last = at
	b.cast.Events = append(b.cast.Events, Event{At: at, Code: code, Data: data})
}

func (b *builder) resize(cols, rows int64) {
	b.cols, b.rows = cols, rows
	b.add(b.inputAt(), CodeResize, strconv.FormatInt(cols, 10)+"x"+strconv.FormatInt(rows, 10))
}

// marker closes an observation: its "m" event, named by epoch and seq.
func (b *builder) marker(seq int) {
	b.add(int64(b.epoch)*b.pace, CodeMarker, fmt.Sprintf("epoch %d (seq %d)", b.epoch, seq))
	b.epoch++
}

// ending adds v3's "x": run.finished's exit, or else the exit the last
// observation saw.
func (b *builder) ending(t *transcript.Transcript, lastObs *transcript.Observation) {
	if b.version != V3 {
		return
	}
	if e, ok := t.Records[len(t.Records)-1].Exit(); ok {
		b.add(b.last, CodeExit, strconv.Itoa(status(e)))
	} else if lastObs != nil && lastObs.Process != nil && lastObs.Process.Exited {
		b.add(b.last, CodeExit, strconv.Itoa(status(lastObs.Process.Exit)))
	}
}

// status is an exit as a number: the code, or 128 + the signal's number
// as a shell reports it.
func status(e transcript.Exit) int {
	if e.Kind == transcript.ExitSignal {
		if n := unix.SignalNum("SIG" + e.Signal); n != 0 {
			return 128 + int(n)
		}
		return 128
	}
	return int(e.Code)
}

// pty records a PTY-mode run's terminal stream. The bytes of a key or a
// mouse input depend on the modes the program set, so an emulator is fed
// the output as it goes, exactly as the driver's was.
func (b *builder) pty(t *transcript.Transcript) error {
	emu := vt.New(vt.Config{Cols: int(b.cols), Rows: int(b.rows)})
	held := ""
	var lastObs *transcript.Observation
	for i := range t.Records {
		r := &t.Records[i]
		switch {
		case r.Kind == transcript.KindObservation:
			o, _ := r.Observation()
			at := int64(b.epoch) * b.pace
			for _, chunk := range outputChunks(o) {
				b.add(at, CodeOutput, chunk)
				_, _ = emu.WriteString(chunk)
			}
			_ = emu.Replies() // the driver answered them; the recording is the output
			b.marker(r.Seq)
			lastObs = &o
		case strings.HasPrefix(r.Kind, "input."):
			in, err := input.DecodeRecord(r.Kind, r.Payload())
			if err != nil {
				return fmt.Errorf("record %d (%s): %w", r.Seq, r.Kind, err)
			}
			data, err := ptyBytes(in, emu, &held)
			if err != nil {
				return fmt.Errorf("record %d (%s): %w", r.Seq, r.Kind, err)
			}
			if rs, ok := in.(input.Resize); ok {
				emu.Resize(int(rs.Columns), int(rs.Rows))
				b.resize(rs.Columns, rs.Rows)
				continue
			}
			if len(data) > 0 {
				b.add(b.inputAt(), CodeInput, string(data))
			}
		}
	}
	b.ending(t, lastObs)
	return nil
}

// ptyBytes is what PTY mode writes to the terminal for in, in the modes
// emu shows (supervisor's ptyConn.send): a text's bytes, a key's and a
// mouse report's by the modes; nothing for the other kinds, and nothing
// for a mouse event the program does not report.
func ptyBytes(in input.Input, emu *vt.Terminal, held *string) ([]byte, error) {
	modes := ptydrive.ModesOf(emu) // the driver's own reading of the modes
	switch v := in.(type) {
	case input.Text:
		return ptyinput.EncodeText(v.Text), nil
	case input.Key:
		return ptyinput.EncodeKey(v.Keys, modes)
	case input.Mouse:
		ev := ptyinput.MouseEvent{Action: v.Action, Column: v.Column, Row: v.Row, Button: v.Button, Delta: v.Delta}
		if v.Action == input.MouseMove {
			ev.Held = *held
		}
		switch v.Action {
		case input.MousePress:
			*held = v.Button
		case input.MouseRelease:
			*held = ""
		}
		data, err := ptyinput.EncodeMouse(ev, modes)
		if errors.Is(err, ptyinput.ErrMouseNotEnabled) {
			return nil, nil
		}
		return data, err
	}
	return nil, nil
}

// outputChunks is an observation's terminal.output chunks, in order.
func outputChunks(o transcript.Observation) []string {
	var out []string
	for _, e := range o.Events {
		if e.Type != "terminal.output" {
			continue
		}
		if c, ok := e.Data.Get("chunk"); ok && c != nil && c.Str != "" {
			out = append(out, c.Str)
		}
	}
	return out
}

// control records a control/v1 run's frames as redraws. Its inputs are
// messages to the subject, not bytes on a terminal: only a resize is
// recorded ("r").
func (b *builder) control(t *transcript.Transcript) error {
	observations, frames := 0, 0
	var lastObs *transcript.Observation
	for i := range t.Records {
		r := &t.Records[i]
		switch r.Kind {
		case transcript.KindObservation:
			o, _ := r.Observation()
			observations++
			if o.Frame != nil {
				frames++
				if o.Frame.Columns != b.cols || o.Frame.Rows != b.rows {
					b.cols, b.rows = o.Frame.Columns, o.Frame.Rows
					b.add(int64(b.epoch)*b.pace, CodeResize, strconv.FormatInt(b.cols, 10)+"x"+strconv.FormatInt(b.rows, 10))
				}
				b.add(int64(b.epoch)*b.pace, CodeOutput, Redraw(o.Frame, o.UI.Cursor))
			}
			b.marker(r.Seq)
			lastObs = &o
		case transcript.KindInputResize:
			in, err := input.DecodeRecord(r.Kind, r.Payload())
			if err != nil {
				return fmt.Errorf("record %d (%s): %w", r.Seq, r.Kind, err)
			}
			rs := in.(input.Resize)
			b.resize(rs.Columns, rs.Rows)
		}
	}
	if frames == 0 {
		return &NoFramesError{Observations: observations}
	}
	b.ending(t, lastObs)
	return nil
}

// Redraw is the output that draws frame on a terminal of its size: wrap
// off (a line longer than the screen is clipped, not wrapped), home,
// clear, each line at its row, then the cursor placed and shown or
// hidden. A frame line's control characters, which a screen's text
// cannot hold, are drawn as U+FFFD so that no line can move the cursor
// or change a mode.
func Redraw(f *transcript.Frame, c transcript.Cursor) string {
	var s strings.Builder
	s.WriteString("\x1b[?7l\x1b[H\x1b[2J")
	for i, l := range f.Lines {
		if int64(i) >= f.Rows {
			break
		}
		fmt.Fprintf(&s, "\x1b[%d;1H", i+1)
		for _, r := range l {
			if unicode.IsControl(r) {
				r = unicode.ReplacementChar
			}
			s.WriteRune(r)
		}
	}
	fmt.Fprintf(&s, "\x1b[%d;%dH", c.Row+1, c.Column+1)
	if c.Visible {
		s.WriteString("\x1b[?25h")
	} else {
		s.WriteString("\x1b[?25l")
	}
	return s.String()
}

// WriteTo writes the recording: the header line, then one line per
// event, each a JSON array [time, code, data]; times in seconds with six
// decimals (absolute in v2, the interval from the event before in v3).
func (c *Cast) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var err error
	switch c.Header.Version {
	case V3:
		err = enc.Encode(struct {
			Version int `json:"version"`
			Term    struct {
				Cols int64  `json:"cols"`
				Rows int64  `json:"rows"`
				Type string `json:"type"`
			} `json:"term"`
			Title string `json:"title"`
		}{Version: V3, Term: struct {
			Cols int64  `json:"cols"`
			Rows int64  `json:"rows"`
			Type string `json:"type"`
		}{c.Header.Columns, c.Header.Rows, c.Header.Term}, Title: c.Header.Title})
	default:
		err = enc.Encode(struct {
			Version int               `json:"version"`
			Width   int64             `json:"width"`
			Height  int64             `json:"height"`
			Title   string            `json:"title"`
			Env     map[string]string `json:"env"`
		}{V2, c.Header.Columns, c.Header.Rows, c.Header.Title, map[string]string{"TERM": c.Header.Term}})
	}
	if err != nil {
		return 0, fmt.Errorf("asciicast header: %w", err)
	}
	prev := int64(0)
	var str bytes.Buffer
	senc := json.NewEncoder(&str)
	senc.SetEscapeHTML(false)
	for _, e := range c.Events {
		at := e.At
		if c.Header.Version == V3 {
			at, prev = e.At-prev, e.At
		}
		str.Reset()
		if err := senc.Encode(e.Data); err != nil {
			return 0, fmt.Errorf("asciicast event: %w", err)
		}
		fmt.Fprintf(&buf, "[%d.%06d, %q, %s]\n", at/1e6, at%1e6, e.Code, bytes.TrimSuffix(str.Bytes(), []byte("\n")))
	}
	n, err := w.Write(buf.Bytes())
	return int64(n), err
}
