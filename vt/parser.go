package vt

import "unicode/utf8"

// pstate is a state of the DEC/ANSI parser, after Paul Williams' state
// diagram of the VT500 parser (vt100.net/emu/dec_ansi_parser), with two
// changes for today's programs: in the ground state bytes from 0x80 are
// UTF-8 (so 8-bit C1 controls are not recognised, as in xterm and tmux in
// UTF-8 mode), and ':' separates sub-parameters in a CSI sequence
// (SGR 38:2::r:g:b) instead of sending it to csi_ignore.
type pstate uint8

const (
	stGround pstate = iota
	stEscape
	stEscInter
	stCSIEntry
	stCSIParam
	stCSIInter
	stCSIIgnore
	stDCSEntry
	stDCSParam
	stDCSInter
	stDCSPass
	stDCSIgnore
	stOSC
	stString // sos_pm_apc_string
)

// maxParams bounds the parameters of one sequence; more are dropped.
const maxParams = 32

// parser is the state the byte-by-byte parser keeps between Writes.
type parser struct {
	state   pstate
	params  [maxParams]int32
	colon   uint32 // bit i: params[i] is followed by ':' (sub-parameter)
	nparams int
	prefix  byte // private marker: one of < = > ?
	inter   byte // first intermediate byte
	ninter  int
	// seq holds the first bytes of the sequence being parsed, for
	// diagnostics.
	seq  [32]byte
	nseq int
	// osc collects an OSC string, up to maxString bytes.
	osc     []byte
	oscLong bool
	// A UTF-8 sequence split across bytes (or Writes).
	ubuf [4]byte
	un   int
	uend int
}

// feed runs the parser over p. The fast path handles runs of printable
// ASCII in the ground state, which is most of what programs write.
func (t *Terminal) feed(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		if t.state == stGround && t.un == 0 {
			if b >= 0x20 && b < 0x7f {
				j := i + 1
				for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
					j++
				}
				t.printASCII(p[i:j])
				i = j
				continue
			}
			if b >= 0x80 {
				// A whole UTF-8 sequence in hand is decoded at once.
				if r, size := utf8.DecodeRune(p[i:]); r != utf8.RuneError || size > 1 {
					t.printRune(r)
					i += size
					continue
				}
			}
		}
		t.step(b)
		i++
	}
}

func (t *Terminal) record(b byte) {
	if t.nseq < len(t.seq) {
		t.seq[t.nseq] = b
		t.nseq++
	}
}

func (t *Terminal) clearParams() {
	t.params[0] = 0
	t.nparams = 0
	t.colon = 0
	t.prefix = 0
	t.inter = 0
	t.ninter = 0
}

// step advances the parser by one byte.
func (t *Terminal) step(b byte) {
	// Transitions from any state.
	switch b {
	case 0x18, 0x1a: // CAN, SUB: cancel the sequence
		t.abortUTF8()
		t.endString()
		t.state = stGround
		return
	case 0x1b:
		t.abortUTF8()
		t.endString()
		t.state = stEscape
		t.nseq = 0
		t.record(b)
		t.clearParams()
		return
	}
	switch t.state {
	case stGround:
		switch {
		case b < 0x20:
			t.abortUTF8()
			t.execute(b)
		case b == 0x7f:
			t.abortUTF8()
		case b >= 0x80:
			t.utf8Byte(b)
		default:
			t.abortUTF8()
			t.printRune(rune(b))
		}
	case stEscape:
		t.record(b)
		switch {
		case b < 0x20:
			t.execute(b)
		case b < 0x30:
			t.collect(b)
			t.state = stEscInter
		case b == '[':
			t.state = stCSIEntry
		case b == ']':
			t.osc = t.osc[:0]
			t.oscLong = false
			t.state = stOSC
		case b == 'P':
			t.state = stDCSEntry
		case b == 'X' || b == '^' || b == '_':
			t.state = stString
		case b < 0x7f:
			t.state = stGround
			t.escDispatch(b)
		case b == 0x7f:
		default:
			t.diagnose(DiagMalformed, t.seq[:t.nseq])
			t.state = stGround
		}
	case stEscInter:
		t.record(b)
		switch {
		case b < 0x20:
			t.execute(b)
		case b < 0x30:
			t.collect(b)
		case b < 0x7f:
			t.state = stGround
			t.escDispatch(b)
		case b == 0x7f:
		default:
			t.diagnose(DiagMalformed, t.seq[:t.nseq])
			t.state = stGround
		}
	case stCSIEntry, stCSIParam:
		t.record(b)
		switch {
		case b < 0x20:
			t.execute(b)
		case b >= '0' && b <= ';' || b == ':':
			t.param(b)
			t.state = stCSIParam
		case b >= '<' && b <= '?':
			if t.state == stCSIEntry {
				t.prefix = b
				t.state = stCSIParam
			} else {
				t.state = stCSIIgnore
			}
		case b < 0x30:
			t.collect(b)
			t.state = stCSIInter
		case b < 0x7f:
			t.state = stGround
			t.csiDispatch(b)
		case b == 0x7f:
		default:
			t.state = stCSIIgnore
		}
	case stCSIInter:
		t.record(b)
		switch {
		case b < 0x20:
			t.execute(b)
		case b < 0x30:
			t.collect(b)
		case b < 0x40:
			t.state = stCSIIgnore
		case b < 0x7f:
			t.state = stGround
			t.csiDispatch(b)
		case b == 0x7f:
		default:
			t.state = stCSIIgnore
		}
	case stCSIIgnore:
		t.record(b)
		switch {
		case b < 0x20:
			t.execute(b)
		case b >= 0x40 && b < 0x7f:
			t.state = stGround
			t.diagnose(DiagMalformed, t.seq[:t.nseq])
		}
	case stDCSEntry, stDCSParam:
		t.record(b)
		switch {
		case b < 0x20 || b == 0x7f:
		case b >= '0' && b <= ';' || b == ':':
			t.param(b)
			t.state = stDCSParam
		case b >= '<' && b <= '?':
			if t.state == stDCSEntry {
				t.prefix = b
				t.state = stDCSParam
			} else {
				t.state = stDCSIgnore
			}
		case b < 0x30:
			t.collect(b)
			t.state = stDCSInter
		case b < 0x7f:
			t.state = stDCSPass
		default:
			t.state = stDCSIgnore
		}
	case stDCSInter:
		t.record(b)
		switch {
		case b < 0x20 || b == 0x7f:
		case b < 0x30:
			t.collect(b)
		case b < 0x40:
			t.state = stDCSIgnore
		case b < 0x7f:
			t.state = stDCSPass
		default:
			t.state = stDCSIgnore
		}
	case stDCSPass, stDCSIgnore, stString:
		// No DCS, SOS, PM or APC string is implemented: the data is
		// swallowed up to ST (or CAN/SUB), keeping its start for the
		// diagnostic endString records.
		t.record(b)
	case stOSC:
		switch {
		case b == 0x07: // BEL ends an OSC string, as in xterm
			t.endString()
			t.state = stGround
		case b < 0x20:
		default:
			t.record(b)
			if len(t.osc) < maxString {
				t.osc = append(t.osc, b)
			} else {
				t.oscLong = true
			}
		}
	}
}

