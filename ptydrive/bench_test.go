package ptydrive

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/quiesce"
)

// The PTY mode's latency benchmarks on a host terminal
// (docs/BENCHMARKS.md "PTY mode", scripts/bench-pty.sh): the driver and
// quiesce alone, without the sandbox or the supervisor. Every op is one
// epoch; each reports the median and 99th percentile of its epochs.

// benchEpoch bounds one epoch: far above any figure, so a benchmark on a
// loaded machine fails rather than hangs.
const benchEpoch = 20 * time.Second

// latencies collects per-epoch durations and reports their quantiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	q := func(p float64) float64 {
		return float64(s[min(len(s)-1, int(p*float64(len(s))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), prefix+"p50-ms")
	b.ReportMetric(q(0.99), prefix+"p99-ms")
}

// benchProg starts argv on a host terminal with a Driver of it, and
// settles its first epoch. extra, when set, is the program's fd 3.
// listings, when set, counts the task listings quiesce makes (one per
// pass: two per evaluation that gets past rules 2 and 3).
func benchProg(b *testing.B, cols, rows int, extra *os.File, listings *int, argv ...string) (*Driver, chan struct{}) {
	b.Helper()
	m, s := ptytest.Open(b, cols, rows)
	var pid int
	// The program alone (none of these forks): ProcessTree, which the
	// tests use, reads every host process's stat, whose cost depends on
	// what else runs; PTY mode lists the sandbox's PID namespace instead
	// (supervisor's BenchmarkEpochLatency measures that).
	tasks := func() ([]int, error) {
		if listings != nil {
			*listings++
		}
		return []int{pid}, nil
	}
	d, err := New(m, s, Config{Cols: cols, Rows: rows, Tasks: tasks})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	// ptytest.Start, with fd 3.
	cmd, err := ptytest.Command(ptytest.Env(b), argv...)
	if err != nil {
		b.Skipf("%s not installed: %v", argv[0], err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.Dir = b.TempDir()
	if extra != nil {
		cmd.ExtraFiles = []*os.File{extra}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	pid = cmd.Process.Pid
	go func() {
		_, _ = cmd.Process.Wait()
		close(exited)
	}()
	benchSettle(b, d, exited)
	d.TakeOutput()
	return d, exited
}

func benchSettle(b *testing.B, d *Driver, exited chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), benchEpoch)
	defer cancel()
	st, err := d.Settle(ctx, exited)
	if err != nil || !st.Quiet {
		b.Fatalf("settle: %+v %v\n%s", st, err, strings.Join(d.Screen().Lines, "\n"))
	}
}

// BenchmarkCatEcho is a keystroke line to cat and the epoch closed: "x"
// and Enter typed, the line discipline's echo and cat's copy read into
// the emulator, and quiesce's verdict that cat reads again. Every op is
// one epoch; p50-ms and p99-ms are its latency.
func BenchmarkCatEcho(b *testing.B) {
	var listings int
	d, exited := benchProg(b, 20, 2, nil, &listings, "cat")
	listings = 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var lat latencies
	for b.Loop() {
		t0 := time.Now()
		if err := d.Text(ctx, "x\n"); err != nil {
			b.Fatal(err)
		}
		benchSettle(b, d, exited)
		lat = append(lat, time.Since(t0))
		if out := d.TakeOutput(); out.Text != "x\r\nx\r\n" {
			b.Fatalf("output %q", out.Text)
		}
	}
	lat.report(b, "")
	b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "epochs/s")
	// Where an epoch's time goes: each pass lists the tasks and reads
	// three /proc files per thread.
	b.ReportMetric(float64(listings)/float64(max(len(lat), 1)), "passes/epoch")
}

// reactionProg answers every line with one after a short pause (a sleep,
// or a busy computation of the same length), then writes to fd 3 the
// CLOCK_MONOTONIC time at which its answer's last byte had been written
// to the terminal, and reads again.
const reactionProg = `import os, sys, time
pause = float(sys.argv[1]) / 1000
busy = sys.argv[2] == "busy"
while True:
    if not os.read(0, 1024):
        break
    if busy:
        end = time.monotonic() + pause
        while time.monotonic() < end:
            pass
    else:
        time.sleep(pause)
    os.write(1, b"done\n")
    t = time.monotonic_ns()
    os.write(3, b"%d\n" % t)
`

// BenchmarkQuiesceReaction is quiesce's reaction time: from the moment a
// program's last output byte was written to the terminal (its own clock,
// taken after the write returned) to Settle's return (the driver's
// clock, CLOCK_MONOTONIC both). The program pauses 2 ms before it
// answers, by sleeping or by computing, so that the epoch is open and
// evaluated before the output comes. react-* is that reaction; the
// epoch-* figures are the whole epoch, from the keystroke.
func BenchmarkQuiesceReaction(b *testing.B) {
	for _, mode := range []string{"sleep", "busy"} {
		b.Run(mode, func(b *testing.B) {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			d, exited := benchProg(b, 20, 2, w, nil, "/usr/bin/python3", "-c", reactionProg, "2", mode)
			w.Close()
			stamps := bufio.NewReader(r)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			var react, epoch latencies
			for b.Loop() {
				t0 := time.Now()
				if err := d.Text(ctx, "x\n"); err != nil {
					b.Fatal(err)
				}
				benchSettle(b, d, exited)
				var ts unix.Timespec
				if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
					b.Fatal(err)
				}
				epoch = append(epoch, time.Since(t0))
				b.StopTimer()
				line, err := stamps.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				wrote, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				if out := d.TakeOutput(); !strings.HasSuffix(out.Text, "done\r\n") {
					b.Fatalf("epoch closed before the answer: output %q", out.Text)
				}
				react = append(react, time.Duration(ts.Nano()-wrote))
				b.StartTimer()
			}
			react.report(b, "react-")
			epoch.report(b, "epoch-")
			if len(react) > 0 {
				slices.Sort(react)
				b.ReportMetric(float64(react[len(react)-1])/float64(time.Millisecond), "react-max-ms")
			}
		})
	}
}

// BenchmarkEvaluate is the cost of one quiesce evaluation of cat waiting
// in read on a host terminal (every op one Evaluate), its task list given:
// the work Settle repeats at each back-off step while an epoch is open,
// without the listing of the tasks.
func BenchmarkEvaluate(b *testing.B) {
	m, s := ptytest.Open(b, 20, 2)
	cmd := ptytest.Start(b, s, ptytest.Env(b), "cat")
	j, err := quiesce.New(m, s, func() ([]int, error) { return []int{cmd.Process.Pid}, nil })
	if err != nil {
		b.Fatal(err)
	}
	// Until cat reads.
	for deadline := time.Now().Add(benchEpoch); ; time.Sleep(time.Millisecond) {
		if v, err := j.Evaluate(); err != nil {
			b.Fatal(err)
		} else if v.Quiet {
			break
		} else if time.Now().After(deadline) {
			b.Fatal(fmt.Sprint("cat never read: ", v.Why))
		}
	}
	for b.Loop() {
		if v, err := j.Evaluate(); err != nil || !v.Quiet {
			b.Fatal(v, err)
		}
	}
}
