package compare

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// upstream is the upstream-written reference data (shared/).
const (
	upstreamValid  = "../../shared/reference/termverify-upstream/transcripts/v1/valid"
	upstreamCorpus = "../../shared/conformance/upstream/transcript"
)

// spec is one transcript written by our codec's Writer: a readiness
// observation, one text epoch, optionally a key epoch, the stop, run.finished.
type spec struct {
	runID  string
	text   string
	state  string // the text epoch's observation state, JSON
	key    bool
	exit   int64
	region string // the one UI region's id
}

func defaults() spec {
	return spec{runID: "run-one", text: "hello", state: `{"count":1}`, region: "main"}
}

func mustDecode(t *testing.T, s string) canon.Value {
	t.Helper()
	v, _, err := canon.Decode([]byte(`{"v":` + s + `}`))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	inner, _ := v.Get("v")
	return *inner
}

// write records s with transcript.Writer and returns the bytes.
func write(t *testing.T, s spec) []byte {
	t.Helper()
	cv := mustDecode(t, `{"seed":"7","clock":{"mode":"manual","initial_ms":0},"locale":"C","timezone":"UTC",
		"terminal":{"columns":80,"rows":24,"capabilities":[]},"filesystem":{"mode":"sandbox","root_id":"app"},"network":{"mode":"deny"}}`)
	cfg, err := config.Decode(&cv)
	if err != nil {
		t.Fatal(err)
	}
	subj := transcript.Subject{
		Application: transcript.Application{ID: "app", Version: "1", Build: "b1"},
		Fixture:     transcript.Selector{ID: "fx", Version: "1"},
		Adapter:     transcript.Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion},
		Normalizer:  transcript.Selector{ID: "id", Version: "1"},
		StateSchema: transcript.Selector{ID: "st", Version: "1"},
	}
	var buf bytes.Buffer
	w := transcript.NewWriter(&buf, s.runID)
	obs := func(state string) transcript.Observation {
		return transcript.Observation{
			State: mustDecode(t, state),
			UI: transcript.UI{Regions: []transcript.Region{{ID: s.region, Role: "document", Bounds: transcript.Bounds{Columns: 80, Rows: 24}}},
				Cursor: transcript.Cursor{Visible: true}},
		}
	}
	steps := []func() error{func() error { return w.Start(cfg, subj) }}
	for _, c := range receipts.Constraints() {
		steps = append(steps, func() error { return w.Applied(c, receipts.OS, nil) })
	}
	steps = append(steps,
		func() error { return w.Observe(obs(`{"count":0}`)) },
		func() error { return w.Input(input.Text{Text: s.text}) },
		func() error { return w.Observe(obs(s.state)) },
	)
	if s.key {
		steps = append(steps,
			func() error { return w.Input(input.Key{Keys: []string{"Enter"}}) },
			func() error { return w.Observe(obs(s.state)) })
	}
	steps = append(steps,
		func() error { return w.Input(input.Stop{}) },
		func() error { return w.Finish(transcript.Exit{Kind: transcript.ExitCode, Code: s.exit}) },
		w.Close)
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return buf.Bytes()
}

