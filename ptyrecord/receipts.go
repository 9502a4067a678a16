package ptyrecord

import (
	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// TerminalMechanism is what a started sandbox applied for the terminal in
// PTY mode: a terminal of its own (checked to be a pty master of its
// devpts when it arrived) whose size the sandbox found to be the
// requested one before the program was released, so before any of its
// code could change it. console says whether the sandbox made a terminal;
// a is what it reports applied. Only for the os backend: isolation none's
// host pty (term's --isolation auto) has its size checked too, but it is
// on the host's devpts, and its caller must not ask this function.
func TerminalMechanism(console bool, a sandbox.Applied) receipts.Mechanism {
	if !console {
		return receipts.Mechanism{Tier: receipts.None, Reason: "the sandbox made no terminal"}
	}
	m, ok := a.Mechanism(sandbox.MechanismTerminalSize)
	switch {
	case !ok:
		return receipts.Mechanism{Tier: receipts.None, Reason: "the terminal's size was not checked"}
	case !m.Applied:
		return receipts.Mechanism{Tier: receipts.None, Reason: "the terminal's size is not the requested one: " + m.Reason}
	}
	return receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismPTY}
}

// Mechanisms turns what the sandbox confines (verified by a started
// sandbox, or tried by sandbox.Probe) into negotiation input: the
// filesystem, and the network under mode (config.NetworkDeny or
// config.NetworkAllowList). The tier is decided here, never in the
// sandbox: os for what it confines, none with its reason for what it does
// not.
func Mechanisms(fs, nw sandbox.Confinement, mode string) (fsm, nwm receipts.Mechanism) {
	word := receipts.MechanismNetNS
	if mode == config.NetworkAllowList {
		word = receipts.MechanismAllowNS
	}
	return mechanismOf(fs, receipts.MechanismMountNS), mechanismOf(nw, word)
}

func mechanismOf(c sandbox.Confinement, word string) receipts.Mechanism {
	if !c.Confined {
		return receipts.Mechanism{Tier: receipts.None, Reason: c.Reason}
	}
	return receipts.Mechanism{Tier: receipts.OS, Word: word}
}

// WriteApplied writes one applied receipt, an os-tier one with its
// x-mechanism word.
func WriteApplied(w *transcript.Writer, rc receipts.Receipt) error {
	return w.Applied(rc.Constraint, rc.Tier, rc.Delivery, XMechanism(rc)...)
}

// XMechanism names an os-tier receipt's mechanism in an x-mechanism
// member: a deterministic word (never a path, pid or namespace id), so
// auditors see how the constraint was enforced and transcripts stay
// replay-comparable.
func XMechanism(rc receipts.Receipt) []canon.Member {
	if rc.Tier != receipts.OS || rc.Mechanism == "" {
		return nil
	}
	return []canon.Member{canon.M("x-mechanism", canon.StringValue(rc.Mechanism))}
}
