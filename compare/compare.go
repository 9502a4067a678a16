package compare

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Excluded is the one envelope member never compared: it names a run, not
// its behaviour.
const Excluded = "run_id"

// Difference is one differing member, located by its path from the record
// root. Left and Right are the RFC 8785 texts of the two values; nil means
// the member is absent on that side.
type Difference struct {
	Path  string  `json:"path"`
	Left  *string `json:"left"`
	Right *string `json:"right"`

	steps []step
}

// Divergence is one record position at which the sides differ. An empty
// LeftKind or RightKind means that side has no record at this position;
// Differences is then empty.
type Divergence struct {
	Seq                 int
	LeftKind, RightKind string
	Differences         []Difference
}

// Ignored is an ignore path with the number of differences it dropped.
type Ignored struct {
	Path        string `json:"path"`
	Differences int    `json:"differences"`
}

// Verdict is the outcome of one comparison.
type Verdict struct {
	Equivalent                bool
	LeftRecords, RightRecords int
	Divergences               []Divergence // in position order
	Ignored                   []Ignored    // one per ignore path, in the order given
}

// FirstDivergentSeq is the position of the first divergence, or -1 when
// the sides are equivalent.
func (v *Verdict) FirstDivergentSeq() int {
	if len(v.Divergences) == 0 {
		return -1
	}
	return v.Divergences[0].Seq
}

// SideError is a side that is not a valid transcript.
type SideError struct {
	Side string // "left" or "right"
	Err  error
}

func (e *SideError) Error() string { return e.Side + " transcript is invalid: " + e.Err.Error() }

// Unwrap returns the cause (a *transcript.Error for a rule violation).
func (e *SideError) Unwrap() error { return e.Err }

// Bytes parses both sides strictly and compares them. A side the codec
// refuses is a *SideError naming it (left first); no verdict is given.
func Bytes(left, right []byte, ignores ...Ignore) (Verdict, error) {
	l, err := transcript.Parse(left)
	if err != nil {
		return Verdict{}, &SideError{Side: "left", Err: err}
	}
	r, err := transcript.Parse(right)
	if err != nil {
		return Verdict{}, &SideError{Side: "right", Err: err}
	}
	return Transcripts(l, r, ignores...), nil
}

// Transcripts compares two parsed (so valid) transcripts record by record.
func Transcripts(left, right *transcript.Transcript, ignores ...Ignore) Verdict {
	v := Verdict{
		LeftRecords: len(left.Records), RightRecords: len(right.Records),
		Divergences: []Divergence{}, Ignored: make([]Ignored, len(ignores)),
	}
	for i, ig := range ignores {
		v.Ignored[i].Path = ig.String()
	}
	var w walker
	for seq := range max(len(left.Records), len(right.Records)) {
		switch {
		case seq >= len(left.Records):
			v.Divergences = append(v.Divergences, Divergence{Seq: seq, RightKind: right.Records[seq].Kind, Differences: []Difference{}})
			continue
		case seq >= len(right.Records):
			v.Divergences = append(v.Divergences, Divergence{Seq: seq, LeftKind: left.Records[seq].Kind, Differences: []Difference{}})
			continue
		}
		l, r := &left.Records[seq], &right.Records[seq]
		if canon.Equal(&l.Value, &r.Value) {
			continue // the common case, without walking (run_id agrees too)
		}
		w.diffs = w.diffs[:0]
		w.record(&l.Value, &r.Value)
		kept := w.diffs[:0:0]
		for _, d := range w.diffs {
			if i := ignoredBy(ignores, l.Kind, r.Kind, d.steps); i >= 0 {
				v.Ignored[i].Differences++
				continue
			}
			d.steps = nil
			kept = append(kept, d)
		}
		if len(kept) > 0 {
			v.Divergences = append(v.Divergences, Divergence{Seq: seq, LeftKind: l.Kind, RightKind: r.Kind, Differences: kept})
		}
	}
	v.Equivalent = len(v.Divergences) == 0
	return v
}

// ignoredBy returns the index of the first ignore that drops a difference
// at path between records of the two kinds, or -1.
func ignoredBy(ignores []Ignore, leftKind, rightKind string, path []step) int {
	for i := range ignores {
		if ignores[i].matches(leftKind, rightKind, path) {
			return i
		}
	}
	return -1
}

// step is one step of a path: a member name, or an array index (key unset).
type step struct {
	key   string
	index int
	isKey bool
}