func mustCompare(t *testing.T, l, r []byte, ignores ...string) Verdict {
	t.Helper()
	var igs []Ignore
	for _, s := range ignores {
		ig, err := ParseIgnore(s)
		if err != nil {
			t.Fatal(err)
		}
		igs = append(igs, ig)
	}
	v, err := Bytes(l, r, igs...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func paths(d Divergence) []string {
	var out []string
	for _, x := range d.Differences {
		out = append(out, x.Path)
	}
	return out
}

func str(s *string) string {
	if s == nil {
		return "<absent>"
	}
	return *s
}

// TestOurCodec compares pairs written by our Writer: upstream's
// comparator semantics, case by case.
func TestOurCodec(t *testing.T) {
	base := write(t, defaults())
	with := func(f func(*spec)) []byte {
		s := defaults()
		f(&s)
		return write(t, s)
	}

	t.Run("equivalent to itself", func(t *testing.T) {
		v := mustCompare(t, base, base)
		if !v.Equivalent || len(v.Divergences) != 0 || v.FirstDivergentSeq() != -1 || v.LeftRecords != 13 || v.RightRecords != 13 {
			t.Errorf("%+v", v)
		}
	})
	t.Run("run_id is excluded", func(t *testing.T) {
		if v := mustCompare(t, base, with(func(s *spec) { s.runID = "run-two" })); !v.Equivalent {
			t.Errorf("%+v", v)
		}
	})
	t.Run("a run_id below the envelope is compared", func(t *testing.T) {
		v := mustCompare(t, with(func(s *spec) { s.state = `{"run_id":"a"}` }), with(func(s *spec) { s.state = `{"run_id":"b"}` }))
		if v.Equivalent || len(v.Divergences) != 1 || v.Divergences[0].Seq != 10 {
			t.Fatalf("%+v", v)
		}
		x := v.Divergences[0].Differences
		if len(x) != 1 || x[0].Path != "payload.state.run_id" || str(x[0].Left) != `"a"` || str(x[0].Right) != `"b"` {
			t.Errorf("differences %+v, want payload.state.run_id \"a\" | \"b\"", x)
		}
	})
	t.Run("a payload difference: seq, kinds, path, both values", func(t *testing.T) {
		v := mustCompare(t, base, with(func(s *spec) { s.text = "world" }))
		if v.Equivalent || len(v.Divergences) != 1 || v.FirstDivergentSeq() != 9 {
			t.Fatalf("%+v", v)
		}
		d := v.Divergences[0]
		if d.Seq != 9 || d.LeftKind != "input.text" || d.RightKind != "input.text" || len(d.Differences) != 1 {
			t.Fatalf("%+v", d)
		}
		x := d.Differences[0]
		if x.Path != "payload.text" || str(x.Left) != `"hello"` || str(x.Right) != `"world"` {
			t.Errorf("%s: %s | %s", x.Path, str(x.Left), str(x.Right))
		}
	})
	t.Run("nested members, absent members, array items", func(t *testing.T) {
		v := mustCompare(t, base, with(func(s *spec) { s.state = `{"count":2,"extra":[1]}`; s.region = "other" }))
		// The readiness observation (seq 8) differs in the region too.
		if len(v.Divergences) != 2 || v.FirstDivergentSeq() != 8 || v.Divergences[1].Seq != 10 {
			t.Fatalf("%+v", v)
		}
		got := paths(v.Divergences[1])
		want := []string{"payload.state.count", "payload.state.extra", "payload.ui.regions[0].id"}
		if !slices.Equal(got, want) {
			t.Errorf("paths %q, want %q", got, want)
		}
		extra := v.Divergences[1].Differences[1]
		if extra.Left != nil || str(extra.Right) != "[1]" {
			t.Errorf("absent member: %s | %s", str(extra.Left), str(extra.Right))
		}
	})
	t.Run("a value of another type or an array of another length is one difference", func(t *testing.T) {
		v := mustCompare(t, base, with(func(s *spec) { s.state = `[1,2]` }))
		if got := paths(v.Divergences[0]); !slices.Equal(got, []string{"payload.state"}) {
			t.Errorf("type: %q", got)
		}
		v = mustCompare(t, with(func(s *spec) { s.state = `[1]` }), with(func(s *spec) { s.state = `[1,2]` }))
		x := v.Divergences[0].Differences
		if len(x) != 1 || x[0].Path != "payload.state" || str(x[0].Left) != "[1]" || str(x[0].Right) != "[1,2]" {
			t.Errorf("length: %+v", x)
		}
	})
	t.Run("extra records: the missing side's kind is absent", func(t *testing.T) {
		v := mustCompare(t, base, with(func(s *spec) { s.key = true }))
		if v.LeftRecords != 13 || v.RightRecords != 15 || v.Equivalent {
			t.Fatalf("%+v", v)
		}
		// seq 11 (input.stop vs input.key) and 12 differ; 13 and 14 are only on the right.
		last := v.Divergences[len(v.Divergences)-2:]
		for i, d := range last {
			if d.Seq != 13+i || d.LeftKind != "" || d.RightKind == "" || len(d.Differences) != 0 {
				t.Errorf("extra %d: %+v", i, d)
			}
		}
		if v.FirstDivergentSeq() != 11 {
			t.Errorf("first divergent seq %d, want 11", v.FirstDivergentSeq())
		}
		back := mustCompare(t, with(func(s *spec) { s.key = true }), base)
		if d := back.Divergences[len(back.Divergences)-1]; d.LeftKind != "run.finished" || d.RightKind != "" {
			t.Errorf("mirrored: %+v", d)
		}
	})
	t.Run("symmetric", func(t *testing.T) {
		other := with(func(s *spec) { s.text = "world"; s.exit = 3 })
		f, b := mustCompare(t, base, other), mustCompare(t, other, base)
		if len(f.Divergences) != len(b.Divergences) {
			t.Fatalf("%d vs %d divergences", len(f.Divergences), len(b.Divergences))
		}
		for i := range f.Divergences {
			fd, bd := f.Divergences[i], b.Divergences[i]
			if fd.Seq != bd.Seq || fd.LeftKind != bd.RightKind || len(fd.Differences) != len(bd.Differences) {
				t.Fatalf("%+v vs %+v", fd, bd)
			}
			for j := range fd.Differences {
				x, y := fd.Differences[j], bd.Differences[j]
				if x.Path != y.Path || str(x.Left) != str(y.Right) || str(x.Right) != str(y.Left) {
					t.Errorf("%+v vs %+v", x, y)
				}
			}
		}
	})
}

// TestUpstreamWritten compares transcripts upstream wrote: its reference
// fixtures and every accepted transcript of the conformance corpus.
func TestUpstreamWritten(t *testing.T) {
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("upstream data: %v", err)
		}
		return b
	}
	basic := read(filepath.Join(upstreamValid, "basic.jsonl"))
	stop := read(filepath.Join(upstreamValid, "finished-after-stop.jsonl"))
	v := mustCompare(t, basic, stop)
	if v.Equivalent || v.FirstDivergentSeq() != 9 || len(v.Divergences) != 1 {
		t.Fatalf("%+v", v)
	}
	d := v.Divergences[0]
	if d.LeftKind != "input.text" || d.RightKind != "input.stop" || !slices.Equal(paths(d), []string{"kind", "payload.text"}) {
		t.Errorf("%+v", d)
	}
	if v := mustCompare(t, basic, stop, "kind", "input.text:payload", "payload.text"); !v.Equivalent ||
		v.Ignored[0].Differences != 1 || v.Ignored[1].Differences != 0 || v.Ignored[2].Differences != 1 {
		t.Errorf("ignored: %+v", v)
	}

	// Every accepted corpus transcript is equivalent to itself and to a
	// copy under another run id; and against basic.jsonl it is compared
	// without error, equivalent exactly when the bytes agree but for run_id.
	files, _ := filepath.Glob(filepath.Join(upstreamCorpus, "*-accept.jsonl"))
	if len(files) < 300 {
		t.Fatalf("conformance corpus: %d files", len(files))
	}
	for _, f := range files {
		b := read(f)
		tr, err := transcript.Parse(b)
		if err != nil {
			continue // accepted upstream, refused here: a documented difference (transcript tests)
		}
		renamed := bytes.ReplaceAll(b, []byte(`"run_id":"`+tr.RunID+`"`), []byte(`"run_id":"other-run.x"`))
		if v := mustCompare(t, b, renamed); !v.Equivalent {
			t.Errorf("%s: not equivalent under another run id: %+v", f, v.Divergences[0])
		}
		v := mustCompare(t, basic, b)
		same := bytes.Equal(basic, bytes.ReplaceAll(b, []byte(`"run_id":"`+tr.RunID+`"`), []byte(`"run_id":"run-basic"`)))
		if v.Equivalent != same {
			t.Errorf("%s: equivalent %v, bytes agree %v", f, v.Equivalent, same)
		}
	}
}

