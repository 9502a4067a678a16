package netpolicy

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/termverify/termverify-sandbox/config"
)

// Mode is a network constraint's mode, spelled as config spells it.
type Mode string

// The two modes of the network constraint (config.NetworkDeny and
// config.NetworkAllowList).
const (
	// Deny gives the subject a network namespace with only loopback.
	Deny Mode = config.NetworkDeny
	// AllowList gives the subject loopback plus one forwarder per allowed
	// (host, port); everything else is unreachable.
	AllowList Mode = config.NetworkAllowList
)

// HostPort is one allow-list entry. Host is an IP literal (IPv6 without
// brackets) or a host name; Port is a TCP port.
type HostPort struct {
	Host string
	Port int
}

// String returns h as "host:port", bracketing an IPv6 literal, so that
// ParseHostPort(h.String()) returns h for every h that ParseHostPort accepts.
func (h HostPort) String() string {
	return net.JoinHostPort(h.Host, strconv.Itoa(h.Port))
}

// Compare orders entries by host (byte-wise) then port: the order the
// transcript requires of an allow-list.
func (h HostPort) Compare(o HostPort) int {
	return cmp.Or(strings.Compare(h.Host, o.Host), cmp.Compare(h.Port, o.Port))
}

// Policy is a network constraint as requested. Allowed must be empty when
// Mode is Deny.
type Policy struct {
	Mode    Mode
	Allowed []HostPort
}

// ErrInvalid is matched (with errors.Is) by every *PolicyError, so callers
// that only need "bad request" need not inspect the rule.
var ErrInvalid = errors.New("invalid network policy")

// PolicyError reports why Validate or ParseHostPort refused its input.
// Callers use errors.AsType[*netpolicy.PolicyError](err) and branch on Rule.
type PolicyError struct {
	Index int    // position in Policy.Allowed; -1 for the mode or for ParseHostPort
	Rule  string // stable id: "mode.unknown", "deny.allowed", "hostport.syntax", "host.empty", "host.name", "host.address", "port.range"
	Value string // the offending text
	Err   error  // cause, if any; returned by Unwrap
}

func (e *PolicyError) Error() string {
	var b strings.Builder
	b.WriteString("network policy")
	if e.Index >= 0 {
		fmt.Fprintf(&b, ": allowed[%d]", e.Index)
	}
	fmt.Fprintf(&b, ": %s %q", e.Rule, e.Value)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause, if any.
func (e *PolicyError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalid }

// Validate checks that the mode is known, that a deny policy allows nothing,
// and that every entry has a usable host and a port in 1–65535. It accepts
// entries in any order and with duplicates: the transcript requires the
// allow-list sorted by (host, port) and unique, and callers that record it
// use Sorted for that; Resolve merges duplicates.
//
// Validate is stricter than the transcript schema (which accepts any
// non-empty host string) because host names are written into the sandbox's
// /etc/hosts: a name must be an RFC 1123 host name (letters, digits, '-',
// and '_' in dot-separated labels, no trailing dot, not all-numeric in its
// last label), and an IP literal must be an address a listener can bind
// (no zone, not unspecified, multicast, broadcast or IPv6 link-local).
func (p Policy) Validate() error {
	switch p.Mode {
	case Deny:
		if len(p.Allowed) > 0 {
			return &PolicyError{Index: -1, Rule: "deny.allowed", Value: p.Allowed[0].String()}
		}
		return nil
	case AllowList:
	default:
		return &PolicyError{Index: -1, Rule: "mode.unknown", Value: string(p.Mode)}
	}
	for i, hp := range p.Allowed {
		if err := checkHostPort(hp); err != nil {
			err.Index = i
			return err
		}
	}
	return nil
}

// Sorted returns a copy of p with Allowed sorted by (host, port) and
// duplicates removed: the form termverify.transcript/v1 requires.
func (p Policy) Sorted() Policy {
	if p.Allowed == nil {
		return p
	}
	a := slices.Clone(p.Allowed)
	slices.SortFunc(a, HostPort.Compare)
	p.Allowed = slices.Compact(a)
	return p
}

// ParseHostPort parses a --allow value: "host:port", or "[ipv6]:port". The
// port is decimal without sign or leading zeros, so that an accepted s equals
// the result's String. Errors are *PolicyError with Index -1.
func ParseHostPort(s string) (HostPort, error) {
	var host, port string
	if rest, ok := strings.CutPrefix(s, "["); ok {
		h, p, ok := strings.Cut(rest, "]")
		if !ok || !strings.HasPrefix(p, ":") || !strings.Contains(h, ":") {
			return HostPort{}, &PolicyError{Index: -1, Rule: "hostport.syntax", Value: s,
				Err: errors.New("brackets are only for an IPv6 literal: [addr]:port")}
		}
		host, port = h, p[1:]
	} else {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return HostPort{}, &PolicyError{Index: -1, Rule: "hostport.syntax", Value: s,
				Err: errors.New("missing :port")}
		}
		host, port = s[:i], s[i+1:]
		if strings.Contains(host, ":") {
			return HostPort{}, &PolicyError{Index: -1, Rule: "hostport.syntax", Value: s,
				Err: errors.New("an IPv6 literal needs brackets: [addr]:port")}
		}
	}
	n, err := parsePort(port)
	if err != nil {
		return HostPort{}, &PolicyError{Index: -1, Rule: "port.range", Value: port, Err: err}
	}
	hp := HostPort{Host: host, Port: n}
	if perr := checkHostPort(hp); perr != nil {
		return HostPort{}, perr
	}
	return hp, nil
}

