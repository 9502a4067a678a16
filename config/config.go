package config

import (
	"fmt"
	"strconv"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// Config is the requested deterministic constraints of one run, in the
// order of the constraint table (seed 003).
type Config struct {
	Seed       string // canonical decimal u64
	Clock      Clock
	Locale     string // "C" or an RFC 5646 tag, spelling kept
	Timezone   string // the requested zone; only "UTC" can be applied
	Terminal   Terminal
	Filesystem Filesystem
	Network    Network
}

// Clock is the manual clock request.
type Clock struct {
	Mode      string // always ClockManual in v1
	InitialMS int64
}

// Terminal is the requested terminal.
type Terminal struct {
	Columns, Rows int64
	Capabilities  []string // sorted, unique, non-empty
}

// Filesystem is the requested sandbox root.
type Filesystem struct {
	Mode   string // always FilesystemSandbox in v1
	RootID string
}

// Network is the requested network policy.
type Network struct {
	Mode    string     // NetworkDeny or NetworkAllowList
	Allowed []HostPort // NetworkAllowList only; sorted by host then port, unique
}

// HostPort is one allow-list entry.
type HostPort struct {
	Host string
	Port int64
}

// The constraint values of v1, spelled as both protocols carry them. They
// are defined here only: netpolicy's Mode, the negotiation in receipts and
// the spawn environment's TERMVERIFY_NETWORK all name these constants.
const (
	// ClockManual is the only clock mode: time moves only by input.
	ClockManual = "manual"
	// FilesystemSandbox is the only filesystem mode: a root mapped by id.
	FilesystemSandbox = "sandbox"
	// NetworkDeny allows no network beyond loopback.
	NetworkDeny = "deny"
	// NetworkAllowList allows TCP to the listed host:port pairs only.
	NetworkAllowList = "allow-list"
)

// Error is a config shape violation. Member names the offending top-level
// constraint ("" for the config object itself); Rule is a stable id.
type Error struct {
	Member string
	Rule   string
	Detail string
}

func (e *Error) Error() string {
	if e.Member == "" {
		return fmt.Sprintf("%s: config %s", e.Rule, e.Detail)
	}
	return fmt.Sprintf("%s: config %s %s", e.Rule, e.Member, e.Detail)
}

// Rules of Decode.
const (
	RuleType       = "config.type"
	RuleMembers    = "config.members"
	RuleSeed       = "config.seed"
	RuleClock      = "config.clock"
	RuleLocale     = "config.locale"
	RuleTimezone   = "config.timezone"
	RuleTerminal   = "config.terminal"
	RuleFilesystem = "config.filesystem"
	RuleNetwork    = "config.network"
)

// IsExtension reports whether a member name is an uninterpreted x- extension,
// admitted in every closed object.
func IsExtension(name string) bool { return canon.IsExtension(name) }

// Decode checks v against every rule of run.started.payload.config (the same
// shape session.hello carries) and returns it typed. It stops at the first
// violation. x- members are accepted and not kept.
func Decode(v *canon.Value) (Config, error) {
	var c Config
	if v.Kind != canon.Object {
		return c, &Error{Rule: RuleType, Detail: "must be an object"}
	}
	for _, name := range []string{"seed", "clock", "locale", "timezone", "terminal", "filesystem", "network"} {
		if _, ok := v.Get(name); !ok {
			return c, &Error{Rule: RuleMembers, Detail: "is incomplete: missing " + name}
		}
	}
	for _, m := range v.Members {
		switch m.Key {
		case "seed", "clock", "locale", "timezone", "terminal", "filesystem", "network":
		default:
			if !IsExtension(m.Key) {
				return c, &Error{Rule: RuleMembers, Detail: "has an unknown member " + canon.Quote(m.Key)}
			}
		}
	}
	var err error
	get := func(name string) *canon.Value { x, _ := v.Get(name); return x }
	if c.Seed, err = decodeSeed(get("seed")); err != nil {
		return c, err
	}
	if c.Clock, err = decodeClock(get("clock")); err != nil {
		return c, err
	}
	if c.Locale, err = decodeLocale(get("locale")); err != nil {
		return c, err
	}
	if c.Timezone, err = decodeTimezone(get("timezone")); err != nil {
		return c, err
	}
	if c.Terminal, err = decodeTerminal(get("terminal")); err != nil {
		return c, err
	}
	if c.Filesystem, err = decodeFilesystem(get("filesystem")); err != nil {
		return c, err
	}
	if c.Network, err = decodeNetwork(get("network")); err != nil {
		return c, err
	}
	return c, nil
}

func bad(member, rule, format string, args ...any) *Error {
	return &Error{Member: member, Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

// closedMembers checks that obj has every required member and nothing but
// allowed and x- members.
func closedMembers(obj *canon.Value, member, rule string, required []string, optional ...string) error {
	if obj.Kind != canon.Object {
		return bad(member, rule, "must be an object")
	}
	if missing, unknown := obj.CheckClosed(required, optional); missing != "" {
		return bad(member, rule, "is missing member %s", missing)
	} else if unknown != "" {
		return bad(member, rule, "has an unknown member %s", canon.Quote(unknown))
	}
	return nil
}

// ValidSeed reports whether s is a canonical decimal unsigned 64-bit integer:
// "0", or a nonzero digit followed by digits, at most 2^64-1.
func ValidSeed(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

func decodeSeed(v *canon.Value) (string, error) {
	if v.Kind != canon.String || !ValidSeed(v.Str) {
		return "", bad("seed", RuleSeed, "must be a canonical decimal string of an unsigned 64-bit integer")
	}
	return v.Str, nil
}

func decodeClock(v *canon.Value) (Clock, error) {
	if err := closedMembers(v, "clock", RuleClock, []string{"mode", "initial_ms"}); err != nil {
		return Clock{}, err
	}
	mode, _ := v.Get("mode")
	if mode.Kind != canon.String || mode.Str != ClockManual {
		return Clock{}, bad("clock", RuleClock, "mode must be %q", ClockManual)
	}
	ms, _ := v.Get("initial_ms")
	n, ok := ms.Int()
	if !ok || n < 0 {
		return Clock{}, bad("clock", RuleClock, "initial_ms must be a non-negative integer")
	}
	return Clock{Mode: ClockManual, InitialMS: n}, nil
}

func decodeLocale(v *canon.Value) (string, error) {
	if v.Kind != canon.String || !ValidLocale(v.Str) {
		return "", bad("locale", RuleLocale, "must be \"C\" or a well-formed RFC 5646 language tag")
	}
	return v.Str, nil
}

func decodeTimezone(v *canon.Value) (string, error) {
	if v.Kind != canon.String || v.Str == "" {
		return "", bad("timezone", RuleTimezone, "must be a non-empty string")
	}
	return v.Str, nil
}

func positive(v *canon.Value) (int64, bool) {
	n, ok := v.Int()
	return n, ok && n > 0
}

func decodeTerminal(v *canon.Value) (Terminal, error) {
	if err := closedMembers(v, "terminal", RuleTerminal, []string{"columns", "rows", "capabilities"}); err != nil {
		return Terminal{}, err
	}
	var t Terminal
	cols, _ := v.Get("columns")
	rows, _ := v.Get("rows")
	var ok1, ok2 bool
	t.Columns, ok1 = positive(cols)
	t.Rows, ok2 = positive(rows)
	if !ok1 || !ok2 {
		return Terminal{}, bad("terminal", RuleTerminal, "columns and rows must be positive integers")
	}
	caps, _ := v.Get("capabilities")
	if caps.Kind != canon.Array {
		return Terminal{}, bad("terminal", RuleTerminal, "capabilities must be an array")
	}
	t.Capabilities = make([]string, 0, len(caps.Items))
	for i := range caps.Items {
		it := &caps.Items[i]
		if it.Kind != canon.String || it.Str == "" {
			return Terminal{}, bad("terminal", RuleTerminal, "capabilities must be non-empty strings")
		}
		if i > 0 && !(caps.Items[i-1].Str < it.Str) {
			return Terminal{}, bad("terminal", RuleTerminal, "capabilities must be sorted and unique")
		}
		t.Capabilities = append(t.Capabilities, it.Str)
	}
	return t, nil
}

func decodeFilesystem(v *canon.Value) (Filesystem, error) {
	if err := closedMembers(v, "filesystem", RuleFilesystem, []string{"mode", "root_id"}); err != nil {
		return Filesystem{}, err
	}
	mode, _ := v.Get("mode")
	if mode.Kind != canon.String || mode.Str != FilesystemSandbox {
		return Filesystem{}, bad("filesystem", RuleFilesystem, "mode must be %q", FilesystemSandbox)
	}
	id, _ := v.Get("root_id")
	if id.Kind != canon.String || id.Str == "" {
		return Filesystem{}, bad("filesystem", RuleFilesystem, "root_id must be a non-empty string")
	}
	return Filesystem{Mode: FilesystemSandbox, RootID: id.Str}, nil
}

func decodeNetwork(v *canon.Value) (Network, error) {
	if v.Kind != canon.Object {
		return Network{}, bad("network", RuleNetwork, "must be an object")
	}
	mode, ok := v.Get("mode")
	if !ok || mode.Kind != canon.String {
		return Network{}, bad("network", RuleNetwork, "mode must be %q or %q", NetworkDeny, NetworkAllowList)
	}
	switch mode.Str {
	case NetworkDeny:
		if err := closedMembers(v, "network", RuleNetwork, []string{"mode"}); err != nil {
			return Network{}, err
		}
		return Network{Mode: NetworkDeny}, nil
	case NetworkAllowList:
		if err := closedMembers(v, "network", RuleNetwork, []string{"mode", "allowed"}); err != nil {
			return Network{}, err
		}
	default:
		return Network{}, bad("network", RuleNetwork, "mode must be %q or %q", NetworkDeny, NetworkAllowList)
	}
	list, _ := v.Get("allowed")
	if list.Kind != canon.Array {
		return Network{}, bad("network", RuleNetwork, "allowed must be an array")
	}
	n := Network{Mode: NetworkAllowList, Allowed: make([]HostPort, 0, len(list.Items))}
	for i := range list.Items {
		e := &list.Items[i]
		if err := closedMembers(e, "network", RuleNetwork, []string{"host", "port"}); err != nil {
			return Network{}, err
		}
		host, _ := e.Get("host")
		port, _ := e.Get("port")
		p, ok := port.Int()
		if host.Kind != canon.String || host.Str == "" || !ok || p < 1 || p > 65535 {
			return Network{}, bad("network", RuleNetwork, "allowed entries need a non-empty host and a port 1-65535")
		}
		hp := HostPort{Host: host.Str, Port: p}
		if i > 0 && !hostPortLess(n.Allowed[i-1], hp) {
			return Network{}, bad("network", RuleNetwork, "allowed must be sorted by host then port, without duplicates")
		}
		n.Allowed = append(n.Allowed, hp)
	}
	return n, nil
}

func hostPortLess(a, b HostPort) bool {
	if a.Host != b.Host {
		return a.Host < b.Host
	}
	return a.Port < b.Port
}

// Value returns the config as a JSON value (no x- members), the shape both
// protocols carry.
func (c Config) Value() canon.Value {
	caps := make([]canon.Value, len(c.Terminal.Capabilities))
	for i, s := range c.Terminal.Capabilities {
		caps[i] = canon.StringValue(s)
	}
	return canon.ObjectValue(
		canon.M("seed", canon.StringValue(c.Seed)),
		canon.M("clock", c.ClockValue()),
		canon.M("locale", canon.StringValue(c.Locale)),
		canon.M("timezone", canon.StringValue(c.Timezone)),
		canon.M("terminal", canon.ObjectValue(
			canon.M("columns", canon.IntValue(c.Terminal.Columns)),
			canon.M("rows", canon.IntValue(c.Terminal.Rows)),
			canon.M("capabilities", canon.ArrayValue(caps...)),
		)),
		canon.M("filesystem", canon.ObjectValue(
			canon.M("mode", canon.StringValue(FilesystemSandbox)),
			canon.M("root_id", canon.StringValue(c.Filesystem.RootID)),
		)),
		canon.M("network", c.NetworkValue()),
	)
}

// ClockValue returns the clock member's JSON value.
func (c Config) ClockValue() canon.Value {
	return canon.ObjectValue(
		canon.M("mode", canon.StringValue(ClockManual)),
		canon.M("initial_ms", canon.IntValue(c.Clock.InitialMS)),
	)
}

// NetworkValue returns the network member's JSON value.
func (c Config) NetworkValue() canon.Value {
	if c.Network.Mode != NetworkAllowList {
		return canon.ObjectValue(canon.M("mode", canon.StringValue(NetworkDeny)))
	}
	allowed := make([]canon.Value, len(c.Network.Allowed))
	for i, hp := range c.Network.Allowed {
		allowed[i] = canon.ObjectValue(
			canon.M("host", canon.StringValue(hp.Host)),
			canon.M("port", canon.IntValue(hp.Port)),
		)
	}
	return canon.ObjectValue(
		canon.M("mode", canon.StringValue(NetworkAllowList)),
		canon.M("allowed", canon.ArrayValue(allowed...)),
	)
}

// Member returns the JSON value of one constraint's config member, the
// value an applied receipt's effective must equal.
func (c Config) Member(name string) (canon.Value, bool) {
	v := c.Value()
	m, ok := v.Get(name)
	if !ok {
		return canon.Value{}, false
	}
	return *m, true
}

// ValidIdentifier reports whether s matches the termverify identifier
// grammar [a-z0-9._-]+ (run ids, record ids, selector tokens).
func ValidIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
