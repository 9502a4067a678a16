package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// BenchmarkTrue measures a sandboxed /bin/true from Start to the end of
// Destroy, and reports each phase (start, wait, destroy) in ms/op, the
// mean time from one start milestone to the next (the evidence's
// Milestones: what the time above libcontainer's floor is spent on), and
// the CPU of this process and its children per sandbox (user+system;
// libcontainer's init and the reaper are our children).
func BenchmarkTrue(b *testing.B) {
	sandboxtest.RequireRoot(b)
	state, root := b.TempDir(), b.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		b.Fatal(err)
	}
	var start, wait, destroy time.Duration
	phases := map[string]time.Duration{}
	var order []string
	cpu0 := cpuTime()
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
		prev := int64(0)
		for _, m := range sb.Evidence().Milestones {
			if _, ok := phases[m.Name]; !ok {
				order = append(order, m.Name)
			}
			phases[m.Name] += time.Duration(m.Micros-prev) * time.Microsecond
			prev = m.Micros
		}
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(start)/n, "start-ms/op")
	b.ReportMetric(float64(wait)/n, "wait-ms/op")
	b.ReportMetric(float64(destroy)/n, "destroy-ms/op")
	b.ReportMetric(float64(cpuTime()-cpu0)/n, "cpu-ms/op")
	for _, name := range order {
		b.ReportMetric(float64(phases[name])/n, "to-"+name+"-ms/op")
	}
}

// cpuTime is the user and system time of this process and of its reaped
// children.
func cpuTime() time.Duration {
	var self, kids unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &kids)
	tv := func(t unix.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// BenchmarkSweepEmpty is what every exec and run pays before its start
// when no sandbox is left over: the state directory's check and listing.
func BenchmarkSweepEmpty(b *testing.B) {
	sandboxtest.RequireRoot(b)
	state := filepath.Join(b.TempDir(), "state")
	if err := ensureStateDir(state, true); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Sweep(state); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReaperArgs is the seccomp program's build and encoding, once
// per start.
func BenchmarkReaperArgs(b *testing.B) {
	for b.Loop() {
		if _, err := sandboxReaperArgs([]string{"/bin/true"}); err != nil {
			b.Fatal(err)
		}
	}
}
