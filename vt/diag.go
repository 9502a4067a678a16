package vt

import (
	"fmt"
	"strings"
)

// DiagKind says what a diagnostic is about.
type DiagKind uint8

// The kinds of diagnostics. Each is something the terminal did not
// understand or chose not to do; the screen is never corrupted by it.
const (
	DiagUnknownEscape DiagKind = iota + 1 // ESC sequence not implemented
	DiagUnknownCSI                        // CSI sequence not implemented
	DiagUnknownMode                       // SM/RM or DECSET/DECRST of a mode not implemented
	DiagUnknownOSC                        // OSC command not implemented
	DiagDCS                               // DCS string, swallowed
	DiagString                            // SOS, PM or APC string, swallowed
	DiagMalformed                         // sequence with a byte out of place, ignored (CSI ignore state)
	DiagInvalidUTF8                       // bytes that are not UTF-8, dropped (as tmux does)
	DiagUndrawable                        // a rune wcwidth calls unprintable, dropped (as tmux does)
	DiagTooLong                           // OSC string or sequence over its bound, cut
	DiagReplyOverflow                     // reply dropped: too many waiting for Replies
	DiagCharset                           // character set not implemented, ASCII used
	numDiagKinds
)

var diagNames = [numDiagKinds]string{
	DiagUnknownEscape: "unknown-escape",
	DiagUnknownCSI:    "unknown-csi",
	DiagUnknownMode:   "unknown-mode",
	DiagUnknownOSC:    "unknown-osc",
	DiagDCS:           "dcs-ignored",
	DiagString:        "string-ignored",
	DiagMalformed:     "malformed",
	DiagInvalidUTF8:   "invalid-utf8",
	DiagUndrawable:    "undrawable",
	DiagTooLong:       "too-long",
	DiagReplyOverflow: "reply-overflow",
	DiagCharset:       "unknown-charset",
}

// String returns the kind's stable name, e.g. "unknown-csi".
func (k DiagKind) String() string {
	if k > 0 && k < numDiagKinds {
		return diagNames[k]
	}
	return fmt.Sprintf("DiagKind(%d)", uint8(k))
}

// Diagnostic is one thing the terminal did not understand.
type Diagnostic struct {
	Kind DiagKind
	// Seq is the start of the offending bytes (at most 32), beginning
	// with ESC for a sequence.
	Seq []byte
}

// String renders the diagnostic on one line, with bytes that are not
// printable ASCII escaped (ESC as \e): `unknown-csi \e[?1005h`.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Kind.String())
	b.WriteByte(' ')
	for _, c := range d.Seq {
		switch {
		case c == 0x1b:
			b.WriteString(`\e`)
		case c < 0x20 || c >= 0x7f || c == '\\':
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Diagnostics is what Terminal.Diagnostics returns.
type Diagnostics struct {
	Total  int64              // diagnostics since New
	ByKind map[DiagKind]int64 // Total split by kind
	Recent []Diagnostic       // the last ones, oldest first, at most 64
}

const diagRing = 64

// diagnostics is the bounded record: counters and a fixed ring whose
// entries are copied in place, so that a flood of bad bytes allocates
// nothing.
type diagnostics struct {
	total  int64
	byKind [numDiagKinds]int64
	ring   [diagRing]struct {
		kind DiagKind
		n    uint8
		seq  [32]byte
	}
	next int // ring slot written next
}

func (t *Terminal) diagnose(k DiagKind, seq []byte) {
	d := &t.diag
	d.total++
	d.byKind[k]++
	e := &d.ring[d.next%diagRing]
	e.kind = k
	e.n = uint8(copy(e.seq[:], seq))
	d.next++
}

// Diagnostics returns the count of what the terminal did not understand
// and the most recent cases.
func (t *Terminal) Diagnostics() Diagnostics {
	d := &t.diag
	out := Diagnostics{Total: d.total, ByKind: map[DiagKind]int64{}}
	for k, n := range d.byKind {
		if n > 0 {
			out.ByKind[DiagKind(k)] = n
		}
	}
	first := max(d.next-diagRing, 0)
	for i := first; i < d.next; i++ {
		e := &d.ring[i%diagRing]
		out.Recent = append(out.Recent, Diagnostic{Kind: e.kind, Seq: append([]byte(nil), e.seq[:e.n]...)})
	}
	return out
}
