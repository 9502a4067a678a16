package netpolicy

import (
	"errors"
	"slices"
	"testing"
)

var parseCases = []struct {
	in   string
	want HostPort
	rule string // "" when in is accepted
}{
	{"127.0.0.1:8080", HostPort{"127.0.0.1", 8080}, ""},
	{"[::1]:8080", HostPort{"::1", 8080}, ""},
	{"[::ffff:127.0.0.1]:80", HostPort{"::ffff:127.0.0.1", 80}, ""},
	{"localhost:1", HostPort{"localhost", 1}, ""},
	{"service.test:65535", HostPort{"service.test", 65535}, ""},
	{"Example.COM:443", HostPort{"Example.COM", 443}, ""},
	{"_srv.internal-1.example:443", HostPort{"_srv.internal-1.example", 443}, ""},
	{"169.254.169.254:80", HostPort{"169.254.169.254", 80}, ""},
	{"", HostPort{}, "hostport.syntax"},
	{"example.com", HostPort{}, "hostport.syntax"},
	{"::1:8080", HostPort{}, "hostport.syntax"},
	{"[127.0.0.1]:80", HostPort{}, "hostport.syntax"},
	{"[::1]8080", HostPort{}, "hostport.syntax"},
	{"[::1", HostPort{}, "hostport.syntax"},
	{":80", HostPort{}, "host.empty"},
	{"example.com:", HostPort{}, "port.range"},
	{"example.com:0", HostPort{}, "port.range"},
	{"example.com:65536", HostPort{}, "port.range"},
	{"example.com:080", HostPort{}, "port.range"},
	{"example.com:+80", HostPort{}, "port.range"},
	{"example.com:8 0", HostPort{}, "port.range"},
	{"example.com:http", HostPort{}, "port.range"},
	{"example.com:100000", HostPort{}, "port.range"},
	{"exa mple.com:80", HostPort{}, "host.name"},
	{"example.com.:80", HostPort{}, "host.name"},
	{"-example.com:80", HostPort{}, "host.name"},
	{"a..b:80", HostPort{}, "host.name"},
	{"evil\n1.2.3.4 bank.test:80", HostPort{}, "host.name"},
	{"host#comment:80", HostPort{}, "host.name"},
	{"1.2.3.04:80", HostPort{}, "host.name"},
	{"0x7f.1:80", HostPort{}, "host.name"},
	{"0.0.0.0:80", HostPort{}, "host.address"},
	{"[::]:80", HostPort{}, "host.address"},
	{"224.0.0.1:80", HostPort{}, "host.address"},
	{"255.255.255.255:80", HostPort{}, "host.address"},
	{"[fe80::1]:80", HostPort{}, "host.address"},
	{"[fe80::1%lo]:80", HostPort{}, "host.address"},
}

func TestParseHostPort(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseHostPort(tc.in)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("ParseHostPort(%q): %v", tc.in, err)
				}
				if got != tc.want {
					t.Fatalf("ParseHostPort(%q) = %+v, want %+v", tc.in, got, tc.want)
				}
				if s := got.String(); s != tc.in {
					t.Fatalf("String() = %q, want %q", s, tc.in)
				}
				return
			}
			assertRule(t, err, -1, tc.rule)
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Policy
		index int
		rule  string // "" when p is valid
	}{
		{"deny", Policy{Mode: Deny}, 0, ""},
		{"allow-list empty", Policy{Mode: AllowList}, 0, ""},
		{"allow-list unsorted duplicates", Policy{AllowList, []HostPort{{"b.test", 2}, {"a.test", 1}, {"b.test", 2}}}, 0, ""},
		{"ipv6 literal", Policy{AllowList, []HostPort{{"::1", 22}}}, 0, ""},
		{"deny with allowed", Policy{Deny, []HostPort{{"a.test", 1}}}, -1, "deny.allowed"},
		{"unknown mode", Policy{Mode: "open"}, -1, "mode.unknown"},
		{"empty mode", Policy{}, -1, "mode.unknown"},
		{"empty host", Policy{AllowList, []HostPort{{"a.test", 1}, {"", 1}}}, 1, "host.empty"},
		{"port zero", Policy{AllowList, []HostPort{{"a.test", 0}}}, 0, "port.range"},
		{"port negative", Policy{AllowList, []HostPort{{"a.test", -1}}}, 0, "port.range"},
		{"port too big", Policy{AllowList, []HostPort{{"a.test", 70000}}}, 0, "port.range"},
		{"bracketed host", Policy{AllowList, []HostPort{{"[::1]", 1}}}, 0, "host.name"},
		{"host with port", Policy{AllowList, []HostPort{{"a.test:80", 80}}}, 0, "host.name"},
		{"unspecified", Policy{AllowList, []HostPort{{"0.0.0.0", 80}}}, 0, "host.address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			assertRule(t, err, tc.index, tc.rule)
		})
	}
}

func assertRule(t *testing.T, err error, index int, rule string) {
	t.Helper()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v does not match ErrInvalid", err)
	}
	pe, ok := errors.AsType[*PolicyError](err)
	if !ok {
		t.Fatalf("error %v is not a *PolicyError", err)
	}
	if pe.Rule != rule || pe.Index != index {
		t.Fatalf("got rule %q index %d, want %q index %d (%v)", pe.Rule, pe.Index, rule, index, err)
	}
}

func TestSorted(t *testing.T) {
	p := Policy{AllowList, []HostPort{{"b.test", 2}, {"a.test", 9}, {"b.test", 1}, {"a.test", 9}, {"A.test", 9}}}
	orig := slices.Clone(p.Allowed)
	got := p.Sorted().Allowed
	want := []HostPort{{"A.test", 9}, {"a.test", 9}, {"b.test", 1}, {"b.test", 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("Sorted = %v, want %v", got, want)
	}
	if !slices.Equal(p.Allowed, orig) {
		t.Fatalf("Sorted modified its receiver: %v", p.Allowed)
	}
	if d := (Policy{Mode: Deny}).Sorted(); d.Allowed != nil {
		t.Fatalf("Sorted deny = %v, want nil allowed", d.Allowed)
	}
}

// FuzzParseHostPort checks that ParseHostPort never panics and that what it
// accepts is exactly what String prints and what Validate accepts.
func FuzzParseHostPort(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hp, err := ParseHostPort(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseHostPort(%q): error %v does not match ErrInvalid", s, err)
			}
			return
		}
		if got := hp.String(); got != s {
			t.Fatalf("ParseHostPort(%q).String() = %q", s, got)
		}
		again, err := ParseHostPort(hp.String())
		if err != nil || again != hp {
			t.Fatalf("round trip of %q: %+v, %v", s, again, err)
		}
		if err := (Policy{AllowList, []HostPort{hp}}).Validate(); err != nil {
			t.Fatalf("ParseHostPort(%q) accepted what Validate refuses: %v", s, err)
		}
	})
}