// walker collects the differences of one record pair.
type walker struct {
	path  []step
	diffs []Difference
}

func (w *walker) record(l, r *canon.Value) {
	w.path = w.path[:0]
	w.object(l, r, true)
}

func (w *walker) add(l, r *canon.Value) {
	d := Difference{Path: render(w.path), steps: slices.Clone(w.path)}
	if l != nil {
		s := Encode(l)
		d.Left = &s
	}
	if r != nil {
		s := Encode(r)
		d.Right = &s
	}
	w.diffs = append(w.diffs, d)
}

func (w *walker) value(l, r *canon.Value) {
	switch {
	case l.Kind != r.Kind:
		w.add(l, r)
	case l.Kind == canon.Object:
		w.object(l, r, false)
	case l.Kind == canon.Array:
		if len(l.Items) != len(r.Items) {
			w.add(l, r)
			return
		}
		for i := range l.Items {
			if canon.Equal(&l.Items[i], &r.Items[i]) {
				continue
			}
			w.path = append(w.path, step{index: i})
			w.value(&l.Items[i], &r.Items[i])
			w.path = w.path[:len(w.path)-1]
		}
	case !canon.Equal(l, r):
		w.add(l, r)
	}
}

// object walks the union of the two objects' member names in code-point
// order; envelope skips the excluded member.
func (w *walker) object(l, r *canon.Value, envelope bool) {
	names := make([]string, 0, len(l.Members)+len(r.Members))
	for _, m := range l.Members {
		names = append(names, m.Key)
	}
	for _, m := range r.Members {
		if _, ok := l.Get(m.Key); !ok {
			names = append(names, m.Key)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if envelope && name == Excluded {
			continue
		}
		lv, lok := l.Get(name)
		rv, rok := r.Get(name)
		if lok && rok && canon.Equal(lv, rv) {
			continue
		}
		w.path = append(w.path, step{key: name, isKey: true})
		switch {
		case !lok:
			w.add(nil, rv)
		case !rok:
			w.add(lv, nil)
		default:
			w.value(lv, rv)
		}
		w.path = w.path[:len(w.path)-1]
	}
}

// render writes a path in the --ignore grammar: names joined by dots,
// indices in brackets, and a name that is not plain as a JSON string in
// brackets (the control codec's member paths look the same).
func render(path []step) string {
	var b []byte
	for i, s := range path {
		switch {
		case !s.isKey:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.index), 10)
			b = append(b, ']')
		case !plainName(s.key):
			b = append(appendQuoted(append(b, '['), s.key), ']')
		default:
			if i > 0 {
				b = append(b, '.')
			}
			b = append(b, s.key...)
		}
	}
	return string(b)
}

// Encode returns v's RFC 8785 text. Every value of a parsed transcript
// has one (Parse refused anything else); should one not, the text says so
// rather than inventing a value.
func Encode(v *canon.Value) string {
	b, err := canon.Marshal(v)
	if err != nil {
		return "<no canonical form: " + err.Error() + ">"
	}
	return string(b)
}

// appendQuoted appends s as an RFC 8785 JSON string (Go-quoted when s is
// not valid UTF-8, which a parsed transcript never holds).
func appendQuoted(b []byte, s string) []byte {
	out, err := canon.AppendString(b, s)
	if err != nil {
		return append(b, strconv.Quote(s)...)
	}
	return out
}

// Subjects compares the replay subjects of two transcripts' run.started
// records and returns the names of the members that differ, in code-point
// order (nil when the subjects are equal). Replay reports it: the subject
// selector is disclosed, not enforced.
func Subjects(left, right *transcript.Transcript) []string {
	l, r := subjectOf(left), subjectOf(right)
	var w walker
	w.value(l, r)
	var names []string
	for _, d := range w.diffs {
		name := "subject"
		if len(d.steps) > 0 {
			name = d.steps[0].key
		}
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
	}
	return names
}

func subjectOf(t *transcript.Transcript) *canon.Value {
	null := &canon.Value{}
	if len(t.Records) == 0 {
		return null
	}
	p := t.Records[0].Payload()
	if p == nil {
		return null
	}
	if s, ok := p.Get("subject"); ok {
		return s
	}
	return null
}

// errNoPath is ParseIgnore's error for an empty path.
var errNoPath = errors.New("empty path")

func pathError(spec string, err error) error {
	return fmt.Errorf("ignore path %s: %w", strconv.Quote(spec), err)
}