// TestOursAgainstUpstream compares our Writer's transcript with an
// upstream-written one: the verdict names what differs (ids, config,
// subject), and ignore paths can drop exactly that.
func TestOursAgainstUpstream(t *testing.T) {
	up, err := os.ReadFile(filepath.Join(upstreamValid, "basic.jsonl"))
	if err != nil {
		t.Fatalf("upstream data: %v", err)
	}
	ours := write(t, defaults())
	v := mustCompare(t, up, ours)
	if v.Equivalent || v.FirstDivergentSeq() != 0 {
		t.Fatalf("%+v", v)
	}
	if !slices.Contains(paths(v.Divergences[0]), "payload.subject.adapter.id") || !slices.Contains(paths(v.Divergences[0]), "id") {
		t.Errorf("seq 0 paths %q", paths(v.Divergences[0]))
	}
	v = mustCompare(t, up, ours, "run.started:payload.subject.adapter")
	if slices.Contains(paths(v.Divergences[0]), "payload.subject.adapter.id") || v.Ignored[0].Differences != 2 {
		t.Errorf("adapter not ignored: %q, %+v", paths(v.Divergences[0]), v.Ignored)
	}
}

func TestSideErrors(t *testing.T) {
	good := write(t, defaults())
	for _, tc := range []struct {
		side        string
		left, right []byte
	}{
		{"left", []byte("not a transcript\n"), good},
		{"right", good, nil},
		{"left", good[:len(good)-1], good[:len(good)-1]},
	} {
		_, err := Bytes(tc.left, tc.right)
		se, ok := errors.AsType[*SideError](err)
		if !ok || se.Side != tc.side || !strings.HasPrefix(err.Error(), tc.side+" transcript is invalid: ") {
			t.Errorf("want the %s side named: %v", tc.side, err)
		}
		if _, ok := errors.AsType[*transcript.Error](err); !ok {
			t.Errorf("%v does not unwrap to *transcript.Error", err)
		}
	}
}

