package ptyinput_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

func sgr(mode ptyinput.MouseMode) ptyinput.Modes {
	return ptyinput.Modes{Mouse: mode, MouseEncoding: ptyinput.MouseEncodingSGR}
}

func press(b string, col, row int64) ptyinput.MouseEvent {
	return ptyinput.MouseEvent{Action: input.MousePress, Button: b, Column: col, Row: row}
}

func release(b string, col, row int64) ptyinput.MouseEvent {
	return ptyinput.MouseEvent{Action: input.MouseRelease, Button: b, Column: col, Row: row}
}

func move(held string, col, row int64) ptyinput.MouseEvent {
	return ptyinput.MouseEvent{Action: input.MouseMove, Held: held, Column: col, Row: row}
}

func scroll(delta, col, row int64) ptyinput.MouseEvent {
	return ptyinput.MouseEvent{Action: input.MouseScroll, Delta: delta, Column: col, Row: row}
}

func TestEncodeMouse(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   ptyinput.MouseEvent
		m    ptyinput.Modes
		want string
	}{
		{"left press, 1-based", press("left", 0, 0), sgr(ptyinput.MouseNormal), "\x1b[<0;1;1M"},
		{"middle press", press("middle", 4, 2), sgr(ptyinput.MouseNormal), "\x1b[<1;5;3M"},
		{"right release", release("right", 9, 4), sgr(ptyinput.MouseNormal), "\x1b[<2;10;5m"},
		{"wide screen, no 223 limit", press("left", 300, 1000), sgr(ptyinput.MouseNormal), "\x1b[<0;301;1001M"},
		{"largest position", press("left", math.MaxInt64, 0), sgr(ptyinput.MouseNormal), "\x1b[<0;9223372036854775808;1M"},
		{"scroll up", scroll(-1, 3, 3), sgr(ptyinput.MouseNormal), "\x1b[<64;4;4M"},
		{"scroll down twice", scroll(2, 0, 1), sgr(ptyinput.MouseNormal), "\x1b[<65;1;2M\x1b[<65;1;2M"},
		{"X10 press", press("left", 1, 1), sgr(ptyinput.MouseX10), "\x1b[<0;2;2M"},
		{"X10 wheel", scroll(1, 1, 1), sgr(ptyinput.MouseX10), "\x1b[<65;2;2M"},
		{"drag under ?1002", move("left", 7, 0), sgr(ptyinput.MouseButton), "\x1b[<32;8;1M"},
		{"drag under ?1003", move("right", 7, 0), sgr(ptyinput.MouseAny), "\x1b[<34;8;1M"},
		{"hover under ?1003", move("", 7, 0), sgr(ptyinput.MouseAny), "\x1b[<35;8;1M"},
		{"release under ?1003", release("left", 0, 0), sgr(ptyinput.MouseAny), "\x1b[<0;1;1m"},
		{"other modes ignored", press("left", 0, 0), ptyinput.Modes{
			Mouse: ptyinput.MouseNormal, MouseEncoding: ptyinput.MouseEncodingSGR,
			AppCursor: true, AppKeypad: true, BracketedPaste: true, FocusEvents: true,
		}, "\x1b[<0;1;1M"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ptyinput.EncodeMouse(tc.ev, tc.m)
			if err != nil || string(got) != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestEncodeMouseMaxScroll(t *testing.T) {
	got, err := ptyinput.EncodeMouse(scroll(-ptyinput.MaxScrollDelta, 0, 0), sgr(ptyinput.MouseNormal))
	if err != nil || strings.Count(string(got), "\x1b[<64;1;1M") != ptyinput.MaxScrollDelta || len(got) != ptyinput.MaxScrollDelta*len("\x1b[<64;1;1M") {
		t.Errorf("got %d bytes, %v", len(got), err)
	}
}

func TestEncodeMouseNotEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   ptyinput.MouseEvent
		m    ptyinput.Modes
	}{
		{"tracking off", press("left", 0, 0), ptyinput.Modes{}},
		{"SGR without tracking", press("left", 0, 0), sgr(ptyinput.MouseOff)},
		{"legacy encoding", press("left", 0, 0), ptyinput.Modes{Mouse: ptyinput.MouseNormal}},
		{"UTF-8 encoding", press("left", 0, 0), ptyinput.Modes{Mouse: ptyinput.MouseNormal, MouseEncoding: ptyinput.MouseEncodingUTF8}},
		{"urxvt encoding", press("left", 0, 0), ptyinput.Modes{Mouse: ptyinput.MouseAny, MouseEncoding: ptyinput.MouseEncodingURXVT}},
		{"SGR pixels", press("left", 0, 0), ptyinput.Modes{Mouse: ptyinput.MouseAny, MouseEncoding: ptyinput.MouseEncodingSGRPixels}},
		{"unknown tracking mode", press("left", 0, 0), sgr(ptyinput.MouseAny + 1)},
		{"X10 reports no release", release("left", 0, 0), sgr(ptyinput.MouseX10)},
		{"X10 reports no motion", move("left", 0, 0), sgr(ptyinput.MouseX10)},
		{"?1000 reports no motion", move("left", 0, 0), sgr(ptyinput.MouseNormal)},
		{"?1002 reports no hover", move("", 0, 0), sgr(ptyinput.MouseButton)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ptyinput.EncodeMouse(tc.ev, tc.m)
			if !errors.Is(err, ptyinput.ErrMouseNotEnabled) || errors.Is(err, ptyinput.ErrInvalidMouse) || got != nil {
				t.Errorf("got %q, %v; want ErrMouseNotEnabled", got, err)
			}
		})
	}
}

