package supervisor

import "github.com/termverify/termverify-sandbox/input"

// Mode is the way a run drives its subject.
type Mode int

// The two modes.
const (
	// ModeControl speaks termverify.control/v1 with the subject on its
	// stdin and stdout.
	ModeControl Mode = iota
	// ModePTY runs the subject as an unmodified terminal program on a
	// pseudoterminal of the sandbox's own (docs/PTY.md).
	ModePTY
)

// Mode returns the mode r runs in: ModePTY when r.PTY is set.
func (r *Request) Mode() Mode {
	if r.PTY {
		return ModePTY
	}
	return ModeControl
}

// InputKinds are the input kinds a subject driven in mode m can be given:
// termverify.control/v1 carries text, keys, resizes, the clock and stop;
// a terminal (ModePTY) also takes mouse reports and a clipboard to answer
// OSC 52 queries from.
func (m Mode) InputKinds() []string {
	k := []string{input.KindText, input.KindKey, input.KindResize, input.KindClock, input.KindStop}
	if m == ModePTY {
		k = append(k, input.KindMouse, input.KindClipboard)
	}
	return k
}