// endString finishes a string state left by ESC, BEL, CAN or SUB: an OSC
// string is dispatched, a DCS, SOS, PM or APC string diagnosed.
func (t *Terminal) endString() {
	switch t.state {
	case stOSC:
		t.oscDispatch()
	case stDCSEntry, stDCSParam, stDCSInter, stDCSPass, stDCSIgnore:
		t.diagnose(DiagDCS, t.seq[:t.nseq])
	case stString:
		t.diagnose(DiagString, t.seq[:t.nseq])
	}
}

func (t *Terminal) collect(b byte) {
	if t.ninter == 0 {
		t.inter = b
	}
	t.ninter++
}

// param adds a parameter byte: a digit, or ';' or ':' ending a parameter.
// Values stop growing at 65535, which is more than any screen.
func (t *Terminal) param(b byte) {
	if t.nparams == 0 {
		t.nparams = 1
		t.params[0] = 0
	}
	if b == ';' || b == ':' {
		if t.nparams == maxParams {
			t.nparams = maxParams + 1 // too many: the rest are dropped
		}
		if t.nparams > maxParams {
			return
		}
		if b == ':' {
			t.colon |= 1 << (t.nparams - 1)
		}
		t.params[t.nparams] = 0
		t.nparams++
		return
	}
	if t.nparams > maxParams {
		return
	}
	p := &t.params[t.nparams-1]
	*p = min(*p*10+int32(b-'0'), 65535)
}

// arg returns parameter i, or def when it is missing or 0.
func (t *Terminal) arg(i, def int) int {
	if i < t.numParams() && t.params[i] != 0 {
		return int(t.params[i])
	}
	return def
}

func (t *Terminal) numParams() int { return min(t.nparams, maxParams) }

// utf8Byte takes a byte from 0x80 of a UTF-8 sequence split across
// Writes (whole sequences are decoded in feed). Bytes that are not UTF-8
// are dropped with a diagnostic, as tmux drops them.
func (t *Terminal) utf8Byte(b byte) {
	if t.un == 0 {
		switch {
		case b >= 0xc2 && b <= 0xdf:
			t.uend = 2
		case b >= 0xe0 && b <= 0xef:
			t.uend = 3
		case b >= 0xf0 && b <= 0xf4:
			t.uend = 4
		default:
			t.diagnose(DiagInvalidUTF8, []byte{b})
			return
		}
		t.ubuf[0] = b
		t.un = 1
		return
	}
	if b&0xc0 != 0x80 {
		t.abortUTF8()
		t.utf8Byte(b)
		return
	}
	t.ubuf[t.un] = b
	t.un++
	if t.un < t.uend {
		return
	}
	r, size := utf8.DecodeRune(t.ubuf[:t.un])
	if r == utf8.RuneError && size <= 1 {
		t.abortUTF8()
		return
	}
	t.un = 0
	t.printRune(r)
}

// abortUTF8 drops an unfinished UTF-8 sequence.
func (t *Terminal) abortUTF8() {
	if t.un > 0 {
		t.diagnose(DiagInvalidUTF8, t.ubuf[:t.un])
		t.un = 0
	}
}
