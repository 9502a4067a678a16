package transcript

import (
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
)

// The input vocabulary is package input's. These aliases keep the files
// still naming it here compiling while they move to it; they go once
// nothing uses them.
type (
	Input         = input.Input
	Text          = input.Text
	Key           = input.Key
	Resize        = input.Resize
	Mouse         = input.Mouse
	ClipboardSet  = input.ClipboardSet
	ClockAdvanced = input.ClockAdvanced
	Stop          = input.Stop
)

// Mouse actions, as package input names them.
const (
	MousePress   = input.MousePress
	MouseRelease = input.MouseRelease
	MouseMove    = input.MouseMove
	MouseScroll  = input.MouseScroll
)

// validChordValue checks an input.key keys member without allocating.
func validChordValue(v *canon.Value) bool {
	if v.Kind != canon.Array || len(v.Items) == 0 || len(v.Items) > 5 {
		return false
	}
	var buf [5]string
	for i := range v.Items {
		if v.Items[i].Kind != canon.String {
			return false
		}
		buf[i] = v.Items[i].Str
	}
	return input.ValidChord(buf[:len(v.Items)])
}
