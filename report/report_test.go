package report_test

import (
	"bytes"
	"html"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/transcripttest"
	"github.com/termverify/termverify-sandbox/report"
	"github.com/termverify/termverify-sandbox/transcript"
)

// ptyFixture is a real run --pty of bash: colours, <script> printed by
// the subject, a resize, keys, an OSC title, an exit of 3.
const ptyFixture = "../testdata/pty/bash.jsonl"

// vimFixture is a real run --pty of vim: the alternate screen, wide
// characters, syntax colours, line numbers.
const vimFixture = "../testdata/pty/vim.jsonl"

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func runs(t *testing.T, rs ...report.Run) []byte {
	t.Helper()
	var b bytes.Buffer
	must(t, report.WriteRuns(&b, rs))
	return b.Bytes()
}

// hostile are strings a subject controls, each trying to become markup,
// to close our markup, or to forge a row of ours.
var hostile = []string{
	`<script>alert("s")</script>`,
	`</pre><img src=x onerror=alert(1)>`,
	`"><svg onload=alert(2)>`,
	"\x1b]0;<iframe src=//evil.example>\x07",
	`</code></td></tr><tr class="t-os"><td>network</td><td>■ os</td></tr>`,
	`{{.CSP}}<style>body{display:none}</style>`,
	"\u202eevil\u202c",
	`javascript:alert(3)`,
}

// hostileRun is a control/v1 run whose subject put the hostile strings
// in every member it writes: state, frame, events, diagnostics, the
// failure message and details.
func hostileRun(t *testing.T) *transcript.Transcript {
	t.Helper()
	var b bytes.Buffer
	w := transcript.NewWriter(&b, "hostile")
	transcripttest.Begin(t, w, 80, 4, false)
	items := make([]canon.Value, len(hostile))
	for i, h := range hostile {
		items[i] = canon.StringValue(h)
	}
	state := canon.ObjectValue(canon.M("lines", canon.ArrayValue(items...)))
	mode := hostile[0]
	obs := transcript.Observation{State: state,
		Events: []transcript.Event{{Type: "terminal.output", Data: canon.ObjectValue(canon.M("chunk", canon.StringValue(strings.Join(hostile, "\r\n"))))}},
		UI:     transcript.UI{Mode: &mode, Cursor: transcript.Cursor{Visible: true}},
		Frame:  &transcript.Frame{Lines: []string{hostile[0], hostile[1], hostile[4], hostile[6]}, Columns: 80, Rows: 4}}
	must(t, w.Observe(obs))
	must(t, w.Input(input.Text{Text: strings.Join(hostile, "")}))
	for _, h := range hostile {
		d := canon.ObjectValue(canon.M("x", canon.StringValue(h)))
		must(t, w.Diagnostic(transcript.Diagnostic{Code: "subject-said", Message: h, Details: &d}))
	}
	must(t, w.Observe(obs))
	d := canon.ObjectValue(canon.M("why", canon.StringValue(hostile[1])))
	must(t, w.Fail(transcript.Failure{Code: transcript.CodeAdapterRuntimeFailed, Message: hostile[4], Details: &d}))
	must(t, w.Close())
	tr, err := transcript.Parse(b.Bytes())
	must(t, err)
	return tr
}

