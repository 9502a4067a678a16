package term

import (
	"testing"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// TestReceiptsOf is the step from what the sandbox reports applied to the
// tiers RECEIPTS and STATUS claim: os only for what was verified, the
// terminal os only when its size check passed, and nothing os when auto
// ran the program without the sandbox.
func TestReceiptsOf(t *testing.T) {
	confined := sandbox.Confinement{Confined: true, Checks: []string{"mount-namespace", "pivot-root"}}
	netns := sandbox.Confinement{Confined: true, Checks: []string{"network-namespace", "loopback-only"}}
	notConfined := sandbox.Confinement{Reason: "isolation-none"}
	size := func(applied bool) []sandbox.MechanismCheck {
		return []sandbox.MechanismCheck{{Name: sandbox.MechanismTerminalSize, Applied: applied, Reason: map[bool]string{false: "80x24 found, 100x30 asked"}[applied]}}
	}
	cases := []struct {
		name      string
		isolation sandbox.Isolation
		applied   sandbox.Applied
		want      map[string]string // constraint → tier, or "unsupported"
	}{
		{
			name: "os, every check passed", isolation: sandbox.IsolationOS,
			applied: sandbox.Applied{Filesystem: confined, Network: netns, Mechanisms: size(true)},
			want:    map[string]string{"filesystem": "os", "network": "os", "terminal": "os"},
		},
		{
			name: "os, the terminal's size check failed", isolation: sandbox.IsolationOS,
			applied: sandbox.Applied{Filesystem: confined, Network: netns, Mechanisms: size(false)},
			want:    map[string]string{"filesystem": "os", "network": "os", "terminal": "unsupported"},
		},
		{
			name: "os, the terminal's size never checked", isolation: sandbox.IsolationOS,
			applied: sandbox.Applied{Filesystem: confined, Network: netns},
			want:    map[string]string{"filesystem": "os", "network": "os", "terminal": "unsupported"},
		},
		{
			name: "os, the network not confined", isolation: sandbox.IsolationOS,
			applied: sandbox.Applied{Filesystem: confined, Network: notConfined, Mechanisms: size(true)},
			want:    map[string]string{"filesystem": "os", "network": "unsupported", "terminal": "os"},
		},
		{
			name: "downgraded", isolation: sandbox.IsolationNone,
			applied: sandbox.Applied{Filesystem: notConfined, Network: notConfined, Mechanisms: size(true)},
			want:    map[string]string{"filesystem": "delivered", "network": "delivered", "terminal": "delivered"},
		},
		{
			// Even a sandbox that claims confinement under none gives no os.
			name: "downgraded, confinement claimed", isolation: sandbox.IsolationNone,
			applied: sandbox.Applied{Filesystem: confined, Network: netns, Mechanisms: size(true)},
			want:    map[string]string{"filesystem": "delivered", "network": "delivered", "terminal": "delivered"},
		},
		{
			name: "downgraded, the size check failed", isolation: sandbox.IsolationNone,
			applied: sandbox.Applied{Filesystem: notConfined, Network: notConfined, Mechanisms: size(false)},
			want:    map[string]string{"filesystem": "delivered", "network": "delivered", "terminal": "unsupported"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &Daemon{isolation: tc.isolation, dir: "/work/p"}
			if tc.isolation == sandbox.IsolationNone {
				d.downgrade = "namespaces unavailable on this host"
			}
			got := d.receiptsOf(tc.applied)
			if len(got.Receipts) != 7 {
				t.Fatalf("%d receipts, want seven: %+v", len(got.Receipts), got.Receipts)
			}
			fixed := map[string]string{"seed": "unsupported", "clock": "unsupported", "locale": "delivered", "timezone": "unsupported"}
			for _, r := range got.Receipts {
				tier := r.Tier
				if tier == "" {
					tier = r.Status
				}
				want, ok := tc.want[r.Constraint]
				if !ok {
					want = fixed[r.Constraint]
				}
				if tier != want {
					t.Errorf("%s: %s (%+v), want %s", r.Constraint, tier, r, want)
				}
				if tier != "os" && r.Reason == "" && r.Constraint != "locale" {
					t.Errorf("%s: %s without a reason: %+v", r.Constraint, tier, r)
				}
			}
		})
	}
}
