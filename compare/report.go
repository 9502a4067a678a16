package compare

// ReportFormat names Report's shape (the format member of compare --json).
const ReportFormat = "termverify-sandbox.compare/v1"

// Report is a Verdict as the compare command's --json prints it, and as
// replay's report holds it (replay.Report.Comparison): the two sides named
// by their files, the first divergent seq (nil when equivalent), the
// member never compared, and each divergence with its kinds (nil for a
// side that has no record there). Its JSON is a format: change it only
// with ReportFormat.
type Report struct {
	Format            string             `json:"format"`
	Left              ReportSide         `json:"left"`
	Right             ReportSide         `json:"right"`
	Equivalent        bool               `json:"equivalent"`
	FirstDivergentSeq *int               `json:"first_divergent_seq"`
	Excluded          []string           `json:"excluded"`
	Ignored           []Ignored          `json:"ignored"`
	Divergences       []ReportDivergence `json:"divergences"`
}

// ReportSide is one side of a Report: its file name as the caller gave it
// and its record count.
type ReportSide struct {
	File    string `json:"file"`
	Records int    `json:"records"`
}

// ReportDivergence is a Divergence in a Report.
type ReportDivergence struct {
	Seq         int          `json:"seq"`
	LeftKind    *string      `json:"left_kind"`
	RightKind   *string      `json:"right_kind"`
	Differences []Difference `json:"differences"`
}

// NewReport is v's Report, the sides named leftName and rightName.
func NewReport(leftName, rightName string, v *Verdict) Report {
	r := Report{
		Format:     ReportFormat,
		Left:       ReportSide{File: leftName, Records: v.LeftRecords},
		Right:      ReportSide{File: rightName, Records: v.RightRecords},
		Equivalent: v.Equivalent,
		Excluded:   []string{Excluded},
		Ignored:    v.Ignored,
	}
	if seq := v.FirstDivergentSeq(); seq >= 0 {
		r.FirstDivergentSeq = &seq
	}
	kind := func(k string) *string {
		if k == "" {
			return nil
		}
		return &k
	}
	r.Divergences = make([]ReportDivergence, len(v.Divergences))
	for i, d := range v.Divergences {
		r.Divergences[i] = ReportDivergence{Seq: d.Seq, LeftKind: kind(d.LeftKind), RightKind: kind(d.RightKind), Differences: d.Differences}
	}
	return r
}
