package replay

import (
	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/transcript"
)

// ReportFormat names Report's shape (the format member of replay --json).
const ReportFormat = "termverify-sandbox.replay/v1"

// Report is a replay's report, as replay --json prints it. A source that
// never ran has Replayed false and NotRun saying why, and nothing else;
// a replayed one names the new transcript, the new run's outcome (its
// terminal record's kind), whether its replay subject matches the
// source's and which members differ, and the comparison. Its JSON is a
// format: change it only with ReportFormat.
type Report struct {
	Format             string          `json:"format"`
	Source             string          `json:"source"`
	Replayed           bool            `json:"replayed"`
	NotRun             string          `json:"not_run,omitempty"`
	Transcript         string          `json:"transcript,omitempty"`
	Outcome            string          `json:"outcome,omitempty"`
	SubjectMatches     *bool           `json:"subject_matches,omitempty"`
	SubjectDifferences []string        `json:"subject_differences,omitempty"`
	Comparison         *compare.Report `json:"comparison,omitempty"`
}

// NotRunReport is the report on the source file named source that never
// ran, why being NotRun's answer.
func NotRunReport(source, why string) Report {
	return Report{Format: ReportFormat, Source: source, NotRun: why}
}

// Comparison is a replay's verdict: the source (left) against the new
// transcript (right) record by record, and the members of run.started's
// replay subject that differ.
type Comparison struct {
	Verdict            compare.Verdict
	SubjectDifferences []string // nil when the subjects match
}

// Compare compares the source with the transcript its replay wrote, as
// compare.Transcripts does, with the ignore paths given, and checks the
// replay subjects (compare.Subjects), which are disclosed, not enforced.
func Compare(src, replayed *transcript.Transcript, ignores ...compare.Ignore) Comparison {
	return Comparison{Verdict: compare.Transcripts(src, replayed, ignores...), SubjectDifferences: compare.Subjects(src, replayed)}
}

// SubjectMatches reports whether the replay subjects agree.
func (c *Comparison) SubjectMatches() bool { return len(c.SubjectDifferences) == 0 }

// Report is c as the report on the source file named source replayed
// into the file named out, whose run ended with outcome.
func (c *Comparison) Report(source, out, outcome string) Report {
	matches := c.SubjectMatches()
	cr := compare.NewReport(source, out, &c.Verdict)
	return Report{Format: ReportFormat, Source: source, Replayed: true, Transcript: out,
		Outcome: outcome, SubjectMatches: &matches, SubjectDifferences: c.SubjectDifferences, Comparison: &cr}
}
