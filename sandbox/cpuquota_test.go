package sandbox

import (
	"context"
	"slices"
	"testing"
)

// TestCPUQuotaVerified: a CPU limit whose quota in µs is not a whole
// number in float64 (1.1 CPUs is 110000.00000000001, 0.07 is
// 7000.000000000001) is written and verified as the same quota, so the
// cgroup-cpu mechanism is applied; a quota written by one rounding and
// checked by another said limit-mismatch.
func TestCPUQuotaVerified(t *testing.T) {
	for _, cpus := range []float64{1.1, 0.07, 0.25} {
		f := newFixture(t)
		spec := f.spec("/bin/true")
		spec.Limits.CPUs = cpus
		sb, err := Start(context.Background(), spec)
		if err != nil {
			t.Fatalf("cpus %v: start: %v", cpus, err)
		}
		if !slices.Contains(sb.Applied().Mechanisms, MechanismCheck{Name: "cgroup-cpu", Applied: true, Reason: "ok"}) {
			t.Errorf("cpus %v: cgroup-cpu not verified: %+v", cpus, sb.Applied().Mechanisms)
		}
		if _, err := sb.Wait(); err != nil {
			t.Errorf("wait: %v", err)
		}
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
	}
}

func TestCPUQuota(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		want int64
	}{{1.1, 110000}, {0.07, 7000}, {2.3, 230000}, {0.25, 25000}, {0.0000012, 1}, {4, 400000}} {
		if got := (Limits{CPUs: tc.cpus}).cpuQuota(); got != tc.want {
			t.Errorf("cpuQuota(%v) = %d, want %d", tc.cpus, got, tc.want)
		}
	}
}
