package sandbox

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// BenchmarkTrue measures a sandboxed /bin/true from Start to the end of
// Destroy, and reports each phase (start, wait, destroy) in ms/op.
func BenchmarkTrue(b *testing.B) {
	sandboxtest.RequireRoot(b)
	state, root := b.TempDir(), b.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		b.Fatal(err)
	}
	var start, wait, destroy time.Duration
	for b.Loop() {
		t0 := time.Now()
		sb, err := Start(context.Background(), Spec{Args: []string{"/bin/true"}, Root: root, StateDir: state, Limits: DefaultLimits()})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := sb.Wait(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := sb.Destroy(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		start, wait, destroy = start+t1.Sub(t0), wait+t2.Sub(t1), destroy+t3.Sub(t2)
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(start)/n, "start-ms/op")
	b.ReportMetric(float64(wait)/n, "wait-ms/op")
	b.ReportMetric(float64(destroy)/n, "destroy-ms/op")
}
