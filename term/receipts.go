package term

import (
	"errors"
	"strings"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// Receipts says, per constraint and in the transcript receipts' words,
// what the daemon applied and at which tier, from what the sandbox
// verified before the program ran. Nothing is claimed that was not
// applied and checked: the program reads the host's clock, gets no seed
// and no TZ (those are unsupported), and is handed LANG (delivered).
func (d *Daemon) Receipts() (interminai.ReceiptsData, error) {
	if d.box == nil {
		return interminai.ReceiptsData{}, errors.New("the program did not start: there is no sandbox to report on")
	}
	return d.receiptsOf(d.box.Applied()), nil
}

// receiptsOf is Receipts from a, what the sandbox reports applied: the
// one step from mechanisms to tiers, apart so that it can be tested with
// a mechanism that failed.
func (d *Daemon) receiptsOf(a sandbox.Applied) interminai.ReceiptsData {
	confined := func(c receipts.Constraint, conf sandbox.Confinement) interminai.ReceiptData {
		if conf.Confined {
			return interminai.ReceiptData{Constraint: string(c), Status: string(receipts.Applied), Tier: string(receipts.OS), Mechanism: strings.Join(conf.Checks, ",")}
		}
		return unsupported(c, "not confined: "+conf.Reason)
	}
	term := unsupported(receipts.Terminal, "the terminal's size was not verified")
	if m, ok := a.Mechanism(sandbox.MechanismTerminalSize); ok && m.Applied {
		term = interminai.ReceiptData{Constraint: string(receipts.Terminal), Status: string(receipts.Applied), Tier: string(receipts.OS), Mechanism: "devpts-terminal"}
	}
	out := interminai.ReceiptsData{}
	for _, c := range receipts.Constraints() {
		var r interminai.ReceiptData
		switch c {
		case receipts.Seed:
			r = unsupported(c, "term hands the program no seed")
		case receipts.Clock:
			r = unsupported(c, "the program reads the host's clock")
		case receipts.Locale:
			r = interminai.ReceiptData{Constraint: string(c), Status: string(receipts.Applied), Tier: string(receipts.Delivered), Mechanism: "spawn-env LANG=" + envLANG}
		case receipts.Timezone:
			r = unsupported(c, "term sets no TZ")
		case receipts.Terminal:
			r = term
		case receipts.Filesystem:
			r = confined(c, a.Filesystem)
		case receipts.Network:
			r = confined(c, a.Network)
		}
		if dr, ok := d.rec.delivered(c); ok {
			r = dr // a recorded session delivers what run --pty does
		}
		if d.isolation == sandbox.IsolationNone && (c == receipts.Terminal || c == receipts.Filesystem || c == receipts.Network) {
			// auto ran it without the sandbox: delivered at most.
			r = d.downgradedReceipts(c, a)
		}
		out.Receipts = append(out.Receipts, r)
	}
	return out
}

func unsupported(c receipts.Constraint, why string) interminai.ReceiptData {
	return interminai.ReceiptData{Constraint: string(c), Status: string(receipts.Unsupported), Reason: why}
}

// sandboxStatus is STATUS's description of the sandbox, the tiers of
// Receipts; nil where the program never started.
func (d *Daemon) sandboxStatus() *interminai.SandboxData {
	rs, err := d.Receipts()
	if err != nil {
		return nil
	}
	tier := map[string]string{}
	for _, r := range rs.Receipts {
		t := r.Tier
		if t == "" {
			t = r.Status
		}
		tier[r.Constraint] = t
	}
	return &interminai.SandboxData{Isolation: string(d.isolation), Filesystem: tier[string(receipts.Filesystem)],
		Network: tier[string(receipts.Network)], Terminal: tier[string(receipts.Terminal)], Downgrade: d.downgrade}
}