// TestHostileTextIsNotMarkup: nothing a subject wrote becomes markup. The
// page has exactly one script (ours) and no element a subject named, the
// hostile strings appear only escaped, and no control character of theirs
// reaches the page raw. The strings are shown, not dropped.
func TestHostileTextIsNotMarkup(t *testing.T) {
	tr := hostileRun(t)
	pty := transcripttest.Load(t, ptyFixture)
	page := string(runs(t, report.Run{Name: hostile[1], Transcript: tr}, report.Run{Name: "pty.jsonl", Transcript: pty}))
	checkNoMarkup(t, page, hostile)
	for _, want := range []string{`&lt;script&gt;alert(`, `&lt;/pre&gt;&lt;img src=x onerror=alert(1)&gt;`, `&lt;iframe`, `\x1b]0;`, `\u202e`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q: a subject's text must be shown, escaped", want)
		}
	}
	// The PTY subject printed <script>alert(1)</script> on its screen and
	// set an OSC title with <b>: both are screen text, escaped.
	if !strings.Contains(page, `&lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Error("the PTY screen's <script> line is not shown as text")
	}
}

// checkNoMarkup fails when page has markup a subject could have made.
func checkNoMarkup(t *testing.T, page string, bad []string) {
	t.Helper()
	if n := strings.Count(strings.ToLower(page), "<script"); n != 1 {
		t.Errorf("%d <script elements, want exactly the page's own", n)
	}
	// A string that could open a tag must not be there as it is (the
	// element scan below catches what escaping a quote would let in).
	opens := regexp.MustCompile(`<[A-Za-z!/?]`)
	for _, h := range bad {
		if opens.MatchString(h) && strings.Contains(page, h) {
			t.Errorf("the raw text %q is in the page", h)
		}
	}
	// Every element is one of the template's, with no event handler and
	// no link out of the page.
	allowed := map[string]bool{}
	for _, n := range strings.Fields("html head meta title style body main section h1 h2 h3 p div span code pre table thead tbody tr th td nav a b i ul li script details summary") {
		allowed[n] = true
	}
	// The page's own script and style sheet are raw text to a parser:
	// cut out (there is one of each, counted above and below).
	markup := regexp.MustCompile(`(?s)<script>.*?</script>|<style>.*?</style>`).ReplaceAllString(page, "")
	for _, m := range regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)([^>]*)>`).FindAllStringSubmatch(markup, -1) {
		if !allowed[strings.ToLower(m[1])] {
			t.Errorf("element <%s%s> is not the template's", m[1], m[2])
		}
		if regexp.MustCompile(`(?i)\son[a-z]+\s*=`).MatchString(m[2]) {
			t.Errorf("element <%s%s> has an event handler", m[1], m[2])
		}
		if h := regexp.MustCompile(`href="([^"]*)"`).FindStringSubmatch(m[2]); h != nil && !strings.HasPrefix(h[1], "#") {
			t.Errorf("element <%s%s> links out of the page", m[1], m[2])
		}
	}
	if strings.Count(page, "<style>") != 1 {
		t.Errorf("%d <style> elements, want the page's one", strings.Count(page, "<style>"))
	}
	for i, r := range page {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Fatalf("control character %U at byte %d: %q", r, i, page[max(i-40, 0):min(i+40, len(page))])
		}
	}
}

// TestSelfContained: the page loads nothing. No src, no link to anything
// but its own anchors, no url(), no @import, and a policy that allows no
// source but inline style and the one script, by its hash.
func TestSelfContained(t *testing.T) {
	page := string(runs(t, report.Run{Name: "pty", Transcript: transcripttest.Load(t, ptyFixture)}))
	m := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no Content-Security-Policy meta")
	}
	policy := html.UnescapeString(m[1])
	for _, want := range []string{"default-src 'none'", "style-src 'unsafe-inline'", "script-src 'sha256-"} {
		if !strings.Contains(policy, want) {
			t.Errorf("policy %q lacks %q", policy, want)
		}
	}
	if strings.Contains(policy, "unsafe-eval") || strings.Contains(policy, "script-src 'unsafe-inline'") {
		t.Errorf("policy %q lets scripts other than ours run", policy)
	}
	for _, bad := range []string{"src=", "url(", "@import", "http://", "https://", "//fonts"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, href := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(href[1], "#") {
			t.Errorf("link %q leaves the page", href[1])
		}
	}
}

// TestDeterministic: the same transcripts give the same bytes.
func TestDeterministic(t *testing.T) {
	rs := []report.Run{{Name: "pty", Transcript: transcripttest.Load(t, ptyFixture)}, {Name: "fin", Transcript: transcripttest.Load(t, "../examples/transcripts/finished.jsonl")}}
	if !bytes.Equal(runs(t, rs...), runs(t, rs...)) {
		t.Error("two reports of the same transcripts differ")
	}
}

// screenRows are the text of every screen row of the page, by epoch.
func screenRows(page string) [][]string {
	var out [][]string
	for _, scr := range strings.Split(page, `<div class="screen"`)[1:] {
		scr = scr[:strings.Index(scr, "\n</div>")]
		var rows []string
		for _, m := range regexp.MustCompile(`<span class="tx"[^>]*>(.*?)</span></div>`).FindAllStringSubmatch(scr, -1) {
			rows = append(rows, strings.TrimRight(html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], "")), " "))
		}
		out = append(out, rows)
	}
	return out
}

