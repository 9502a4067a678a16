package term

import "github.com/termverify/termverify-sandbox/vt"

// Modes is the terminal modes the program has set (cursor keys, keypad,
// mouse, bracketed paste), as the emulator tracks them: what a client
// encoding a key chord for the program (ptyinput) needs to know.
func (d *Daemon) Modes() vt.Modes {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.emu.Modes()
}