func TestParseIgnore(t *testing.T) {
	good := []struct {
		spec, kind string
		segs       []segment
	}{
		{"payload.subject.adapter", "", []segment{{name: "payload"}, {name: "subject"}, {name: "adapter"}}},
		{"capability.result:payload.tier", "capability.result", []segment{{name: "payload"}, {name: "tier"}}},
		{"observation:payload.events[*].data", "observation", []segment{{name: "payload"}, {name: "events"}, {isIndex: true, wildcard: true}, {name: "data"}}},
		{"payload.ui.regions[10]", "", []segment{{name: "payload"}, {name: "ui"}, {name: "regions"}, {isIndex: true, index: 10}}},
		{`payload.state["a.b:c"].*`, "", []segment{{name: "payload"}, {name: "state"}, {name: "a.b:c"}, {wildcard: true}}},
		{`payload.state["\u00e9\"]"]`, "", []segment{{name: "payload"}, {name: "state"}, {name: `é"]`}}},
		{`observation:payload.state["*"][0]`, "observation", []segment{{name: "payload"}, {name: "state"}, {name: "*"}, {isIndex: true}}},
		{`["x-a b"]`, "", []segment{{name: "x-a b"}}},
		{"x-note", "", []segment{{name: "x-note"}}},
		{"*", "", []segment{{wildcard: true}}},
		{"payload.état", "", []segment{{name: "payload"}, {name: "état"}}},
	}
	for _, tc := range good {
		ig, err := ParseIgnore(tc.spec)
		if err != nil || ig.Kind != tc.kind || !slices.Equal(ig.segs, tc.segs) || ig.String() != tc.spec {
			t.Errorf("ParseIgnore(%q) = %+v, %v; want kind %q segs %+v", tc.spec, ig, err, tc.kind, tc.segs)
		}
	}
	for _, bad := range []string{
		"", "run_id", "paylod.x", "payload..x", "payload.", ".payload", "payload[0", "payload[01]", "payload[-1]",
		"payload[x]", "payload[16384]", `payload["unclosed`, `payload["bad\q"]`, `payload["a"`, `payload."a"`, "payload x",
		"observations:payload", "capability.result:", "payload.a]", "payload.a:b", "[0]", "payload*", `["run_id"]`, `["paylod"]`,
	} {
		if _, err := ParseIgnore(bad); err == nil {
			t.Errorf("ParseIgnore(%q) accepted", bad)
		}
	}
}

