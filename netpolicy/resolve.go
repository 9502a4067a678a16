package netpolicy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// ErrNoAddress is wrapped by Resolve when a host name resolves to no usable
// address (none at all, or only addresses checkAddr refuses).
var ErrNoAddress = errors.New("no usable address")

// LookupFunc resolves a host name to addresses, best first. It is the
// injection point for tests; the production lookup is
// net.DefaultResolver.LookupNetIP(ctx, "ip", host).
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// Route is one allowed (host, port) with its addresses fixed at Resolve.
type Route struct {
	Host   string         // as in the policy: IP literal or host name
	Port   int            // as in the policy
	Listen netip.AddrPort // where the forwarder listens, inside the sandbox
	Dial   netip.AddrPort // where the forwarder connects, from the host namespace
}

// Plan is a validated policy with every address fixed. It is plain data:
// building one opens no sockets and touches no namespace.
type Plan struct {
	Policy Policy  // as given to Resolve (not sorted; see Policy.Sorted)
	Routes []Route // sorted by (Host, Port), duplicates merged; nil for Deny
}

// localhostAddr is what the name "localhost" means, without a lookup: RFC
// 6761 §6.3 says localhost is always loopback, and asking the host's
// resolver could send it to DNS on a host whose /etc/hosts lacks it.
var localhostAddr = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// Resolve validates p and fixes every route's addresses with the host's
// resolver; see ResolveWith.
func Resolve(ctx context.Context, p Policy) (*Plan, error) {
	return ResolveWith(ctx, p, func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	})
}

// ResolveWith validates p and fixes every route's addresses, looking host
// names up with lookup once each (names compare case-insensitively). An IP
// literal is kept as it is (an IPv4-mapped IPv6 literal becomes IPv4). A name
// is pinned to the first IPv4 address lookup returns, else its first IPv6
// address: one address per name keeps /etc/hosts and the forwarder in
// agreement, and IPv4 first because hosts (CI containers especially) more
// often lack an IPv6 route than an IPv4 one. "localhost" is 127.0.0.1
// without a lookup.
//
// Every route listens inside the sandbox on the same address and port it
// dials on the host side, so the subject sees the real destination address
// and an IP-literal entry and a name resolving to the same address share one
// listener. A name that does not resolve is an error naming it. ResolveWith
// opens no sockets.
func ResolveWith(ctx context.Context, p Policy, lookup LookupFunc) (*Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	plan := &Plan{Policy: Policy{Mode: p.Mode, Allowed: slices.Clone(p.Allowed)}}
	if p.Mode == Deny {
		return plan, nil
	}
	pinned := map[string]netip.Addr{} // lower-cased name -> address
	for _, hp := range p.Sorted().Allowed {
		addr, err := netip.ParseAddr(hp.Host)
		if err == nil {
			addr = addr.Unmap()
		} else {
			key := strings.ToLower(hp.Host)
			a, ok := pinned[key]
			if !ok {
				if a, err = resolveName(ctx, lookup, hp.Host); err != nil {
					return nil, err
				}
				pinned[key] = a
			}
			addr = a
		}
		ap := netip.AddrPortFrom(addr, uint16(hp.Port))
		plan.Routes = append(plan.Routes, Route{Host: hp.Host, Port: hp.Port, Listen: ap, Dial: ap})
	}
	return plan, nil
}

// resolveName pins one host name to one address.
func resolveName(ctx context.Context, lookup LookupFunc, host string) (netip.Addr, error) {
	if strings.EqualFold(host, "localhost") {
		return localhostAddr, nil
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolve %s: %w", host, err)
	}
	var v6 netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if checkAddr(a) != nil {
			continue
		}
		if a.Is4() {
			return a, nil
		}
		if !v6.IsValid() {
			v6 = a
		}
	}
	if v6.IsValid() {
		return v6, nil
	}
	return netip.Addr{}, fmt.Errorf("resolve %s: %w (got %v)", host, ErrNoAddress, addrs)
}

// HostsFile returns the whole /etc/hosts for the sandbox: the localhost
// lines, then one line per host name in the plan (sorted by address, then
// name) pinning it to the address its forwarder listens on. IP literals need
// no line. The output depends only on the plan, so it is the same on every
// run of the same resolved plan.
func (p *Plan) HostsFile() []byte {
	var b bytes.Buffer
	b.WriteString("# termverify-sandbox: host names pinned at start; no DNS in this sandbox\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	type pin struct {
		addr netip.Addr
		name string
	}
	var pins []pin
	for _, r := range p.Routes {
		if _, err := netip.ParseAddr(r.Host); err == nil || strings.EqualFold(r.Host, "localhost") {
			continue
		}
		pins = append(pins, pin{r.Listen.Addr(), r.Host})
	}
	slices.SortFunc(pins, func(a, b pin) int {
		return cmp.Or(a.addr.Compare(b.addr), strings.Compare(a.name, b.name))
	})
	pins = slices.Compact(pins)
	for _, x := range pins {
		fmt.Fprintf(&b, "%s\t%s\n", x.addr, x.name)
	}
	return b.Bytes()
}