// parsePort accepts exactly the decimal spellings strconv.Itoa produces for
// 1–65535, which keeps ParseHostPort and HostPort.String inverse.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, errors.New("want a decimal port 1-65535")
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, errors.New("want a decimal port 1-65535")
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, errors.New("want a decimal port 1-65535")
	}
	return n, nil
}

// checkHostPort returns a *PolicyError (Index -1) or nil; a typed nil is
// never converted to error here, so callers test it before returning it.
func checkHostPort(hp HostPort) *PolicyError {
	if hp.Port < 1 || hp.Port > 65535 {
		return &PolicyError{Index: -1, Rule: "port.range", Value: strconv.Itoa(hp.Port)}
	}
	if hp.Host == "" {
		return &PolicyError{Index: -1, Rule: "host.empty", Value: hp.Host}
	}
	if a, err := netip.ParseAddr(hp.Host); err == nil {
		if err := checkAddr(a); err != nil {
			return &PolicyError{Index: -1, Rule: "host.address", Value: hp.Host, Err: err}
		}
		return nil
	}
	if err := checkName(hp.Host); err != nil {
		return &PolicyError{Index: -1, Rule: "host.name", Value: hp.Host, Err: err}
	}
	return nil
}

// Reasons an address cannot be a route's listen or dial address.
var (
	errZone        = errors.New("zoned address")
	errUnspecified = errors.New("unspecified address")
	errMulticast   = errors.New("multicast or broadcast address")
	errLinkLocal6  = errors.New("IPv6 link-local address needs a zone")
)

// checkAddr refuses addresses a forwarder must not listen on or dial: an
// unspecified address would listen on every address of the namespace and
// dial the host itself, and some resolvers answer 0.0.0.0 for blocked names.
func checkAddr(a netip.Addr) error {
	a = a.Unmap()
	switch {
	case a.Zone() != "":
		return errZone
	case a.IsUnspecified():
		return errUnspecified
	case a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return errMulticast
	case a.Is6() && a.IsLinkLocalUnicast():
		return errLinkLocal6
	}
	return nil
}

// checkName accepts RFC 1123 host names (plus '_', which internal names
// use). It is strict because the name goes verbatim into /etc/hosts, where
// whitespace, '#' or a newline would forge entries, and because a numeric
// last label ("1.2.3.04", "0x7f.1") is read as an address by some resolvers.
func checkName(s string) error {
	if len(s) > 253 {
		return errors.New("longer than 253 bytes")
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return errors.New("empty or over-long label")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return errors.New("label starts or ends with '-'")
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("byte %q not allowed in a host name", c)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return errors.New("numeric last label: not a host name nor an IP literal")
	}
	return nil
}
