package report

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
)

// script is the page's one script: keyboard navigation between epochs
// (and between compared records). It is allowed by its hash alone.
const script = `(function(){
var stops=Array.prototype.slice.call(document.querySelectorAll("[data-stop]"));
function at(){var h=location.hash.slice(1);for(var i=0;i<stops.length;i++){if(stops[i].id===h)return i;}
var y=window.scrollY+10;var k=-1;for(var j=0;j<stops.length;j++){if(stops[j].offsetTop<=y)k=j;}return k;}
function go(i){if(i<0||i>=stops.length)return;var s=stops[i];s.scrollIntoView({block:"start"});
history.replaceState(null,"","#"+s.id);
var cur=document.querySelectorAll(".here");for(var c=0;c<cur.length;c++)cur[c].classList.remove("here");
var links=document.querySelectorAll('a[href="#'+s.id+'"]');for(var l=0;l<links.length;l++)links[l].classList.add("here");}
document.body.setAttribute("data-stops",String(stops.length));
document.addEventListener("keydown",function(e){
if(e.altKey||e.ctrlKey||e.metaKey)return;
var i=at();
if(e.key==="ArrowRight"||e.key==="j"||e.key==="n"){go(i+1);e.preventDefault();}
else if(e.key==="ArrowLeft"||e.key==="k"||e.key==="p"){go(Math.max(i-1,0));e.preventDefault();}
else if(e.key==="Home"||e.key==="g"){go(0);e.preventDefault();}
else if(e.key==="End"||e.key==="G"){go(stops.length-1);e.preventDefault();}
});
})();`

// style is the page's style sheet, inline.
const style = `
:root{--ok:#1a7f37;--bad:#cf222e;--uns:#6e7781;--warn:#9a6700;--os:#1a7f37;--con:#0969da;--del:#bf8700;--line:#d0d7de}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff;line-height:1.4}
main{max-width:1200px;margin:0 auto;padding:1rem 1.5rem 4rem}
h1{font-size:1.5rem;margin:.5rem 0}
h2{font-size:1.25rem;margin:1.5rem 0 .5rem;border-bottom:1px solid var(--line)}
h3{font-size:1.05rem;margin:0 0 .4rem}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,monospace;font-size:.85rem}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;border:1px solid var(--line);padding:.4rem .6rem;margin:.3rem 0}
table{border-collapse:collapse;margin:.4rem 0;width:100%}
th,td{border:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
.verdict{border-left:.5rem solid;padding:.5rem 1rem;margin:.5rem 0;background:#f6f8fa}
.verdict.ok{border-color:var(--ok)}.verdict.nonzero{border-color:var(--warn)}.verdict.nonzero .word{color:var(--warn)}.verdict.failed{border-color:var(--bad)}.verdict.unsupported{border-color:var(--uns)}
.verdict .word{font-weight:700;font-size:1.2rem}
.verdict.ok .word{color:var(--ok)}.verdict.failed .word{color:var(--bad)}.verdict.unsupported .word{color:var(--uns)}
.tier{display:inline-block;padding:0 .45rem;border-radius:.6rem;font-weight:600;font-size:.85rem;border:1px solid}
.t-os{background:#dafbe1;color:var(--os);border-color:var(--os)}
.t-constructive{background:#ddf4ff;color:var(--con);border-color:var(--con)}
.t-delivered{background:#fff8c5;color:var(--warn);border-color:var(--del)}
.t-unsupported{background:#eaeef2;color:#57606a;border-color:#8c959f;border-style:dashed}
.t-other{background:#fff;color:#57606a;border-color:#8c959f}
nav.timeline{position:sticky;top:0;background:#ffffffee;border-bottom:1px solid var(--line);padding:.3rem 0;z-index:2}
nav.timeline a{display:inline-block;min-width:2.2rem;text-align:center;margin:.1rem;padding:.05rem .3rem;border:1px solid var(--line);border-radius:.3rem;text-decoration:none;color:#0969da;font-size:.85rem}
nav.timeline a.diag{border-color:var(--warn);background:#fff8c5}
nav.timeline a.here{background:#0969da;color:#fff}
nav.timeline .keys{color:#57606a;font-size:.8rem;margin-left:.5rem}
.epoch{border:1px solid var(--line);border-radius:.4rem;padding:.6rem .8rem;margin:.8rem 0;break-inside:avoid}
.epoch:target{outline:2px solid #0969da}
.meta{color:#57606a;font-size:.85rem}
.diag{color:var(--warn)}
.screen{display:inline-block;background:#1c1c1c;color:#d0d0d0;padding:.3rem 0;border-radius:.3rem;margin:.3rem 0;
font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,monospace;font-size:13px;line-height:1.25;
-webkit-print-color-adjust:exact;print-color-adjust:exact}
.ln{white-space:pre;display:flex}
.ln .no{color:#6e7781;width:2.6em;text-align:right;padding-right:.5em;user-select:none;flex:none}
.ln .mk{width:1em;flex:none;color:#f0b72f;user-select:none}
.ln .tx{flex:none;min-width:var(--w)}
.ln.chg .no{color:#f0b72f}
.b{font-weight:700}.d{opacity:.6}.i{font-style:italic}.u{text-decoration:underline}.s{text-decoration:line-through}.u.s{text-decoration:underline line-through}
.k{text-decoration:overline}
.cur{outline:1px solid #f0b72f}
.note{color:var(--warn);font-size:.85rem}
.cmp{table-layout:fixed}.cmp th:first-child{width:4rem}.cmp tr.div td{background:#ffebe9}.cmp tr.div td.seq{background:#ff818266}
.cmp summary{cursor:pointer}
@media print{details>pre{display:block}}
.cmp .paths{color:var(--bad);font-size:.85rem}
.ign{color:#57606a}
section.run+section.run,section.batch+section.run{border-top:3px solid var(--line);margin-top:2rem;padding-top:.5rem}
tr.fail td.st{color:var(--bad);font-weight:700}tr.pass td.st{color:var(--ok);font-weight:700}tr.uns td.st{color:var(--uns);font-weight:700}
@media print{nav.timeline{display:none}main{max-width:none;padding:0}.epoch{page-break-inside:avoid}}
`

