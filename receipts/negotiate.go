package receipts

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/termverify/termverify-sandbox/config"
)

// The spawn-environment variable names upstream's JSONL adapter delivers,
// so a subject written for upstream runs unchanged.
const (
	EnvSeed     = "TERMVERIFY_SEED"
	EnvClock    = "TERMVERIFY_CLOCK_INITIAL_MS"
	EnvLocale   = "TERMVERIFY_LOCALE"
	EnvTimezone = "TERMVERIFY_TIMEZONE"
	EnvTZ       = "TZ"
	EnvFSRoot   = "TERMVERIFY_FS_ROOT"
	EnvNetwork  = "TERMVERIFY_NETWORK"
	TZValueUTC  = "UTC0"
	TimezoneUTC = "UTC"
)

// The x-mechanism words of os-tier receipts: deterministic names of what
// the sandbox did (never a path, pid or namespace id), so that auditors see
// how a constraint was enforced and reruns stay byte-identical.
const (
	MechanismMountNS = "mount-namespace+pivot-root"   // filesystem
	MechanismNetNS   = "network-namespace"            // network, deny
	MechanismAllowNS = "network-namespace+forwarders" // network, allow-list
	MechanismPTY     = "sandbox-devpts-pty"           // terminal, PTY mode
)

// Mechanism is what the sandbox did for one constraint, reported by the
// code that applied it and checked it. Tier is OS only when the mechanism is
// in force and was verified; otherwise it is None and Reason says why.
type Mechanism struct {
	Tier   Tier
	Word   string // deterministic mechanism name for the receipt's x-mechanism
	Reason string // why the os tier is not available, for stderr and unsupported reasons
}

// Request is what negotiation needs from a run request: the requested
// values, and where the filesystem root maps on the host.
type Request struct {
	Seed           string
	ClockInitialMS int64
	Locale         string
	Timezone       string
	TerminalCaps   int // number of requested terminal capabilities
	// PTY is run --pty: the subject's terminal is a pseudoterminal the
	// sandbox made, and Terminal is what the sandbox applied for it.
	PTY         bool
	Terminal    Mechanism
	RootID      string // filesystem.root_id
	RootMapped  bool   // a --root ID=DIR names RootID
	RootDir     string // delivered-tier working directory (host path, or in-sandbox path)
	NetworkMode string // config.NetworkDeny or config.NetworkAllowList
	Isolation   Isolation
	Require     map[Constraint]Tier // minimum tier per constraint
	Filesystem  Mechanism           // what the sandbox applied for the filesystem
	Network     Mechanism           // what the sandbox applied for the network
}

// Outcome is a finished negotiation: the receipts in table order through
// the first unsupported one, the spawn environment the delivered receipts
// promise, and the refusal if any. Downgrades lists, for --isolation auto,
// what fell back from os to delivered and why.
type Outcome struct {
	Receipts   []Receipt
	Env        map[string]string
	Refusal    *Refusal
	Downgrades []string
}

// Negotiate decides every receipt, in table order, from the request and
// what the sandbox really applied. It never states a tier stronger than
// req.Filesystem / req.Network report, and it stops at the first constraint
// that cannot be applied or that --isolation / --require rejects.
func Negotiate(req Request) Outcome {
	out := Outcome{Env: map[string]string{}}
	for _, c := range Constraints() {
		r, refusal, downgrade := decide(c, req)
		if refusal == nil {
			if min, ok := req.Require[c]; ok && r.Tier.Strength() < min.Strength() {
				refusal = &Refusal{Constraint: c, Code: CodeNotEnforced,
					Message: fmt.Sprintf("%s: --require asks for %s, this run can give %s", c, min, r.Tier)}
			}
		}
		if refusal != nil {
			out.Receipts = append(out.Receipts, Receipt{Constraint: c, Status: Unsupported, Reason: refusal.Message})
			out.Refusal = refusal
			return out
		}
		if downgrade != "" {
			out.Downgrades = append(out.Downgrades, downgrade)
		}
		if r.Delivery != nil {
			for k, v := range r.Delivery.Env {
				out.Env[k] = v
			}
		}
		out.Receipts = append(out.Receipts, r)
	}
	return out
}

func delivered(c Constraint, env map[string]string) Receipt {
	return Receipt{Constraint: c, Status: Applied, Tier: Delivered, Delivery: &Delivery{Channel: SpawnEnv, Env: env}}
}

