package input

import "github.com/termverify/termverify-sandbox/internal/canon"

// The input kinds: the record kinds of the inputs, as a transcript and an
// input script name them.
const (
	KindText      = "input.text"
	KindKey       = "input.key"
	KindResize    = "input.resize"
	KindMouse     = "input.mouse"
	KindClipboard = "input.clipboard_set"
	KindClock     = "input.clock_advanced"
	KindStop      = "input.stop"
)

// Kinds returns the seven input kinds, in the order messages list them.
func Kinds() []string {
	return []string{KindText, KindKey, KindResize, KindMouse, KindClipboard, KindClock, KindStop}
}

// Input is one input: Text, Key, Resize, Mouse, ClipboardSet,
// ClockAdvanced or Stop. The set is closed: only this package's types
// implement it, so a type switch over the seven is complete.
type Input interface {
	// Kind returns the input's kind, e.g. KindText.
	Kind() string
	// Payload builds the payload of the input's record stamped at atMS,
	// in a, its members in RFC 8785 order so that an encoder writes them
	// as they stand. A ClockAdvanced is stamped with the advanced time,
	// atMS plus its delta.
	Payload(atMS int64, a *canon.Arena) canon.Value
	sealed()
}

// Text is input.text.
type Text struct{ Text string }

// Key is input.key: one termverify.key/v1 chord, e.g. {"Control", "c"}.
type Key struct{ Keys []string }

// Resize is input.resize; Columns and Rows are > 0.
type Resize struct{ Columns, Rows int64 }

// Mouse actions and buttons.
const (
	MousePress   = "press"
	MouseRelease = "release"
	MouseMove    = "move"
	MouseScroll  = "scroll"
)

// Mouse is input.mouse. Button (left|middle|right) is for press and
// release only; Delta (non-zero) for scroll only.
type Mouse struct {
	Action      string
	Column, Row int64
	Button      string
	Delta       int64
}

// ClipboardSet is input.clipboard_set.
type ClipboardSet struct{ Text string }

// ClockAdvanced is input.clock_advanced: the manual clock moves forward
// by DeltaMS (> 0); the record's at_ms is the new time.
type ClockAdvanced struct{ DeltaMS int64 }

// Stop is input.stop; no input may follow it.
type Stop struct{}

func at(ms int64) canon.Member { return canon.M("at_ms", canon.IntValue(ms)) }

func (Text) sealed()          {}
func (Key) sealed()           {}
func (Resize) sealed()        {}
func (Mouse) sealed()         {}
func (ClipboardSet) sealed()  {}
func (ClockAdvanced) sealed() {}
func (Stop) sealed()          {}

// Kind returns KindText.
func (Text) Kind() string { return KindText }

// Payload returns {"at_ms", "text"}.
func (t Text) Payload(ms int64, a *canon.Arena) canon.Value {
	return a.Object(at(ms), canon.M("text", canon.StringValue(t.Text)))
}

// Kind returns KindKey.
func (Key) Kind() string { return KindKey }

// Payload returns {"at_ms", "keys"}.
func (k Key) Payload(ms int64, a *canon.Arena) canon.Value {
	keys := a.Items(len(k.Keys))
	for i, s := range k.Keys {
		keys[i] = canon.StringValue(s)
	}
	return a.Object(at(ms), canon.M("keys", canon.Value{Kind: canon.Array, Items: keys}))
}

// Kind returns KindResize.
func (Resize) Kind() string { return KindResize }

// Payload returns {"at_ms", "columns", "rows"}.
func (r Resize) Payload(ms int64, a *canon.Arena) canon.Value {
	return a.Object(at(ms), canon.M("columns", canon.IntValue(r.Columns)), canon.M("rows", canon.IntValue(r.Rows)))
}

// Kind returns KindMouse.
func (Mouse) Kind() string { return KindMouse }

// Payload returns {"action", "at_ms", "column", "row"}, with "button"
// when Button is set and "delta" when Delta is non-zero.
func (m Mouse) Payload(ms int64, a *canon.Arena) canon.Value {
	mm := a.Members(6)[:0]
	mm = append(mm, canon.M("action", canon.StringValue(m.Action)), at(ms))
	if m.Button != "" {
		mm = append(mm, canon.M("button", canon.StringValue(m.Button)))
	}
	mm = append(mm, canon.M("column", canon.IntValue(m.Column)))
	if m.Delta != 0 {
		mm = append(mm, canon.M("delta", canon.IntValue(m.Delta)))
	}
	mm = append(mm, canon.M("row", canon.IntValue(m.Row)))
	return canon.Value{Kind: canon.Object, Members: mm}
}

// Kind returns KindClipboard.
func (ClipboardSet) Kind() string { return KindClipboard }

// Payload returns {"at_ms", "text"}.
func (c ClipboardSet) Payload(ms int64, a *canon.Arena) canon.Value {
	return a.Object(at(ms), canon.M("text", canon.StringValue(c.Text)))
}

// Kind returns KindClock.
func (ClockAdvanced) Kind() string { return KindClock }

// Payload returns {"at_ms", "delta_ms"}, at_ms being ms plus DeltaMS: the
// record carries the time the clock advanced to.
func (c ClockAdvanced) Payload(ms int64, a *canon.Arena) canon.Value {
	return a.Object(at(ms+c.DeltaMS), canon.M("delta_ms", canon.IntValue(c.DeltaMS)))
}

// Kind returns KindStop.
func (Stop) Kind() string { return KindStop }

// Payload returns {"at_ms"}.
func (Stop) Payload(ms int64, a *canon.Arena) canon.Value { return a.Object(at(ms)) }
