package term

import (
	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

// Modes is the input modes the program has set (cursor keys, keypad,
// mouse, bracketed paste), as the emulator tracks them: what a client
// checking a key chord against the program's terminal (ptyinput) needs.
func (d *Daemon) Modes() ptyinput.Modes {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ptydrive.ModesOf(d.emu)
}