// csp is the page's Content-Security-Policy: nothing may be loaded, inline
// style may be applied, and only the page's own script runs.
func csp() string {
	sum := sha256.Sum256([]byte(script))
	return "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src 'none'; form-action 'none'; base-uri 'none'"
}

// page is what every report's template is given.
type page struct {
	Title  string
	CSP    string
	Style  template.CSS
	Script template.JS
	Runs   []runView
	Batch  *batchView
	Cmp    *compareView
}

func newPage(title string) page {
	return page{Title: title, CSP: csp(), Style: template.CSS(style), Script: template.JS(script)}
}

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.Style}}</style>
</head>
<body>
<main>
{{- if .Batch}}{{template "batch" .Batch}}{{end}}
{{- if .Cmp}}{{template "compare" .Cmp}}{{end}}
{{- range .Runs}}{{template "run" .}}{{end}}
</main>
<script>{{.Script}}</script>
</body>
</html>
`

const runTemplate = `{{define "run"}}
<section class="run" id="{{.ID}}">
<h1>Run <code>{{.RunID}}</code></h1>
<p class="meta">{{.File}} · {{.Mode}} · {{.Records}} records · weakest tier <span class="tier {{.Weakest.Class}}">{{.Weakest.Symbol}} {{.Weakest.Word}}</span></p>
<div class="verdict {{.Verdict.Class}}" id="{{.ID}}-verdict">
<div><span class="word">{{.Verdict.Word}}</span>
<code>{{.Verdict.Kind}}</code> {{.Verdict.Summary}}</div>
{{- if .Verdict.Message}}<div>{{.Verdict.Message}}</div>{{end}}
{{- if .Verdict.Details}}<pre>{{.Verdict.Details}}</pre>{{end}}
</div>
<h2>Receipts</h2>
<table class="receipts" id="{{.ID}}-receipts">
<thead><tr><th>constraint</th><th>tier</th><th>mechanism / delivery</th><th>effective / reason</th></tr></thead>
<tbody>
{{- range .Receipts}}
<tr class="{{.Tier.Class}}"><td><code>{{.Constraint}}</code></td><td><span class="tier {{.Tier.Class}}">{{.Tier.Symbol}} {{.Tier.Word}}</span></td>
<td>{{if .Mechanism}}<code>{{.Mechanism}}</code>{{end}}{{if .Delivery}}<code>{{.Delivery}}</code>{{end}}</td>
<td>{{if .Reason}}{{.Reason}}{{else}}<code>{{.Effective}}</code>{{end}}</td></tr>
{{- else}}
<tr><td colspan="4">no receipts</td></tr>
{{- end}}
</tbody>
</table>
<h2>Epochs</h2>
{{- if .Epochs}}
<nav class="timeline" aria-label="epochs of {{.RunID}}">
{{- range .Epochs}}<a href="#{{.ID}}"{{if .Diagnostics}} class="diag"{{end}} title="epoch {{.N}}: {{.Title}}">{{.N}}</a>{{end}}
<span class="keys">keys: ← → (or j k) epoch, Home End</span>
</nav>
{{- end}}
{{- range .Epochs}}
<section class="epoch" id="{{.ID}}" data-stop>
<h3>Epoch {{.N}} <span class="meta">· {{.Title}} · observation seq {{.Seq}} · at_ms {{.AtMS}}</span></h3>
{{- range .Inputs}}
<div class="input"><span class="meta">seq {{.Seq}}</span> <code>{{.Kind}}</code> <code>{{.Payload}}</code></div>
{{- end}}
{{- range .Diagnostics}}
<div class="diag"><span class="meta">seq {{.Seq}}</span> diagnostic <code>{{.Code}}</code> {{.Message}}{{if .Details}} <code>{{.Details}}</code>{{end}}</div>
{{- end}}
{{- with .Screen}}
<div class="meta">{{.Cols}}×{{.Rows}} · {{.Mode}} screen · cursor {{.Cursor}} · {{.Changed}} line{{if ne .Changed 1}}s{{end}} changed (▌)</div>
{{- if .Note}}<div class="note">{{.Note}}</div>{{end}}
<div class="screen" role="img" aria-label="terminal screen">
{{- $w := .Cols}}
{{- range .Lines}}
<div class="ln{{if .Changed}} chg{{end}}"><span class="no">{{.N}}</span><span class="mk">{{if .Changed}}▌{{end}}</span><span class="tx" style="--w:{{$w}}ch">{{range .Spans}}<span{{if .Class}} class="{{.Class}}"{{end}}{{if .Style}} style="{{.Style}}"{{end}}>{{.Text}}</span>{{end}}</span></div>
{{- end}}
</div>
{{- end}}
{{- if .State}}
<div class="meta">state</div><pre>{{.State}}</pre>
{{- end}}
{{- if .Frame}}
<div class="meta">frame · {{.UI}}</div>
<pre class="frame">{{range .Frame}}{{.}}
{{end}}</pre>
{{- else if .UI}}<div class="meta">{{.UI}}</div>
{{- end}}
{{- range .Events}}
<div class="event"><span class="meta">event</span> <code>{{.Type}}</code> <code>{{.Data}}</code></div>
{{- end}}
{{- if .Process}}<div class="meta">process {{.Process}}</div>{{end}}
</section>
{{- else}}
<p>No observation was recorded.</p>
{{- end}}
{{- range .After}}
<div class="diag"><span class="meta">seq {{.Seq}}</span> diagnostic <code>{{.Code}}</code> {{.Message}}{{if .Details}} <code>{{.Details}}</code>{{end}}</div>
{{- end}}
</section>
{{end}}`

// templates parses the page and its parts.
func templates() (*template.Template, error) {
	t := template.New("page")
	for _, s := range []string{pageTemplate, runTemplate, batchTemplate, compareTemplate} {
		if _, err := t.Parse(s); err != nil {
			return nil, fmt.Errorf("report template: %w", err)
		}
	}
	return t, nil
}

func render(w io.Writer, p page) error {
	t, err := templates()
	if err != nil {
		return err
	}
	if err := t.ExecuteTemplate(w, "page", p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteRuns writes the report of one or more runs: one page, a section
// per run.
func WriteRuns(w io.Writer, runs []Run) error {
	if len(runs) == 0 {
		return errors.New("report: no transcript")
	}
	p := newPage("termverify report: " + termsafe.String(runs[0].Transcript.RunID))
	if len(runs) > 1 {
		p.Title = fmt.Sprintf("termverify report: %d runs", len(runs))
	}
	for i, r := range runs {
		if len(r.Transcript.Records) == 0 {
			return fmt.Errorf("report: %s has no records", r.Name)
		}
		p.Runs = append(p.Runs, newRunView(i, r))
	}
	return render(w, p)
}
