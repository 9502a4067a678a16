package receipts

import "fmt"

// AdapterID and AdapterVersion identify this tool in a transcript's
// subject.adapter selector. A request may not name another adapter.
const (
	AdapterID      = "termverify-sandbox"
	AdapterVersion = "0.1.0"
)

// Constraint names one of the seven deterministic constraints.
type Constraint string

// The seven constraints, in the order their receipts must appear.
const (
	Seed       Constraint = "seed"
	Clock      Constraint = "clock"
	Locale     Constraint = "locale"
	Timezone   Constraint = "timezone"
	Terminal   Constraint = "terminal"
	Filesystem Constraint = "filesystem"
	Network    Constraint = "network"
)

// Constraints lists the seven constraints in table (receipt) order.
func Constraints() []Constraint {
	return []Constraint{Seed, Clock, Locale, Timezone, Terminal, Filesystem, Network}
}

// Tier is the enforcement tier a receipt claims
// (termverify.enforcement-tier/v1).
type Tier string

// The tiers, strongest first. None is not a protocol word: it marks a
// constraint that cannot be applied at any tier (an unsupported receipt).
const (
	OS           Tier = "os"
	Constructive Tier = "constructive"
	Delivered    Tier = "delivered"
	None         Tier = ""
)

// Strength orders tiers: a larger value is a stronger claim.
func (t Tier) Strength() int {
	switch t {
	case OS:
		return 3
	case Constructive:
		return 2
	case Delivered:
		return 1
	}
	return 0
}

// Status is a capability result's status.
type Status string

// The two receipt statuses.
const (
	Applied     Status = "applied"
	Unsupported Status = "unsupported"
)

// Channel is a delivered receipt's delivery channel.
type Channel string

// The delivery channels of transcript/v1.
const (
	SpawnEnv    Channel = "spawn-env"
	HelloConfig Channel = "hello-config"
	WireMessage Channel = "wire-message"
)

// Delivery is a delivered-tier receipt's delivery record: how the subject
// was handed the value. Channel SpawnEnv carries Env (non-empty) and, for
// the filesystem constraint only, Cwd; HelloConfig and WireMessage carry
// nothing else. The transcript writes and parses this type.
type Delivery struct {
	Channel Channel
	Env     map[string]string // spawn-env only
	Cwd     string            // spawn-env, filesystem only
}

// Receipt is one capability result. Negotiate decides it; the transcript
// writes it (taking the effective value from the config) and reads it back.
type Receipt struct {
	Constraint Constraint
	Status     Status
	Tier       Tier      // applied only
	Delivery   *Delivery // delivered tier only
	Mechanism  string    // the x-mechanism word; written for the os tier only
	Reason     string    // unsupported only
}

// The refusal codes: run.unsupported's code in a transcript, and
// session.unsupported's on the control wire. These two are the only ones.
const (
	// CodeUnsupported: the run cannot apply the constraint at all.
	CodeUnsupported = "constraint-unsupported"
	// CodeNotEnforced: the run cannot enforce the constraint as strongly
	// as asked (--isolation os, --require).
	CodeNotEnforced = "constraint-not-enforced"
)

// Refusal is a run.unsupported: the constraint a run could not apply, with
// a refusal code and a human-readable message. Negotiate returns one; a
// subject's session.unsupported makes one too.
type Refusal struct {
	Constraint Constraint
	Code       string // CodeUnsupported or CodeNotEnforced
	Message    string
}

// Isolation is the run's --isolation policy.
type Isolation string

// The isolation policies of PRODUCT.md §3.
const (
	// IsolationOS refuses to run unless filesystem and network get the os tier.
	IsolationOS Isolation = "os"
	// IsolationAuto takes the strongest tier available and reports downgrades.
	IsolationAuto Isolation = "auto"
	// IsolationNone runs without namespaces: everything is delivered.
	IsolationNone Isolation = "none"
)

// ParseIsolation parses an --isolation value.
func ParseIsolation(s string) (Isolation, error) {
	switch i := Isolation(s); i {
	case IsolationOS, IsolationAuto, IsolationNone:
		return i, nil
	}
	return "", fmt.Errorf("isolation %q: want os, auto or none", s)
}
