package term

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/vt"
)

// DefaultDebugBuffer is how many unhandled sequences DEBUG returns at
// most (interminai's --debug-buffer default).
const DefaultDebugBuffer = 10

// ErrNoTermios: the terminal's settings cannot be read (no slave is
// open: the program ended, or never started).
var ErrNoTermios = errors.New("the terminal's settings are unavailable")

// debugKinds are the diagnostics DEBUG reports: escape sequences the
// emulator did not handle. Bytes that are not UTF-8 and undrawable runes
// are no sequences, and are left out.
var debugKinds = []vt.DiagKind{
	vt.DiagUnknownEscape, vt.DiagUnknownCSI, vt.DiagUnknownMode, vt.DiagUnknownOSC,
	vt.DiagDCS, vt.DiagString, vt.DiagMalformed, vt.DiagTooLong, vt.DiagCharset,
}

// Debug returns DEBUG's data: the unhandled sequences since the last
// clear (at most Config.DebugBuffer, the newest; Dropped counts the rest)
// and the terminal's termios. With clear the sequences returned are
// forgotten in the same step.
func (d *Daemon) Debug(clear bool) (interminai.DebugData, error) {
	var out interminai.DebugData
	d.mu.Lock()
	diag := d.emu.Diagnostics()
	var total int64
	for _, k := range debugKinds {
		total += diag.ByKind[k]
	}
	var recent []vt.Diagnostic
	for _, r := range diag.Recent {
		for _, k := range debugKinds {
			if r.Kind == k {
				recent = append(recent, r)
			}
		}
	}
	fresh := total - d.diagSeen
	keep := int(min(fresh, int64(d.debugBuffer), int64(len(recent))))
	for _, r := range recent[len(recent)-keep:] {
		out.Unhandled = append(out.Unhandled, interminai.Unhandled{Sequence: readable(r.Seq), RawHex: hex.EncodeToString(r.Seq)})
	}
	out.Dropped = int(fresh) - keep
	if clear {
		d.diagSeen = total
	}
	d.mu.Unlock()
	t, err := d.judge.termios()
	if err != nil {
		return out, err
	}
	out.Termios = describeTermios(t)
	return out, nil
}

// termios reads the slave's settings, which the program sets.
func (jd *judge) termios() (*unix.Termios, error) {
	if jd == nil {
		return nil, ErrNoTermios
	}
	jd.mu.Lock()
	defer jd.mu.Unlock()
	if jd.slave == nil {
		return nil, ErrNoTermios
	}
	t, err := unix.IoctlGetTermios(int(jd.slave.Fd()), unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("termios: %w", err)
	}
	return t, nil
}

// readable renders a sequence as the seed shows it: ESC as \e, printable
// ASCII as is, anything else as \xHH.
func readable(seq []byte) string {
	var b strings.Builder
	for _, c := range seq {
		switch {
		case c == 0x1b:
			b.WriteString(`\e`)
		case c == '\\':
			b.WriteString(`\\`)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}

// termiosFlags are the flags DEBUG names, by the word they live in.
var termiosFlags = []struct {
	name string
	word int // 0 lflag, 1 iflag, 2 oflag
	bit  uint32
}{
	{"ECHO", 0, unix.ECHO}, {"ECHOE", 0, unix.ECHOE}, {"ECHOK", 0, unix.ECHOK}, {"ECHONL", 0, unix.ECHONL},
	{"ECHOCTL", 0, unix.ECHOCTL}, {"ECHOKE", 0, unix.ECHOKE}, {"ICANON", 0, unix.ICANON}, {"ISIG", 0, unix.ISIG},
	{"IEXTEN", 0, unix.IEXTEN}, {"NOFLSH", 0, unix.NOFLSH}, {"TOSTOP", 0, unix.TOSTOP},
	{"BRKINT", 1, unix.BRKINT}, {"ICRNL", 1, unix.ICRNL}, {"IGNBRK", 1, unix.IGNBRK}, {"IGNCR", 1, unix.IGNCR},
	{"IGNPAR", 1, unix.IGNPAR}, {"INLCR", 1, unix.INLCR}, {"INPCK", 1, unix.INPCK}, {"ISTRIP", 1, unix.ISTRIP},
	{"IXANY", 1, unix.IXANY}, {"IXOFF", 1, unix.IXOFF}, {"IXON", 1, unix.IXON}, {"IMAXBEL", 1, unix.IMAXBEL},
	{"IUTF8", 1, unix.IUTF8},
	{"OPOST", 2, unix.OPOST}, {"ONLCR", 2, unix.ONLCR}, {"OCRNL", 2, unix.OCRNL}, {"ONOCR", 2, unix.ONOCR},
	{"ONLRET", 2, unix.ONLRET},
}

// termiosCC are the control characters DEBUG shows.
var termiosCC = []struct {
	name  string
	index int
}{
	{"VINTR", unix.VINTR}, {"VQUIT", unix.VQUIT}, {"VERASE", unix.VERASE}, {"VKILL", unix.VKILL},
	{"VEOF", unix.VEOF}, {"VSUSP", unix.VSUSP}, {"VSTART", unix.VSTART}, {"VSTOP", unix.VSTOP},
	{"VWERASE", unix.VWERASE}, {"VLNEXT", unix.VLNEXT}, {"VREPRINT", unix.VREPRINT},
}

func describeTermios(t *unix.Termios) interminai.Termios {
	out := interminai.Termios{
		Mode: interminai.ModeRaw,
		Hex: interminai.TermiosHex{
			Iflag: fmt.Sprintf("0x%04x", t.Iflag), Oflag: fmt.Sprintf("0x%04x", t.Oflag),
			Lflag: fmt.Sprintf("0x%04x", t.Lflag), Cflag: fmt.Sprintf("0x%04x", t.Cflag),
		},
		CC:    map[string]string{},
		Flags: []string{},
	}
	if t.Lflag&unix.ICANON != 0 {
		out.Mode = interminai.ModeCooked
	}
	words := [3]uint32{t.Lflag, t.Iflag, t.Oflag}
	for _, f := range termiosFlags {
		if words[f.word]&f.bit != 0 {
			out.Flags = append(out.Flags, f.name)
		}
	}
	for _, c := range termiosCC {
		out.CC[c.name] = caret(t.Cc[c.index])
	}
	return out
}

// caret is a control character in ^X notation; 0 (_POSIX_VDISABLE) is
// "undef".
func caret(c byte) string {
	switch {
	case c == 0:
		return "undef"
	case c < 0x20:
		return "^" + string(rune(c+0x40))
	case c == 0x7f:
		return "^?"
	}
	return string(rune(c))
}
