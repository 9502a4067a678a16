package ptyinput

// Modes are the terminal modes that change which bytes a key or a mouse
// event turns into. A terminal emulator tracks them from what the program
// writes; the zero value is xterm's power-on state (normal cursor and
// keypad keys, no bracketed paste, no mouse reporting). Text is never
// encoded by them: EncodeText takes none.
type Modes struct {
	AppCursor      bool          // DECCKM, set by CSI ? 1 h (terminfo smkx): unmodified cursor keys send SS3
	AppKeypad      bool          // DECKPAM ESC = (reset by DECKPNM ESC >, or DECNKM ?66): keypad keys only
	BracketedPaste bool          // CSI ? 2004 h; tracked so Modes mirrors the emulator: input.text is typed, never pasted
	Mouse          MouseMode     // which mouse events are reported (?9, ?1000, ?1002, ?1003)
	MouseEncoding  MouseEncoding // how reports are encoded (?1005, ?1006, ?1015, ?1016)
	FocusEvents    bool          // CSI ? 1004 h; tracked for completeness, no input reports focus
}

// MouseMode is which mouse events the program asked the terminal to
// report. Setting one mode replaces the others; the values are numbered as
// in package vt, so vt's mode converts with MouseMode(v).
type MouseMode uint8

// The mouse tracking modes, by the DECSET that enables them.
const (
	MouseOff    MouseMode = iota // no reports
	MouseX10                     // ?9: button presses only
	MouseNormal                  // ?1000: presses and releases
	MouseButton                  // ?1002: also motion while a button is held
	MouseAny                     // ?1003: all motion
)

// MouseEncoding is the report format the program selected. Only
// MouseEncodingSGR is produced; under any other encoding EncodeMouse
// returns ErrMouseNotEnabled rather than send a format the program did not
// ask for. Package vt records only ?1006, as its MouseSGR flag, which maps
// to MouseEncodingSGR and otherwise MouseEncodingLegacy; ?1005 and ?1015
// then read as legacy, which is refused all the same.
type MouseEncoding uint8

// The mouse report encodings, by the DECSET that selects them.
const (
	MouseEncodingLegacy    MouseEncoding = iota // default: CSI M and three bytes, coordinates ≤ 223
	MouseEncodingUTF8                           // ?1005: CSI M with UTF-8 coordinates
	MouseEncodingSGR                            // ?1006: CSI < b ; x ; y M or m
	MouseEncodingURXVT                          // ?1015: CSI b ; x ; y M
	MouseEncodingSGRPixels                      // ?1016: SGR with pixel coordinates
)

// String names the mode by the DECSET that enables it.
func (m MouseMode) String() string {
	switch m {
	case MouseOff:
		return "off"
	case MouseX10:
		return "?9"
	case MouseNormal:
		return "?1000"
	case MouseButton:
		return "?1002"
	case MouseAny:
		return "?1003"
	}
	return "unknown"
}

// String names the encoding by the DECSET that selects it.
func (e MouseEncoding) String() string {
	switch e {
	case MouseEncodingLegacy:
		return "legacy"
	case MouseEncodingUTF8:
		return "?1005"
	case MouseEncodingSGR:
		return "?1006"
	case MouseEncodingURXVT:
		return "?1015"
	case MouseEncodingSGRPixels:
		return "?1016"
	}
	return "unknown"
}
