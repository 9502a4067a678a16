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
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/termverify/termverify-sandbox/interminai"
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

// daemon is one started daemon.
type daemon struct {
	socket string
	pid    int
}

// start runs `BIN term start ... -- argv` and returns once it printed its
// socket, with the time that took. flags go before the --.
func start(bin string, argv ...string) (daemon, time.Duration, error) {
	return startWith(bin, nil, argv...)
}

func startWith(bin string, flags []string, argv ...string) (daemon, time.Duration, error) {
	args := append(append(append([]string{"term", "start", "--size", "80x24"}, flags...), "--"), argv...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return daemon{}, 0, err
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return daemon{}, 0, err
	}
	var d daemon
	var took time.Duration
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		switch k {
		case "Socket":
			d.socket, took = v, time.Since(began)
		case "PID":
			d.pid, _ = strconv.Atoi(v)
		}
	}
	if err := cmd.Wait(); err != nil {
		return daemon{}, 0, fmt.Errorf("term start: %w", err)
	}
	if d.socket == "" || d.pid == 0 {
		return daemon{}, 0, errors.New("term start printed no socket or pid")
	}
	return d, took, nil
}

func (d daemon) call(req interminai.Request) (interminai.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return interminai.Call(ctx, d.socket, req)
}

func (d daemon) screen() (string, error) {
	rep, err := d.call(&interminai.Output{Format: interminai.FormatASCII})
	if err != nil {
		return "", err
	}
	var o interminai.OutputData
	if err := rep.DecodeData(&o); err != nil {
		return "", err
	}
	return o.Screen, nil
}

func (d daemon) stop() { _, _ = d.call(&interminai.Stop{}) }

// rss is the daemon's resident memory in KiB (VmRSS).
func (d daemon) rss() (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, errors.New("no VmRSS")
}

func run(bin string, n int) error {
	var starts []time.Duration
	for range 5 {
		d, took, err := start(bin, "/bin/cat")
		if err != nil {
			return err
		}
		starts = append(starts, took)
		d.stop()
	}
	d, _, err := start(bin, "/bin/cat")
	if err != nil {
		return err
	}
	defer d.stop()
	// OUTPUT round trips.
	var rt []time.Duration
	for range n {
		t := time.Now()
		if _, err := d.screen(); err != nil {
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
			if _, err := d.call(&interminai.Input{Data: "\r"}); err != nil {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
		t := time.Now()
		if _, err := d.call(&interminai.Input{Data: "x"}); err != nil {
			return err
		}
		for {
			s, err := d.screen()
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
	full, _, err := start(bin, "/bin/sh", "-c", "seq 1 20000 | sed 's/$/ a line of some sixty characters to fill the scrollback up/'; cat")
	if err != nil {
		return err
	}
	defer full.stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := full.screen()
		if err != nil {
			return err
		}
		if strings.Contains(s, "20000 a line") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	kib, err := full.rss()
	if err != nil {
		return err
	}
	p50, p99 := quantiles(starts)
	fmt.Printf("start to Socket printed      p50 %8.3f ms  p99 %8.3f ms  (%d starts)\n", ms(p50), ms(p99), len(starts))
	p50, p99 = quantiles(rt)
	fmt.Printf("OUTPUT round trip            p50 %8.3f ms  p99 %8.3f ms  (target p50 <= 1 ms)\n", ms(p50), ms(p99))
	p50, p99 = quantiles(echo)
	fmt.Printf("keystroke to echo in OUTPUT  p50 %8.3f ms  p99 %8.3f ms  (target p50 <= 2 ms)\n", ms(p50), ms(p99))
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
		d, _, err := startWith(bin, flags, "/bin/cat")
		if err != nil {
			return err
		}
		var rt []time.Duration
		for range n {
			t := time.Now()
			if _, err := d.call(&interminai.Input{Data: "x\r"}); err != nil {
				d.stop()
				return err
			}
			if _, err := d.call(&interminai.Wait{Settled: true}); err != nil {
				d.stop()
				return err
			}
			rt = append(rt, time.Since(t))
		}
		d.stop()
		p50, p99 := quantiles(rt)
		what := "INPUT + settled WAIT        "
		if rec {
			what = "the same, recorded          "
		}
		fmt.Printf("%s p50 %8.3f ms  p99 %8.3f ms\n", what, ms(p50), ms(p99))
	}
	return nil
}

// lastLine is the last non-empty line of a screen.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return lines[len(lines)-1]
}

func quantiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