// TestEncodeMouseInvalid mirrors the input.mouse rules of
// TRANSCRIPT-RULES.md; an invalid event is refused whatever the modes.
func TestEncodeMouseInvalid(t *testing.T) {
	pressDelta := press("left", 0, 0)
	pressDelta.Delta = 1
	scrollButton := scroll(1, 0, 0)
	scrollButton.Button = "left"
	moveButton := move("", 0, 0)
	moveButton.Button = "left"
	moveDelta := move("", 0, 0)
	moveDelta.Delta = 1
	pressHeld := press("left", 0, 0)
	pressHeld.Held = "left"
	for _, tc := range []struct {
		name string
		ev   ptyinput.MouseEvent
	}{
		{"unknown action", ptyinput.MouseEvent{Action: "drag"}},
		{"empty action", ptyinput.MouseEvent{}},
		{"negative column", press("left", -1, 0)},
		{"negative row", press("left", 0, -1)},
		{"press without button", press("", 0, 0)},
		{"press with unknown button", press("primary", 0, 0)},
		{"release without button", release("", 0, 0)},
		{"press with delta", pressDelta},
		{"scroll without delta", scroll(0, 0, 0)},
		{"scroll with button", scrollButton},
		{"scroll beyond the bound", scroll(ptyinput.MaxScrollDelta+1, 0, 0)},
		{"scroll beyond the bound up", scroll(math.MinInt64, 0, 0)},
		{"move with button", moveButton},
		{"move with delta", moveDelta},
		{"move held unknown", move("primary", 0, 0)},
		{"held on a press", pressHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range []ptyinput.Modes{{}, sgr(ptyinput.MouseAny)} {
				got, err := ptyinput.EncodeMouse(tc.ev, m)
				if !errors.Is(err, ptyinput.ErrInvalidMouse) || errors.Is(err, ptyinput.ErrMouseNotEnabled) || got != nil {
					t.Errorf("modes %+v: got %q, %v; want ErrInvalidMouse", m, got, err)
				}
			}
		})
	}
}

// TestMouseEventFromTranscript: a decoded input.mouse carries over field
// by field.
func TestMouseEventFromTranscript(t *testing.T) {
	in := input.Mouse{Action: input.MouseRelease, Column: 2, Row: 3, Button: "middle"}
	ev := ptyinput.MouseEvent{Action: in.Action, Column: in.Column, Row: in.Row, Button: in.Button, Delta: in.Delta}
	got, err := ptyinput.EncodeMouse(ev, sgr(ptyinput.MouseNormal))
	if err != nil || string(got) != "\x1b[<1;3;4m" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestModeStrings(t *testing.T) {
	for v, want := range map[ptyinput.MouseMode]string{
		ptyinput.MouseOff: "off", ptyinput.MouseX10: "?9", ptyinput.MouseNormal: "?1000",
		ptyinput.MouseButton: "?1002", ptyinput.MouseAny: "?1003", 9: "unknown",
	} {
		if v.String() != want {
			t.Errorf("MouseMode(%d) = %q, want %q", v, v.String(), want)
		}
	}
	for v, want := range map[ptyinput.MouseEncoding]string{
		ptyinput.MouseEncodingLegacy: "legacy", ptyinput.MouseEncodingUTF8: "?1005", ptyinput.MouseEncodingSGR: "?1006",
		ptyinput.MouseEncodingURXVT: "?1015", ptyinput.MouseEncodingSGRPixels: "?1016", 9: "unknown",
	} {
		if v.String() != want {
			t.Errorf("MouseEncoding(%d) = %q, want %q", v, v.String(), want)
		}
	}
}
