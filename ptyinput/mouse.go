package ptyinput

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/termverify/termverify-sandbox/input"
)

// ErrMouseNotEnabled is returned by EncodeMouse, wrapped, when the
// terminal would send nothing for the event: the program has not enabled
// mouse reporting, has enabled it with an encoding other than SGR, or its
// mode does not report this kind of event (a release under ?9, motion
// under ?1000). The caller writes nothing and records a diagnostic.
var ErrMouseNotEnabled = errors.New("mouse reporting not enabled for this event")

// ErrInvalidMouse is returned by EncodeMouse, wrapped, for an event that
// breaks the input.mouse rules (see input.CheckPayload) or whose scroll
// is larger than MaxScrollDelta.
var ErrInvalidMouse = errors.New("invalid mouse event")

// MaxScrollDelta bounds |Delta| of a scroll. Each step is one report, so
// the bound keeps one input's write finite (1,000 reports of at most 48
// bytes).
const MaxScrollDelta = 1000

// MouseEvent is one input.mouse: the transcript's fields, strings as in
// the protocol (input.MousePress … and "left", "middle", "right"),
// plus Held, which the protocol does not carry.
type MouseEvent struct {
	Action      string // press, release, move or scroll
	Column, Row int64  // the cell, 0-based from the top left, as in frames and the cursor
	Button      string // press and release: left, middle or right; otherwise empty
	Delta       int64  // scroll: steps, negative up (away from the user), positive down; otherwise 0

	// Held is the button held down during a move, or empty. input.mouse
	// move has no button, but a terminal knows which button is down; the
	// caller tracks it from the preceding press and release inputs. It
	// decides whether ?1002 reports the motion, and the motion's code.
	Held string
}

// SGR (?1006) report codes: the button number, plus 32 for motion and 64
// for the wheel. The protocol carries no modifiers, so the Shift (4), Meta
// (8) and Control (16) bits are never set.
const (
	sgrMotion = 32
	sgrNone   = 3 // motion with no button held
	sgrWheel  = 64
)

// EncodeMouse returns the SGR (?1006) report xterm sends for ev when the
// program has set m: ESC [ < b ; x ; y M for a press, a motion or a wheel
// step (one report per step of Delta), ESC [ < b ; x ; y m for a release,
// with x and y 1-based. The error wraps ErrInvalidMouse or
// ErrMouseNotEnabled; on error no bytes are returned.
func EncodeMouse(ev MouseEvent, m Modes) ([]byte, error) {
	if err := checkMouse(ev); err != nil {
		return nil, fmt.Errorf("encode mouse %s: %w", ev.Action, err)
	}
	if err := reported(ev, m); err != nil {
		return nil, fmt.Errorf("encode mouse %s: %w", ev.Action, err)
	}
	switch ev.Action {
	case input.MousePress:
		return sgrReport(nil, buttonCode(ev.Button), ev, 'M'), nil
	case input.MouseRelease:
		return sgrReport(nil, buttonCode(ev.Button), ev, 'm'), nil
	case input.MouseMove:
		code := sgrNone
		if ev.Held != "" {
			code = buttonCode(ev.Held)
		}
		return sgrReport(nil, sgrMotion+code, ev, 'M'), nil
	}
	// Scroll: X11 delivers a wheel step as a press of button 4 (up) or 5
	// (down), and wheel buttons have no release report.
	code, n := sgrWheel, ev.Delta
	if n > 0 {
		code++
	} else {
		n = -n
	}
	var out []byte
	for range n {
		out = sgrReport(out, code, ev, 'M')
	}
	return out, nil
}

// checkMouse applies the input.mouse rules of TRANSCRIPT-RULES.md, the
// ones transcript enforces when it parses, and the rules for Held.
func checkMouse(ev MouseEvent) error {
	if ev.Column < 0 || ev.Row < 0 {
		return fmt.Errorf("position %d,%d is negative: %w", ev.Column, ev.Row, ErrInvalidMouse)
	}
	if ev.Held != "" && (ev.Action != input.MouseMove || buttonCode(ev.Held) < 0) {
		return fmt.Errorf("held button %q: %w", ev.Held, ErrInvalidMouse)
	}
	switch ev.Action {
	case input.MousePress, input.MouseRelease:
		if buttonCode(ev.Button) < 0 || ev.Delta != 0 {
			return fmt.Errorf("needs button left|middle|right and no delta: %w", ErrInvalidMouse)
		}
	case input.MouseScroll:
		if ev.Delta == 0 || ev.Button != "" {
			return fmt.Errorf("needs a non-zero delta and no button: %w", ErrInvalidMouse)
		}
		if ev.Delta < -MaxScrollDelta || ev.Delta > MaxScrollDelta {
			return fmt.Errorf("delta %d beyond ±%d: %w", ev.Delta, MaxScrollDelta, ErrInvalidMouse)
		}
	case input.MouseMove:
		if ev.Button != "" || ev.Delta != 0 {
			return fmt.Errorf("takes no button and no delta: %w", ErrInvalidMouse)
		}
	default:
		return fmt.Errorf("action %q: %w", ev.Action, ErrInvalidMouse)
	}
	return nil
}

// reported returns nil when the program's modes make xterm send an SGR
// report for ev, and otherwise why not.
func reported(ev MouseEvent, m Modes) error {
	if m.Mouse == MouseOff || m.Mouse > MouseAny {
		return fmt.Errorf("mouse tracking is %v: %w", m.Mouse, ErrMouseNotEnabled)
	}
	if m.MouseEncoding != MouseEncodingSGR {
		return fmt.Errorf("tracking %v uses %v encoding, and only SGR (?1006) is produced: %w",
			m.Mouse, m.MouseEncoding, ErrMouseNotEnabled)
	}
	var ok bool
	switch ev.Action {
	case input.MousePress, input.MouseScroll:
		ok = m.Mouse >= MouseX10
	case input.MouseRelease:
		ok = m.Mouse >= MouseNormal
	case input.MouseMove:
		ok = m.Mouse == MouseAny || m.Mouse == MouseButton && ev.Held != ""
	}
	if !ok {
		return fmt.Errorf("tracking %v does not report this event: %w", m.Mouse, ErrMouseNotEnabled)
	}
	return nil
}

// buttonCode is the X11 button number minus one, or -1.
func buttonCode(b string) int {
	switch b {
	case "left":
		return 0
	case "middle":
		return 1
	case "right":
		return 2
	}
	return -1
}

func sgrReport(dst []byte, code int, ev MouseEvent, final byte) []byte {
	dst = append(dst, esc, '[', '<')
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, ';')
	dst = strconv.AppendUint(dst, uint64(ev.Column)+1, 10)
	dst = append(dst, ';')
	dst = strconv.AppendUint(dst, uint64(ev.Row)+1, 10)
	return append(dst, final)
}
