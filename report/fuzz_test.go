package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/transcripttest"
	"github.com/termverify/termverify-sandbox/report"
	"github.com/termverify/termverify-sandbox/transcript"
)

// FuzzSubjectText: whatever text a subject writes — in its state, frame,
// events, mode, input, diagnostics and failure, and as the file's name —
// none of it becomes markup. The oracle: the page for the text has
// exactly as many markup characters (< > " ') as the page for a plain
// "x" in the same places, since every one of them in the text must be
// escaped; and the element checks hold.
func FuzzSubjectText(f *testing.F) {
	for _, h := range hostile {
		f.Add(h)
	}
	f.Add("<a href=\"javascript:x\">y</a>")
	f.Add("</textarea><!--")
	f.Fuzz(func(t *testing.T, s string) {
		s = "x" + strings.ToValidUTF8(s, "?")
		page, ok := subjectPage(t, s)
		if !ok {
			t.Skip("the codec refuses it") // not a transcript a report is made of
		}
		base, _ := subjectPage(t, "x")
		for _, c := range []string{"<", ">", `"`, "'"} {
			if got, want := strings.Count(page, c), strings.Count(base, c); got != want {
				t.Errorf("%d %q in the page, %d with plain text: the subject's text made markup", got, c, want)
			}
		}
		checkNoMarkup(t, page, []string{s})
	})
}

// subjectPage is the report of a control/v1 run whose subject wrote s
// everywhere it writes; false when the codec refuses s.
func subjectPage(t *testing.T, s string) (string, bool) {
	t.Helper()
	var b bytes.Buffer
	w := transcript.NewWriter(&b, "fuzz")
	transcripttest.Begin(t, w, 80, 2, false)
	v := canon.StringValue(s)
	mode := s
	obs := transcript.Observation{State: canon.ObjectValue(canon.M("s", v)),
		Events: []transcript.Event{{Type: "terminal.output", Data: canon.ObjectValue(canon.M("chunk", v))}},
		UI:     transcript.UI{Mode: &mode}, Frame: &transcript.Frame{Lines: []string{s, ""}, Columns: 80, Rows: 2}}
	if w.Observe(obs) != nil || w.Input(input.Text{Text: s}) != nil ||
		w.Diagnostic(transcript.Diagnostic{Code: s, Message: s, Details: &v}) != nil ||
		w.Fail(transcript.Failure{Code: transcript.CodeAdapterRuntimeFailed, Message: s, Details: &v}) != nil || w.Close() != nil {
		return "", false
	}
	tr, err := transcript.Parse(b.Bytes())
	if err != nil {
		return "", false
	}
	return string(runs(t, report.Run{Name: s, Transcript: tr})), true
}
