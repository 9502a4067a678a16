package receipts

import (
	"fmt"
	"strings"
)

// Report is the audit view of one transcript's receipts: what the
// `receipts` command prints and encodes with --json.
type Report struct {
	RunID    string `json:"run_id"`
	Outcome  string `json:"outcome"` // run.finished, run.failed, run.unsupported, or "" if none
	Receipts []Row  `json:"receipts"`
	// Weakest is the weakest tier among applied receipts ("" when none
	// applied); a run's constraint claims are no stronger than it.
	Weakest Tier `json:"weakest"`
	// Complete is true when all seven constraints were applied.
	Complete bool `json:"complete"`
}

// Row is one receipt in a Report.
type Row struct {
	Constraint Constraint `json:"constraint"`
	Status     Status     `json:"status"`
	Tier       Tier       `json:"tier,omitempty"`
	Effective  string     `json:"effective,omitempty"` // canonical JSON text
	Channel    Channel    `json:"channel,omitempty"`
	Env        []string   `json:"env,omitempty"` // NAME=VALUE, sorted
	Cwd        string     `json:"cwd,omitempty"`
	Mechanism  string     `json:"mechanism,omitempty"`
	Reason     string     `json:"reason,omitempty"`
}

// NewReport returns the audit view of a run's receipts: rows in table
// order, as NewRow makes them, and outcome the terminal record's kind.
// Weakest and Complete are computed from the rows.
func NewReport(runID, outcome string, rows []Row) Report {
	if rows == nil {
		rows = []Row{} // JSON: "receipts": [], never null
	}
	r := Report{RunID: runID, Outcome: outcome, Receipts: rows}
	r.Finish()
	return r
}

// NewRow returns rc's row. effective is the canonical JSON text of an
// applied receipt's effective value ("" for an unsupported one); the
// delivered environment is listed sorted, as EnvList does.
func NewRow(rc Receipt, effective string) Row {
	row := Row{Constraint: rc.Constraint, Status: rc.Status, Tier: rc.Tier, Effective: effective,
		Mechanism: rc.Mechanism, Reason: rc.Reason}
	if d := rc.Delivery; d != nil {
		row.Channel, row.Env, row.Cwd = d.Channel, EnvList(d.Env), d.Cwd
	}
	return row
}

// Finish fills Weakest and Complete from the rows.
func (r *Report) Finish() {
	r.Weakest = None
	applied := 0
	for _, row := range r.Receipts {
		if row.Status != Applied {
			continue
		}
		applied++
		if r.Weakest == None || row.Tier.Strength() < r.Weakest.Strength() {
			r.Weakest = row.Tier
		}
	}
	r.Complete = applied == len(Constraints())
}

// Violation is one --require policy a report does not meet.
type Violation struct {
	Constraint Constraint `json:"constraint"`
	Want       Tier       `json:"want"`
	Got        string     `json:"got"` // the tier, or the status when not applied
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: requires %s, transcript has %s", v.Constraint, v.Want, v.Got)
}

// Check returns the required tiers the report does not meet, in table order.
// A constraint with no applied receipt meets no requirement.
func (r *Report) Check(require map[Constraint]Tier) []Violation {
	var out []Violation
	for _, c := range Constraints() {
		want, ok := require[c]
		if !ok {
			continue
		}
		got := "no receipt"
		var tier Tier
		for _, row := range r.Receipts {
			if row.Constraint == c {
				if row.Status == Applied {
					tier, got = row.Tier, string(row.Tier)
				} else {
					got = string(row.Status)
				}
			}
		}
		if tier.Strength() < want.Strength() {
			out = append(out, Violation{Constraint: c, Want: want, Got: got})
		}
	}
	return out
}

// Table renders the report as an aligned text table for terminals.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s: %s\n", r.RunID, orDash(r.Outcome))
	fmt.Fprintf(&b, "%-11s %-11s %-10s %-12s %s\n", "CONSTRAINT", "STATUS", "TIER", "CHANNEL", "DETAIL")
	for _, row := range r.Receipts {
		detail := row.Effective
		switch {
		case row.Status == Unsupported:
			detail = row.Reason
		case row.Mechanism != "":
			detail += "  via " + row.Mechanism
		case len(row.Env) > 0:
			detail += "  env " + strings.Join(row.Env, " ")
			if row.Cwd != "" {
				detail += " cwd " + row.Cwd
			}
		}
		fmt.Fprintf(&b, "%-11s %-11s %-10s %-12s %s\n", row.Constraint, row.Status, orDash(string(row.Tier)), orDash(string(row.Channel)), detail)
	}
	weakest := string(r.Weakest)
	if !r.Complete {
		weakest += " (not all seven constraints applied)"
	}
	fmt.Fprintf(&b, "weakest tier: %s\n", orDash(weakest))
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
