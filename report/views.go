package report

import (
	"fmt"
	"io"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/transcript"
)

// BatchEntry is one entry of a batch as its summary says it ended, with
// its transcript when it left one.
type BatchEntry struct {
	Name    string
	Status  string // passed, failed, unsupported, error, skipped (batch.Status)
	Outcome string // the terminal record's kind, "" without a transcript
	Code    string
	Message string
	// File names the transcript; Transcript is it parsed, nil when the
	// entry left none or it could not be read (Problem says why).
	File       string
	Transcript *transcript.Transcript
	// Load, when Transcript is nil, reads it when the page reaches the
	// entry, so that a batch's transcripts are in memory one at a time.
	Load    func() (*transcript.Transcript, error)
	Problem string
}

// Batch is a batch's summary.
type Batch struct {
	Manifest string
	Entries  []BatchEntry
}

type batchView struct {
	Manifest string
	Counts   []countView
	Rows     []batchRow
}

type countView struct {
	Status string
	N      int
}

type batchRow struct {
	Name, Status, Class, Outcome, Code, Message, Problem string
	Weakest                                              *tierView
	Link                                                 string // #run-N
}

// WriteBatch writes a batch's page: the summary (how many passed, failed,
// were unsupported…; per entry its status and weakest tier), then each
// entry's run, linked from its row.
func WriteBatch(w io.Writer, b Batch) error {
	p := newPage("termverify batch: " + termsafe.String(b.Manifest))
	bv := &batchView{Manifest: termsafe.String(b.Manifest)}
	counts := map[string]int{}
	for _, e := range b.Entries {
		counts[e.Status]++
		row := batchRow{Name: termsafe.String(e.Name), Status: termsafe.String(e.Status), Outcome: termsafe.String(e.Outcome),
			Code: termsafe.String(e.Code), Message: termsafe.String(e.Message), Problem: termsafe.String(e.Problem)}
		switch e.Status {
		case "passed":
			row.Class = "pass"
		case "unsupported", "skipped":
			row.Class = "uns"
		default:
			row.Class = "fail"
		}
		tr := e.Transcript
		if tr == nil && e.Load != nil {
			var err error
			if tr, err = e.Load(); err != nil {
				row.Problem = termsafe.String("its transcript could not be read: " + err.Error())
				tr = nil
			}
		}
		if tr != nil && len(tr.Records) > 0 {
			rv := newRunView(len(p.Runs), Run{Name: e.File, Transcript: tr})
			row.Link = "#" + rv.ID
			wk := rv.Weakest
			row.Weakest = &wk
			p.Runs = append(p.Runs, rv)
		}
		bv.Rows = append(bv.Rows, row)
	}
	for _, s := range []string{"passed", "failed", "unsupported", "error", "skipped"} {
		bv.Counts = append(bv.Counts, countView{Status: s, N: counts[s]})
	}
	p.Batch = bv
	return render(w, p)
}

const batchTemplate = `{{define "batch"}}
<section class="batch" id="summary">
<h1>Batch <code>{{.Manifest}}</code></h1>
<p class="totals">{{range $i, $c := .Counts}}{{if $i}} · {{end}}<b>{{$c.N}}</b> {{$c.Status}}{{end}}</p>
<table class="summary">
<thead><tr><th>entry</th><th>status</th><th>outcome</th><th>weakest tier</th><th>why</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="{{.Class}}"><td>{{if .Link}}<a href="{{.Link}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td class="st">{{.Status}}</td>
<td>{{if .Outcome}}<code>{{.Outcome}}</code>{{end}}{{if .Code}} <code>{{.Code}}</code>{{end}}</td>
<td>{{with .Weakest}}<span class="tier {{.Class}}">{{.Symbol}} {{.Word}}</span>{{else}}–{{end}}</td>
<td>{{.Message}}{{if .Problem}} <span class="note">{{.Problem}}</span>{{end}}</td></tr>
{{- end}}
</tbody>
</table>
</section>
{{end}}`

// Comparison is two transcripts and compare's verdict on them.
type Comparison struct {
	Left, Right Run
	Verdict     compare.Verdict
}

type compareView struct {
	Left, Right  string
	LeftRecords  int
	RightRecords int
	Equivalent   bool
	First        int
	Ignored      []ignoredView
	Excluded     string
	Rows         []compareRow
	Divergent    int
}

type ignoredView struct {
	Path string
	N    int
}

type compareRow struct {
	ID          string
	Seq         int
	Divergent   bool
	Left, Right *sideView
	Differences []diffView
}

type sideView struct{ Kind, Payload string }

