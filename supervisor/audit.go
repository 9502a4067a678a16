package supervisor

import (
	"fmt"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Audit parses a transcript strictly and returns the audit view of its
// receipts (the receipts command). A transcript that is not valid is an
// error: its receipts prove nothing.
func Audit(data []byte) (receipts.Report, error) {
	t, err := transcript.Parse(data)
	if err != nil {
		return receipts.Report{}, err
	}
	r := receipts.Report{RunID: t.RunID, Outcome: t.Terminal(), Receipts: []receipts.Row{}}
	rcs := t.Receipts()
	caps := 0
	for i := range t.Records {
		rec := &t.Records[i]
		if rec.Kind != transcript.KindCapability {
			continue
		}
		rc := rcs[caps]
		caps++
		row := receipts.Row{Constraint: rc.Constraint, Status: rc.Status, Tier: rc.Tier, Reason: rc.Reason}
		if rc.Status == receipts.Applied {
			eff, err := canon.Marshal(&rc.Effective)
			if err != nil {
				return r, fmt.Errorf("record %d: %w", rec.Seq, err)
			}
			row.Effective = string(eff)
		}
		if d := rc.Delivery; d != nil {
			row.Channel, row.Env, row.Cwd = d.Channel, receipts.EnvList(d.Env), d.Cwd
		}
		if m, ok := rec.Payload().Get("x-mechanism"); ok && m.Kind == canon.String {
			row.Mechanism = m.Str
		}
		r.Receipts = append(r.Receipts, row)
	}
	r.Finish()
	return r, nil
}
