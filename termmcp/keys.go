package termmcp

import (
	"bytes"
	"fmt"

	"github.com/termverify/termverify-sandbox/ptyinput"
)

// encodeKeys is the bytes the terminal sends for keys, in the program's
// modes. All are encoded before any is sent: a bad chord sends nothing.
// Where the backend cannot know the modes (an attached daemon), a chord
// whose bytes depend on them is refused rather than guessed.
func encodeKeys(keys [][]string, b backend) ([]byte, error) {
	modes, known := b.modes()
	var out []byte
	for i, chord := range keys {
		enc, err := ptyinput.EncodeKey(chord, modes)
		if err != nil {
			return nil, fmt.Errorf("keys[%d] %q: %w: a chord is modifiers (Control, Alt, Shift, Meta, in that order) then one key, "+
				`e.g. ["Control","c"], ["ArrowUp"], ["Enter"], ["F5"]; nothing was typed`, i, chord, err)
		}
		if !known {
			alt, err := ptyinput.EncodeKey(chord, ptyinput.Modes{AppCursor: true})
			if err == nil && !bytes.Equal(alt, enc) {
				return nil, fmt.Errorf("keys[%d] %q: its bytes depend on the program's cursor-key mode, which an attached daemon does not report: "+
					`send them in text instead (%q normally, %q in application mode), or use a session terminal_start started; nothing was typed`,
					i, chord, enc, alt)
			}
		}
		out = append(out, enc...)
	}
	return out, nil
}
