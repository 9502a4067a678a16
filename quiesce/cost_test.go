package quiesce

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// manyThreads is a program with n threads asleep on an event and its main
// thread reading the terminal, answering each line.
func manyThreads(n int) []string {
	return []string{"python3", "-c", fmt.Sprintf(`import threading
threading.stack_size(64 * 1024)
ev = threading.Event()
for _ in range(%d):
    threading.Thread(target=ev.wait, daemon=True).start()
print("ready", flush=True)
while True:
    print("got", input(), flush=True)`, n)}
}

// TestManyThreadsCost: with 2,000 sleeping threads, one Evaluate reads a
// bounded number of /proc files (two passes of two small files a thread,
// not up to six passes of three), and still closes the epoch only after
// the program answered.
func TestManyThreadsCost(t *testing.T) {
	const n = 2000
	tm := startTerm(t, manyThreads(n)...)
	tm.waitOutput("ready", quietLimit)
	threads := n + 1
	// A pass is per thread, plus a listing per process and a few files
	// for the waiter; an evaluation that finds a task running stops
	// sooner.
	bound := 4*threads + 64
	check := func(want string) {
		t.Helper()
		deadline := time.Now().Add(quietLimit)
		calls := 0
		for time.Now().Before(deadline) {
			v, err := tm.judge.Evaluate()
			if err != nil {
				t.Fatal(err)
			}
			calls++
			if tm.judge.reads > bound {
				t.Fatalf("one evaluation read %d /proc files for %d threads, want at most %d (%s)", tm.judge.reads, threads, bound, v.Why)
			}
			if v.Quiet {
				if out := tm.output(); !strings.Contains(out, want) {
					t.Fatalf("quiet before %q: %q", want, out)
				}
				t.Logf("quiet after %d evaluations, %d files read by the last: %s", calls, tm.judge.reads, v.Why)
				return
			}
			time.Sleep(max(v.RetryAfter, 2*time.Millisecond))
		}
		t.Fatalf("not quiet after %v; output %q", quietLimit, tm.output())
	}
	check("ready")
	tm.write("x\r")
	check("got x")
}

// BenchmarkEvaluateThreads: one evaluation of a program with many
// sleeping threads, its main thread waiting for input (the verdict is
// quiet, or "not yet" while the threads start), by thread count.
func BenchmarkEvaluateThreads(b *testing.B) {
	for _, n := range []int{100, 2000, 8000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tm := startTerm(b, manyThreads(n)...)
			tm.waitOutput("ready", quietLimit)
			tm.waitQuiet(quietLimit)
			reads := 0
			for b.Loop() {
				if _, err := tm.judge.Evaluate(); err != nil {
					b.Fatal(err)
				}
				reads += tm.judge.reads
			}
			b.ReportMetric(float64(reads)/float64(b.N), "files/op")
		})
	}
}