// TestIgnoreMatching: at or below the path; narrowed to positions where
// both records are of the kind; a difference above the path still counts;
// extra records are never ignored.
func TestIgnoreMatching(t *testing.T) {
	base := write(t, defaults())
	s := defaults()
	s.text, s.state = "world", `{"count":2,"extra":{"x":1}}`
	other := write(t, s)
	cases := []struct {
		ignores []string
		equal   bool
		dropped []int
	}{
		{[]string{"payload"}, true, []int{3}},
		{[]string{"payload.state", "payload.text"}, true, []int{2, 1}},
		{[]string{"payload.state.count", "payload.text"}, false, []int{1, 1}}, // payload.state.extra remains
		{[]string{"observation:payload.state", "input.text:payload.text"}, true, []int{2, 1}},
		{[]string{"input.text:payload.state", "observation:payload.text"}, false, []int{0, 0}},
		{[]string{"*.state", "payload.*"}, true, []int{2, 1}},
		{[]string{"payload.state.extra.x"}, false, []int{0}}, // extra is absent on the left: the difference is above the path
		{[]string{"payload.ui"}, false, []int{0}},
	}
	for _, tc := range cases {
		v := mustCompare(t, base, other, tc.ignores...)
		var dropped []int
		for _, ig := range v.Ignored {
			dropped = append(dropped, ig.Differences)
		}
		if v.Equivalent != tc.equal || !slices.Equal(dropped, tc.dropped) {
			t.Errorf("%q: equivalent %v, dropped %v; want %v, %v", tc.ignores, v.Equivalent, dropped, tc.equal, tc.dropped)
		}
	}

	// Array items.
	l, r := defaults(), defaults()
	l.state, r.state = `{"a":[{"k":1,"v":1},{"k":2,"v":2}]}`, `{"a":[{"k":1,"v":9},{"k":2,"v":8}]}`
	lb, rb := write(t, l), write(t, r)
	if v := mustCompare(t, lb, rb, "payload.state.a[*].v"); !v.Equivalent || v.Ignored[0].Differences != 2 {
		t.Errorf("[*]: %+v", v)
	}
	if v := mustCompare(t, lb, rb, "payload.state.a[1]"); v.Equivalent || v.Ignored[0].Differences != 1 ||
		!slices.Equal(paths(v.Divergences[0]), []string{"payload.state.a[0].v"}) {
		t.Errorf("[1]: %+v", v)
	}
	if v := mustCompare(t, lb, rb, "payload.state.a.*"); v.Equivalent {
		t.Errorf("* does not match an index: %+v", v)
	}

	// Extra records are never ignored.
	k := defaults()
	k.key = true
	if v := mustCompare(t, base, write(t, k), "*"); v.Equivalent || len(v.Divergences) != 2 {
		t.Errorf("extra records: %+v", v)
	}
}

// TestPathsRoundTrip: every path in a report is an ignore path that drops
// exactly that difference, whatever the member names hold.
func TestPathsRoundTrip(t *testing.T) {
	names := []string{"a.b", "[0]", `q"uote`, "col:on", "*", "sp ace", "", "tab\t", "\x1b]0;x\x07", "é", `back\slash`}
	l, r := defaults(), defaults()
	var lm, rm []canon.Member
	for i, n := range names {
		lm = append(lm, canon.M(n, canon.IntValue(int64(i))))
		rm = append(rm, canon.M(n, canon.IntValue(int64(i+100))))
	}
	enc := func(m []canon.Member) string {
		v := canon.ObjectValue(m...)
		return Encode(&v)
	}
	l.state, r.state = enc(lm), enc(rm)
	v := mustCompare(t, write(t, l), write(t, r))
	diffs := v.Divergences[0].Differences
	if len(diffs) != len(names) {
		t.Fatalf("%d differences, want %d", len(diffs), len(names))
	}
	for _, d := range diffs {
		ig, err := ParseIgnore(d.Path)
		if err != nil {
			t.Errorf("path %q does not parse: %v", d.Path, err)
			continue
		}
		w := mustCompare(t, write(t, l), write(t, r), ig.String())
		if w.Ignored[0].Differences != 1 {
			t.Errorf("path %q dropped %d differences, want 1", d.Path, w.Ignored[0].Differences)
		}
	}
}

func TestSubjects(t *testing.T) {
	parse := func(b []byte) *transcript.Transcript {
		tr, err := transcript.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	ours := parse(write(t, defaults()))
	if d := Subjects(ours, ours); d != nil {
		t.Errorf("same subject: %q", d)
	}
	up, err := os.ReadFile(filepath.Join(upstreamValid, "basic.jsonl"))
	if err != nil {
		t.Fatalf("upstream data: %v", err)
	}
	// Upstream's names another adapter, application, fixture and so on.
	got := Subjects(parse(up), ours)
	if want := []string{"adapter", "application", "fixture", "normalizer", "state_schema"}; !slices.Equal(got, want) {
		t.Errorf("Subjects = %q, want %q", got, want)
	}
}