// TestPTYScreens: each epoch's screen is its recorded frame, in the
// colours and attributes the output set, with the cursor where the
// observation says, and the lines changed since the epoch before marked.
func TestPTYScreens(t *testing.T) {
	tr, vim := transcripttest.Load(t, ptyFixture), transcripttest.Load(t, vimFixture)
	page := string(runs(t, report.Run{Name: "pty", Transcript: tr}, report.Run{Name: "vim", Transcript: vim}))
	got := screenRows(page)
	var want [][]string
	for _, x := range []*transcript.Transcript{tr, vim} {
		for i := range x.Records {
			if o, ok := x.Records[i].Observation(); ok {
				want = append(want, o.Frame.Lines)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d screens, want %d", len(got), len(want))
	}
	for i := range want {
		if strings.Join(got[i], "\n") != strings.Join(want[i], "\n") {
			t.Errorf("epoch %d: screen\n%s\nwant the recorded frame\n%s", i, strings.Join(got[i], "\n"), strings.Join(want[i], "\n"))
		}
	}
	if strings.Contains(page, "does not reproduce") {
		t.Error("a screen fell back to the frame's plain text, though the output reproduces every frame")
	}
	if !strings.Contains(page, "50×10 · alternate screen") || !strings.Contains(page, "hello 世界 ") {
		t.Error("vim's alternate screen with its wide characters is not shown")
	}
	for _, want := range []string{
		`<span class="b" style="color:#cd0000;background-color:#1c1c1c">red bold</span>`, // SGR 1;31
		`<span class="u">under</span>`,                                         // SGR 4
		`<span style="color:#1c1c1c;background-color:#d0d0d0">rev</span>`,      // SGR 7
		`<span style="color:#0087ff;background-color:#1c1c1c">blue</span>`,     // 38;5;33
		`<span style="color:#d0d0d0;background-color:#00cd00">green bg</span>`, // 42
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// Epoch 1: the command's two lines, its output and the new prompt
	// changed; epoch 4 (ArrowUp) changed only the prompt line, where the
	// cursor now is, at column 50.
	epochs := strings.Split(page, `<section class="epoch"`)[1:]
	if n := strings.Count(epochs[1], `class="ln chg"`); n != 4 {
		t.Errorf("epoch 1: %d lines marked changed, want 4", n)
	}
	if n := strings.Count(epochs[4], `class="ln chg"`); n != 1 || !strings.Contains(epochs[4], "cursor row 8, column 50, visible") {
		t.Errorf("epoch 4: %d lines marked changed (want 1), cursor: %v", n, strings.Contains(epochs[4], "column 50"))
	}
	if strings.Count(epochs[4], `class="cur"`) != 1 {
		t.Error("epoch 4: the cursor cell is not marked once")
	}
}

// TestFrameNotReproduced: when the recorded output does not give the
// recorded frame, the page shows the frame's text and says so, rather
// than colours of a screen that was not recorded.
func TestFrameNotReproduced(t *testing.T) {
	data, err := os.ReadFile(ptyFixture)
	must(t, err)
	tampered := bytes.Replace(data, []byte(`"lines":["bash-5.2$"`), []byte(`"lines":["bash-5.2$ forged"`), 1)
	if bytes.Equal(tampered, data) {
		t.Fatal("the fixture's first frame is not as expected")
	}
	tr, err := transcript.Parse(tampered)
	must(t, err)
	page := string(runs(t, report.Run{Name: "t", Transcript: tr}))
	epochs := strings.Split(page, `<section class="epoch"`)[1:]
	if !strings.Contains(epochs[0], "does not reproduce this frame") || !strings.Contains(epochs[0], "bash-5.2$ forged") {
		t.Error("epoch 0: the frame the output does not give is not shown as recorded with a note")
	}
	if strings.Contains(epochs[1], "does not reproduce") {
		t.Error("epoch 1 is reproduced and must be styled")
	}
}

// TestVerdictsAndTiers: each ending and each tier is told apart by class
// and word.
func TestVerdictsAndTiers(t *testing.T) {
	for _, c := range []struct{ file, class, word string }{
		{"../examples/transcripts/finished.jsonl", `verdict ok`, "finished"},
		{"../examples/transcripts/failed.jsonl", `verdict failed`, "adapter-runtime-failed"},
		{"../examples/transcripts/unsupported.jsonl", `verdict unsupported`, "constraint-unsupported"},
		{ptyFixture, `verdict nonzero`, "exit code 3"},
	} {
		page := string(runs(t, report.Run{Name: c.file, Transcript: transcripttest.Load(t, c.file)}))
		if !strings.Contains(page, `class="`+c.class+`"`) || !strings.Contains(page, c.word) {
			t.Errorf("%s: want the verdict %q with %q", c.file, c.class, c.word)
		}
	}
	page := string(runs(t, report.Run{Name: "f", Transcript: transcripttest.Load(t, "../examples/transcripts/failed.jsonl")},
		report.Run{Name: "u", Transcript: transcripttest.Load(t, "../examples/transcripts/unsupported.jsonl")}))
	for _, want := range []string{`<span class="tier t-os">■ os</span>`, `<span class="tier t-delivered">▲ delivered</span>`, `<span class="tier t-unsupported">✕ unsupported</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the receipts lack %s", want)
		}
	}
}

// TestCompare: the two sides by seq, the divergent positions marked with
// their paths, the ignored paths with their counts; hostile values
// escaped.
func TestCompare(t *testing.T) {
	left, right := transcripttest.Load(t, "../examples/transcripts/finished.jsonl"), hostileRun(t)
	ig, err := compare.ParseIgnore("payload.subject")
	must(t, err)
	v := compare.Transcripts(left, right, ig)
	var b bytes.Buffer
	must(t, report.WriteCompare(&b, report.Comparison{Left: report.Run{Name: "left.jsonl", Transcript: left},
		Right: report.Run{Name: hostile[0], Transcript: right}, Verdict: v}))
	page := b.String()
	checkNoMarkup(t, page, hostile)
	if !strings.Contains(page, `<span class="word">divergent</span>`) || !strings.Contains(page, `<code>payload.subject</code>:`) {
		t.Error("no divergent verdict or ignored path")
	}
	if got, want := strings.Count(page, `class="div" data-stop`), len(v.Divergences); got != want {
		t.Errorf("%d divergent rows, want %d", got, want)
	}
	same := compare.Transcripts(left, left)
	b.Reset()
	must(t, report.WriteCompare(&b, report.Comparison{Left: report.Run{Name: "a", Transcript: left}, Right: report.Run{Name: "b", Transcript: left}, Verdict: same}))
	if !strings.Contains(b.String(), `<span class="word">equivalent</span>`) || strings.Contains(b.String(), `class="div"`) {
		t.Error("an equivalent comparison is not shown as one")
	}
}

// TestBatch: the summary counts each status, gives each entry's weakest
// tier, and links each to its run's section.
func TestBatch(t *testing.T) {
	var b bytes.Buffer
	must(t, report.WriteBatch(&b, report.Batch{Manifest: "m.jsonl", Entries: []report.BatchEntry{
		{Name: "fin", Status: "passed", Outcome: "run.finished", File: "fin.jsonl", Transcript: transcripttest.Load(t, "../examples/transcripts/finished.jsonl")},
		{Name: "pty", Status: "failed", Outcome: "run.finished", File: "pty.jsonl", Transcript: transcripttest.Load(t, ptyFixture)},
		{Name: "uns", Status: "unsupported", Outcome: "run.unsupported", Code: "constraint-unsupported", File: "uns.jsonl", Transcript: transcripttest.Load(t, "../examples/transcripts/unsupported.jsonl")},
		{Name: hostile[0], Status: "error", Message: hostile[4]},
	}}))
	page := b.String()
	checkNoMarkup(t, page, hostile)
	for _, want := range []string{"<b>1</b> passed", "<b>1</b> failed", "<b>1</b> unsupported", "<b>1</b> error", "<b>0</b> skipped",
		`<a href="#run-1">fin</a>`, `<a href="#run-2">pty</a>`, `<a href="#run-3">uns</a>`, `<section class="run" id="run-3">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the batch page lacks %s", want)
		}
	}
	rows := strings.Split(page[strings.Index(page, "<tbody>"):strings.Index(page, "</tbody>")], "\n<tr")
	if !strings.Contains(rows[1], "▲ delivered") || !strings.Contains(rows[2], "▲ delivered") || !strings.Contains(rows[3], "✕ unsupported") || !strings.Contains(rows[4], "<td>–</td>") {
		t.Errorf("weakest tiers per entry wrong:\n%s", strings.Join(rows, "\n"))
	}
}
