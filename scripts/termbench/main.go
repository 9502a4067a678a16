// Command termbench measures the term daemon for scripts/bench-term.sh:
// how long `term start` takes to print its socket, an OUTPUT round trip, a
// keystroke typed into cat until the next OUTPUT shows its echo, and the
// daemon's resident memory with a full scrollback. It drives the daemon
// through its socket with package interminai, as a client would, so no
// process start is inside a timed round trip.
//
//	termbench BIN N
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/scripts/internal/benchdaemon"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: termbench BIN N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "termbench: N must be a positive count")
		os.Exit(2)
	}
	if err := run(os.Args[1], n); err != nil {
		fmt.Fprintln(os.Stderr, "termbench:", err)
		os.Exit(1)
	}
}

func run(bin string, n int) error {
	var starts []time.Duration
	for range 5 {
		d, took, err := benchdaemon.Start(bin, "/bin/cat")
		if err != nil {
			return err
		}
		starts = append(starts, took)
		d.Stop()
	}
	d, _, err := benchdaemon.Start(bin, "/bin/cat")
	if err != nil {
		return err
	}
	defer d.Stop()
	// OUTPUT round trips.
	var rt []time.Duration
	for range n {
		t := time.Now()
		if _, err := d.Screen(); err != nil {
			return err
		}
		rt = append(rt, time.Since(t))
	}
	// A keystroke until an OUTPUT shows its echo; each round types one
	// more x on cat's line, so the screen's x count says it arrived.
	var echo []time.Duration
	for i := range n {
		want := strings.Repeat("x", i%70+1)
		if i%70 == 0 && i > 0 {
			if _, err := d.Call(&interminai.Input{Data: "\r"}); err != nil {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
		t := time.Now()
		if _, err := d.Call(&interminai.Input{Data: "x"}); err != nil {
			return err
		}
		for {
			s, err := d.Screen()
			if err != nil {
				return err
			}
			if strings.Contains(lastLine(s), want) {
				break
			}
			if time.Since(t) > 5*time.Second {
				return fmt.Errorf("the echo of keystroke %d never showed", i)
			}
		}
		echo = append(echo, time.Since(t))
	}
	// Memory with a full scrollback: 20,000 lines printed (the default
	// scrollback keeps 10,000), then the daemon's RSS.
	full, _, err := benchdaemon.Start(bin, "/bin/sh", "-c", "seq 1 20000 | sed 's/$/ a line of some sixty characters to fill the scrollback up/'; cat")
	if err != nil {
		return err
	}
	defer full.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := full.Screen()
		if err != nil {
			return err
		}
		if strings.Contains(s, "20000 a line") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	kib, err := full.RSS()
	if err != nil {
		return err
	}
	p50, p99 := benchdaemon.Quantiles(starts)
	fmt.Printf("start to Socket printed      p50 %8.3f ms  p99 %8.3f ms  (%d starts)\n", benchdaemon.Ms(p50), benchdaemon.Ms(p99), len(starts))
	p50, p99 = benchdaemon.Quantiles(rt)
	fmt.Printf("OUTPUT round trip            p50 %8.3f ms  p99 %8.3f ms  (target p50 <= 1 ms)\n", benchdaemon.Ms(p50), benchdaemon.Ms(p99))
	p50, p99 = benchdaemon.Quantiles(echo)
	fmt.Printf("keystroke to echo in OUTPUT  p50 %8.3f ms  p99 %8.3f ms  (target p50 <= 2 ms)\n", benchdaemon.Ms(p50), benchdaemon.Ms(p99))
	fmt.Printf("daemon RSS, full scrollback  %8.1f MiB                    (target <= 32 MiB)\n", float64(kib)/1024)
	return recorded(bin, n)
}

// recorded is what recording a session (term start --transcript) costs
// an input: an INPUT of a line into cat, then a settled WAIT, without and
// with a transcript (whose epoch closes at the same quiet point).
func recorded(bin string, n int) error {
	dir, err := os.MkdirTemp("", "termbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, rec := range []bool{false, true} {
		var flags []string
		if rec {
			flags = []string{"--transcript", dir + "/session.jsonl"}
		}
		d, _, err := benchdaemon.StartWith(bin, flags, "/bin/cat")
		if err != nil {
			return err
		}
		var rt []time.Duration
		for range n {
			t := time.Now()
			if _, err := d.Call(&interminai.Input{Data: "x\r"}); err != nil {
				d.Stop()
				return err
			}
			if _, err := d.Call(&interminai.Wait{Settled: true}); err != nil {
				d.Stop()
				return err
			}
			rt = append(rt, time.Since(t))
		}
		d.Stop()
		p50, p99 := benchdaemon.Quantiles(rt)
		what := "INPUT + settled WAIT        "
		if rec {
			what = "the same, recorded          "
		}
		fmt.Printf("%s p50 %8.3f ms  p99 %8.3f ms\n", what, benchdaemon.Ms(p50), benchdaemon.Ms(p99))
	}
	return nil
}

// lastLine is the last non-empty line of a screen.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return lines[len(lines)-1]
}
