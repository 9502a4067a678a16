package supervisor

import (
	"context"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// ProbeReport says, per constraint, the strongest tier a run on this host
// would get now, and why: what `probe` prints and encodes with --json.
// The tiers are negotiated as a run negotiates them (receipts.Negotiate,
// with --isolation auto), from what sandbox.Probe found confined.
type ProbeReport struct {
	Rootless bool `json:"rootless"`
	// RootlessReason says why the rootless path is taken; "" when not.
	RootlessReason string            `json:"rootless_reason,omitempty"`
	Constraints    []ConstraintProbe `json:"constraints"` // the seven, in receipt order
	AllowList      ConstraintProbe   `json:"network_allow_list"`
	// PTYTerminal is the terminal receipt run --pty would get: os where
	// the os sandbox starts (the trial makes no terminal; run checks the
	// one it makes), refused elsewhere.
	PTYTerminal ConstraintProbe          `json:"pty_terminal"`
	Mechanisms  []sandbox.MechanismProbe `json:"mechanisms"`
	Applied     *sandbox.Applied         `json:"applied,omitempty"` // from the trial sandbox, when it started
}

// ConstraintProbe is one constraint's strongest available tier.
type ConstraintProbe struct {
	Constraint receipts.Constraint `json:"constraint"`
	Tier       receipts.Tier       `json:"tier"` // receipts.None: unsupported here
	Reason     string              `json:"reason"`
	// Fix says what would give the os tier where it is not available
	// (sandbox's fix table); "" when it is, or when only delivery applies.
	Fix string `json:"fix,omitempty"`
}

// Probe tries the sandbox's mechanisms (sandbox.Probe; stateDir "" means
// the default) and negotiates each constraint against what they confine.
// Nothing it starts outlives it.
func Probe(ctx context.Context, stateDir string) ProbeReport {
	p := sandbox.Probe(ctx, stateDir)
	rep := ProbeReport{Rootless: p.Rootless, RootlessReason: p.RootlessReason, Mechanisms: p.Mechanisms, Applied: p.Applied}

	fs, nw := mechanisms(p.Filesystem, p.Network, config.NetworkDeny)
	out := receipts.Negotiate(probeRequest(config.NetworkDeny, fs, nw))
	for _, r := range out.Receipts {
		cp := ConstraintProbe{Constraint: r.Constraint, Tier: r.Tier}
		switch {
		case r.Constraint == receipts.Filesystem:
			cp.Reason = "mount namespace + pivot_root: " + confinedOr(p.Filesystem)
			cp.Fix = p.FilesystemFix
		case r.Constraint == receipts.Network:
			cp.Reason = "new network namespace: " + confinedOr(p.Network)
			cp.Fix = p.NetworkFix
		case r.Delivery != nil:
			cp.Reason = string(r.Delivery.Channel)
			if tz, ok := r.Delivery.Env[receipts.EnvTZ]; ok {
				cp.Reason += " " + receipts.EnvTZ + "=" + tz + ", for exactly " + receipts.TimezoneUTC
			}
		}
		rep.Constraints = append(rep.Constraints, cp)
	}

	// The allow-list is a network mode of its own: without the forwarders
	// it cannot be delivered, so the negotiation refuses it (tier none).
	fs, nw = mechanisms(p.Filesystem, p.AllowList, config.NetworkAllowList)
	out = receipts.Negotiate(probeRequest(config.NetworkAllowList, fs, nw))
	rep.AllowList = ConstraintProbe{Constraint: receipts.Network, Tier: receipts.None,
		Reason: "forwarder inside the sandbox's network namespace: " + confinedOr(p.AllowList), Fix: p.AllowListFix}
	if r, ok := receiptOf(out, receipts.Network); ok && r.Status == receipts.Applied {
		rep.AllowList.Tier = r.Tier
	}
	rep.PTYTerminal = ConstraintProbe{Constraint: receipts.Terminal, Tier: receipts.None,
		Reason: "run --pty needs the os sandbox: " + confinedOr(p.Filesystem), Fix: p.FilesystemFix}
	if p.Filesystem.Confined {
		rep.PTYTerminal.Tier, rep.PTYTerminal.Fix = receipts.OS, ""
		rep.PTYTerminal.Reason = "a pty of the sandbox's own devpts; run checks its size at start"
	}
	return rep
}

// probeRequest is a run that asks for nothing a host could refuse
// (UTC, no terminal capabilities, a mapped root) and takes the strongest
// tier available for the rest.
func probeRequest(mode string, fs, nw receipts.Mechanism) receipts.Request {
	return receipts.Request{
		Timezone: receipts.TimezoneUTC, RootID: "probe", RootMapped: true, RootDir: sandbox.Workdir,
		NetworkMode: mode, Isolation: receipts.IsolationAuto,
		Filesystem: fs, Network: nw,
	}
}

func receiptOf(out receipts.Outcome, c receipts.Constraint) (receipts.Receipt, bool) {
	for _, r := range out.Receipts {
		if r.Constraint == c {
			return r, true
		}
	}
	return receipts.Receipt{}, false
}

// confinedOr is a probe reason's tail: "ok", or why it is not confined.
func confinedOr(c sandbox.Confinement) string {
	if c.Confined {
		return "ok"
	}
	return c.Reason
}