type diffView struct{ Path, Left, Right string }

// WriteCompare writes two transcripts side by side, record by record by
// seq, the positions compare found divergent highlighted and open with
// their differences (the equal ones folded, a click away), and the
// --ignore paths with what each dropped.
func WriteCompare(w io.Writer, c Comparison) error {
	p := newPage("termverify compare: " + termsafe.String(c.Left.Name) + " vs " + termsafe.String(c.Right.Name))
	v := &c.Verdict
	cv := &compareView{Left: termsafe.String(c.Left.Name), Right: termsafe.String(c.Right.Name),
		LeftRecords: v.LeftRecords, RightRecords: v.RightRecords, Equivalent: v.Equivalent, First: v.FirstDivergentSeq(),
		Excluded: compare.Excluded, Divergent: len(v.Divergences)}
	for _, ig := range v.Ignored {
		cv.Ignored = append(cv.Ignored, ignoredView{Path: termsafe.String(ig.Path), N: ig.Differences})
	}
	div := map[int]compare.Divergence{}
	for _, d := range v.Divergences {
		div[d.Seq] = d
	}
	side := func(t *transcript.Transcript, i int) *sideView {
		if i >= len(t.Records) {
			return nil
		}
		r := &t.Records[i]
		return &sideView{Kind: termsafe.String(r.Kind), Payload: prettyJSON(compare.Encode(r.Payload()))}
	}
	n := max(len(c.Left.Transcript.Records), len(c.Right.Transcript.Records))
	for i := 0; i < n; i++ {
		row := compareRow{ID: fmt.Sprintf("seq-%d", i), Seq: i, Left: side(c.Left.Transcript, i), Right: side(c.Right.Transcript, i)}
		if d, ok := div[i]; ok {
			row.Divergent = true
			for _, x := range d.Differences {
				row.Differences = append(row.Differences, diffView{Path: termsafe.String(x.Path), Left: shown(x.Left), Right: shown(x.Right)})
			}
		}
		cv.Rows = append(cv.Rows, row)
	}
	p.Cmp = cv
	return render(w, p)
}

func shown(s *string) string {
	if s == nil {
		return "(absent)"
	}
	return termsafe.String(*s)
}

const compareTemplate = `{{define "compare"}}
<section class="compare">
<h1>Compare</h1>
<div class="verdict {{if .Equivalent}}ok{{else}}failed{{end}}" id="verdict">
<span class="word">{{if .Equivalent}}equivalent{{else}}divergent{{end}}</span>
{{if not .Equivalent}}{{.Divergent}} of {{len .Rows}} positions differ, the first at <a href="#seq-{{.First}}">seq {{.First}}</a>{{end}}
<span class="meta">({{.Excluded}} not compared)</span>
</div>
<table class="sides"><tr><th>left</th><td><code>{{.Left}}</code> · {{.LeftRecords}} records</td></tr>
<tr><th>right</th><td><code>{{.Right}}</code> · {{.RightRecords}} records</td></tr></table>
{{- if .Ignored}}
<h2>Ignored paths</h2>
<ul class="ign">{{range .Ignored}}<li><code>{{.Path}}</code>: {{.N}} difference{{if ne .N 1}}s{{end}} dropped</li>{{end}}</ul>
{{- end}}
{{- if not .Equivalent}}
<nav class="timeline" aria-label="divergent positions">{{range .Rows}}{{if .Divergent}}<a href="#{{.ID}}" class="diag">{{.Seq}}</a>{{end}}{{end}}
<span class="keys">keys: ← → (or j k) difference</span></nav>
{{- end}}
<table class="cmp">
<thead><tr><th>seq</th><th>left</th><th>right</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr id="{{.ID}}"{{if .Divergent}} class="div" data-stop{{end}}><td class="seq">{{.Seq}}</td>
{{- $open := .Divergent}}
<td>{{with .Left}}<details{{if $open}} open{{end}}><summary><code>{{.Kind}}</code></summary><pre>{{.Payload}}</pre></details>{{else}}<i>(no record)</i>{{end}}</td>
<td>{{with .Right}}<details{{if $open}} open{{end}}><summary><code>{{.Kind}}</code></summary><pre>{{.Payload}}</pre></details>{{else}}<i>(no record)</i>{{end}}</td></tr>
{{- if .Differences}}
<tr class="div"><td></td><td colspan="2" class="paths">{{range .Differences}}<div><code>{{.Path}}</code>: <code>{{.Left}}</code> → <code>{{.Right}}</code></div>{{end}}</td></tr>
{{- end}}
{{- end}}
</tbody>
</table>
</section>
{{end}}`