func decide(c Constraint, req Request) (Receipt, *Refusal, string) {
	switch c {
	case Seed:
		return delivered(c, map[string]string{EnvSeed: req.Seed}), nil, ""
	case Clock:
		return delivered(c, map[string]string{EnvClock: strconv.FormatInt(req.ClockInitialMS, 10)}), nil, ""
	case Locale:
		return delivered(c, map[string]string{EnvLocale: req.Locale}), nil, ""
	case Timezone:
		if req.Timezone != TimezoneUTC {
			return Receipt{}, &Refusal{Constraint: c, Code: CodeUnsupported,
				Message: fmt.Sprintf("timezone %q: only UTC can be applied in v1 (no zone data is consulted)", req.Timezone)}, ""
		}
		return delivered(c, map[string]string{EnvTZ: TZValueUTC, EnvTimezone: TimezoneUTC}), nil, ""
	case Terminal:
		if req.PTY {
			return ptyTerminal(req)
		}
		if req.TerminalCaps > 0 {
			return Receipt{}, &Refusal{Constraint: c, Code: CodeUnsupported,
				Message: "terminal capabilities cannot be applied in control mode (no terminal: the subject speaks over pipes)"}, ""
		}
		return Receipt{Constraint: c, Status: Applied, Tier: Delivered, Delivery: &Delivery{Channel: HelloConfig}}, nil, ""
	case Filesystem:
		if !req.RootMapped {
			return Receipt{}, &Refusal{Constraint: c, Code: CodeUnsupported,
				Message: fmt.Sprintf("filesystem root_id %q is not mapped (pass --root %s=DIR)", req.RootID, req.RootID)}, ""
		}
		return osOrDelivered(c, req, req.Filesystem, func() Receipt {
			r := delivered(c, map[string]string{EnvFSRoot: req.RootDir})
			r.Delivery.Cwd = req.RootDir
			return r
		})
	case Network:
		if req.NetworkMode == config.NetworkAllowList && (req.Network.Tier != OS || req.Isolation == IsolationNone) {
			// An allow-list handed over in a variable would be a promise
			// the subject need not keep: it cannot be honestly delivered.
			code := CodeUnsupported
			if req.Isolation == IsolationOS {
				code = CodeNotEnforced
			}
			return Receipt{}, &Refusal{Constraint: c, Code: code,
				Message: "network allow-list needs a network namespace: " + reasonOr(req.Network.Reason, "isolation none")}, ""
		}
		return osOrDelivered(c, req, req.Network, func() Receipt {
			return delivered(c, map[string]string{EnvNetwork: config.NetworkDeny})
		})
	}
	return Receipt{}, &Refusal{Constraint: c, Code: CodeUnsupported, Message: "unknown constraint"}, ""
}

// ptyTerminal decides the terminal receipt of PTY mode. The terminal is
// the kernel's: a pseudoterminal of the sandbox's own devpts, its size set
// before the program starts and checked after. Nothing is delivered, so
// the tier is os or the run is refused; no capability is offered.
func ptyTerminal(req Request) (Receipt, *Refusal, string) {
	if req.TerminalCaps > 0 {
		return Receipt{}, &Refusal{Constraint: Terminal, Code: CodeUnsupported,
			Message: "terminal capabilities cannot be applied in PTY mode: v1 offers none"}, ""
	}
	if req.Terminal.Tier != OS {
		code := CodeUnsupported
		if req.Isolation == IsolationOS {
			code = CodeNotEnforced
		}
		return Receipt{}, &Refusal{Constraint: Terminal, Code: code,
			Message: "PTY mode needs a terminal of the sandbox's own: " + reasonOr(req.Terminal.Reason, "not applied")}, ""
	}
	return Receipt{Constraint: Terminal, Status: Applied, Tier: OS, Mechanism: req.Terminal.Word}, nil, ""
}

func osOrDelivered(c Constraint, req Request, m Mechanism, deliver func() Receipt) (Receipt, *Refusal, string) {
	if m.Tier == OS && req.Isolation != IsolationNone {
		return Receipt{Constraint: c, Status: Applied, Tier: OS, Mechanism: m.Word}, nil, ""
	}
	if req.Isolation == IsolationOS {
		return Receipt{}, &Refusal{Constraint: c, Code: CodeNotEnforced,
			Message: fmt.Sprintf("%s: --isolation os needs the os tier: %s", c, reasonOr(m.Reason, "not applied"))}, ""
	}
	downgrade := ""
	if req.Isolation == IsolationAuto {
		downgrade = fmt.Sprintf("%s: delivered, not os (%s)", c, reasonOr(m.Reason, "not applied"))
	}
	return deliver(), nil, downgrade
}

func reasonOr(reason, fallback string) string {
	if reason == "" {
		return fallback
	}
	return reason
}

// ParseRequire parses a --require value: "filesystem=os,network=os".
func ParseRequire(s string) (map[Constraint]Tier, error) {
	req := map[Constraint]Tier{}
	if strings.TrimSpace(s) == "" {
		return req, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, tier, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("require %q: want constraint=tier", part)
		}
		c := Constraint(name)
		if !c.Valid() {
			return nil, fmt.Errorf("require %q: unknown constraint %q (want one of %s)", part, name, constraintList())
		}
		t := Tier(tier)
		if t.Strength() == 0 {
			return nil, fmt.Errorf("require %q: unknown tier %q (want os, constructive or delivered)", part, tier)
		}
		if prev, dup := req[c]; dup && prev != t {
			return nil, fmt.Errorf("require: %s given twice", c)
		}
		req[c] = t
	}
	return req, nil
}

// Valid reports whether c is one of the seven constraints.
func (c Constraint) Valid() bool {
	for _, x := range Constraints() {
		if x == c {
			return true
		}
	}
	return false
}

func constraintList() string {
	var names []string
	for _, c := range Constraints() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// EnvList returns env as sorted NAME=VALUE strings.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
