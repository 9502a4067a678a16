package netpolicy

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// fakeDNS is an injected resolver: names map to canned answers, and every
// lookup is counted so that tests can see a name was resolved only once.
type fakeDNS struct {
	answers map[string][]netip.Addr
	calls   []string
}

var errNXDomain = errors.New("no such host")

func (d *fakeDNS) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	d.calls = append(d.calls, host)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a, ok := d.answers[strings.ToLower(host)]
	if !ok {
		return nil, fmt.Errorf("lookup %s: %w", host, errNXDomain)
	}
	return a, nil
}

func addrs(ss ...string) []netip.Addr {
	var a []netip.Addr
	for _, s := range ss {
		a = append(a, netip.MustParseAddr(s))
	}
	return a
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestResolveWith(t *testing.T) {
	answers := map[string][]netip.Addr{
		"service.test":  addrs("::1", "127.0.0.1", "127.0.0.9"), // IPv4 preferred even when second
		"v6only.test":   addrs("::1"),
		"mapped.test":   addrs("::ffff:127.0.0.3"),
		"sinkhole.test": addrs("0.0.0.0", "::", "fe80::1", "224.0.0.1"),
		"empty.test":    nil,
		"skipbad.test":  addrs("0.0.0.0", "127.0.0.4"),
		"localhost":     addrs("127.0.0.200"), // must never be asked
	}
	for _, tc := range []struct {
		name    string
		p       Policy
		routes  []Route
		calls   []string
		wantErr error // matched with errors.Is; nil for success
	}{
		{
			name: "deny has no routes",
			p:    Policy{Mode: Deny},
		},
		{
			name:   "ip literals kept, mapped unmapped",
			p:      Policy{AllowList, []HostPort{{"::ffff:127.0.0.1", 80}, {"::1", 22}, {"127.0.0.2", 8080}}},
			routes: []Route{{"127.0.0.2", 8080, ap("127.0.0.2:8080"), ap("127.0.0.2:8080")}, {"::1", 22, ap("[::1]:22"), ap("[::1]:22")}, {"::ffff:127.0.0.1", 80, ap("127.0.0.1:80"), ap("127.0.0.1:80")}},
		},
		{
			name:   "name pinned to first ipv4, resolved once",
			p:      Policy{AllowList, []HostPort{{"service.test", 443}, {"SERVICE.test", 80}, {"service.test", 80}, {"service.test", 443}}},
			routes: []Route{{"SERVICE.test", 80, ap("127.0.0.1:80"), ap("127.0.0.1:80")}, {"service.test", 80, ap("127.0.0.1:80"), ap("127.0.0.1:80")}, {"service.test", 443, ap("127.0.0.1:443"), ap("127.0.0.1:443")}},
			calls:  []string{"SERVICE.test"},
		},
		{
			name:   "ipv6 when no ipv4",
			p:      Policy{AllowList, []HostPort{{"v6only.test", 80}}},
			routes: []Route{{"v6only.test", 80, ap("[::1]:80"), ap("[::1]:80")}},
			calls:  []string{"v6only.test"},
		},
		{
			name:   "mapped answer unmapped",
			p:      Policy{AllowList, []HostPort{{"mapped.test", 80}}},
			routes: []Route{{"mapped.test", 80, ap("127.0.0.3:80"), ap("127.0.0.3:80")}},
			calls:  []string{"mapped.test"},
		},
		{
			name:   "unusable answers skipped",
			p:      Policy{AllowList, []HostPort{{"skipbad.test", 80}}},
			routes: []Route{{"skipbad.test", 80, ap("127.0.0.4:80"), ap("127.0.0.4:80")}},
			calls:  []string{"skipbad.test"},
		},
		{
			name:   "localhost without lookup",
			p:      Policy{AllowList, []HostPort{{"localhost", 80}, {"LocalHost", 81}}},
			routes: []Route{{"LocalHost", 81, ap("127.0.0.1:81"), ap("127.0.0.1:81")}, {"localhost", 80, ap("127.0.0.1:80"), ap("127.0.0.1:80")}},
		},
		{
			name:    "unknown name",
			p:       Policy{AllowList, []HostPort{{"127.0.0.1", 80}, {"missing.test", 80}}},
			calls:   []string{"missing.test"},
			wantErr: errNXDomain,
		},
		{
			name:    "only unusable answers",
			p:       Policy{AllowList, []HostPort{{"sinkhole.test", 80}}},
			calls:   []string{"sinkhole.test"},
			wantErr: ErrNoAddress,
		},
		{
			name:    "no answers",
			p:       Policy{AllowList, []HostPort{{"empty.test", 80}}},
			calls:   []string{"empty.test"},
			wantErr: ErrNoAddress,
		},
		{
			name:    "invalid policy resolves nothing",
			p:       Policy{AllowList, []HostPort{{"service.test", 80}, {"bad host", 80}}},
			wantErr: ErrInvalid,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dns := &fakeDNS{answers: answers}
			plan, err := ResolveWith(t.Context(), tc.p, dns.lookup)
			if !slices.Equal(dns.calls, tc.calls) {
				t.Errorf("lookups = %q, want %q", dns.calls, tc.calls)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if _, isPolicy := errors.AsType[*PolicyError](err); !isPolicy {
					if host := tc.calls[len(tc.calls)-1]; !strings.Contains(err.Error(), host) {
						t.Errorf("error %q does not name %s", err, host)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveWith: %v", err)
			}
			if !slices.Equal(plan.Routes, tc.routes) {
				t.Errorf("routes:\n got %v\nwant %v", plan.Routes, tc.routes)
			}
			if plan.Policy.Mode != tc.p.Mode || !slices.Equal(plan.Policy.Allowed, tc.p.Allowed) {
				t.Errorf("plan policy = %+v, want %+v", plan.Policy, tc.p)
			}
		})
	}
}

func TestResolveCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dns := &fakeDNS{}
	_, err := ResolveWith(ctx, Policy{AllowList, []HostPort{{"service.test", 80}}}, dns.lookup)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestResolveLocalhost uses the real resolver, which must not be consulted
// for localhost: the test passes on a host with no DNS and no /etc/hosts.
func TestResolveLocalhost(t *testing.T) {
	plan, err := Resolve(t.Context(), Policy{AllowList, []HostPort{{"localhost", 8080}, {"127.0.0.1", 9}}})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	want := []Route{{"127.0.0.1", 9, ap("127.0.0.1:9"), ap("127.0.0.1:9")}, {"localhost", 8080, ap("127.0.0.1:8080"), ap("127.0.0.1:8080")}}
	if !slices.Equal(plan.Routes, want) {
		t.Fatalf("routes = %v, want %v", plan.Routes, want)
	}
}

func TestHostsFile(t *testing.T) {
	dns := &fakeDNS{answers: map[string][]netip.Addr{
		"service.test": addrs("127.0.0.1"),
		"db.test":      addrs("127.0.0.5"),
		"api.test":     addrs("::1"),
		"alias.test":   addrs("127.0.0.5"),
	}}
	for _, tc := range []struct {
		name string
		p    Policy
	}{
		{"deny", Policy{Mode: Deny}},
		{"allow-list", Policy{AllowList, []HostPort{
			{"service.test", 8080}, {"db.test", 5432}, {"api.test", 443}, {"alias.test", 5432},
			{"db.test", 5433}, {"localhost", 80}, {"127.0.0.1", 9}, {"::1", 9},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := ResolveWith(t.Context(), tc.p, dns.lookup)
			if err != nil {
				t.Fatalf("ResolveWith: %v", err)
			}
			got := plan.HostsFile()
			// Order of the allow-list must not matter.
			rev := tc.p
			rev.Allowed = slices.Clone(tc.p.Allowed)
			slices.Reverse(rev.Allowed)
			plan2, err := ResolveWith(t.Context(), rev, dns.lookup)
			if err != nil {
				t.Fatalf("ResolveWith reversed: %v", err)
			}
			if !bytes.Equal(plan2.HostsFile(), got) {
				t.Errorf("HostsFile depends on allow-list order:\n%s\nvs\n%s", got, plan2.HostsFile())
			}
			golden(t, filepath.Join("testdata", "hosts-"+tc.name+".golden"), got)
		})
	}
}

// golden compares got with a golden file byte for byte; -update rewrites it.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./netpolicy -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s mismatch:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}
