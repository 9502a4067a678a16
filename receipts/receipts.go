package receipts

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
