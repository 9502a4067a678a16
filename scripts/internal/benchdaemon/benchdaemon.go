// Package benchdaemon starts `term start` daemons for the benchmark
// programs (scripts/termbench, scripts/mcpbench) and talks to them over
// their socket with package interminai, as a client would, so that no
// process start is inside a timed round trip; and summarizes timings.
package benchdaemon

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

// Daemon is one started daemon.
type Daemon struct {
	Socket string
	PID    int
}

// Start runs `BIN term start ... -- argv` and returns once it printed its
// socket, with the time that took. flags go before the --.
func Start(bin string, argv ...string) (Daemon, time.Duration, error) {
	return StartWith(bin, nil, argv...)
}

// StartWith is Start with flags before the --.
func StartWith(bin string, flags []string, argv ...string) (Daemon, time.Duration, error) {
	args := append(append(append([]string{"term", "start", "--size", "80x24"}, flags...), "--"), argv...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Daemon{}, 0, err
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return Daemon{}, 0, err
	}
	var d Daemon
	var took time.Duration
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		switch k {
		case "Socket":
			d.Socket, took = v, time.Since(began)
		case "PID":
			d.PID, _ = strconv.Atoi(v)
		}
	}
	if err := cmd.Wait(); err != nil {
		return Daemon{}, 0, fmt.Errorf("term start: %w", err)
	}
	if d.Socket == "" || d.PID == 0 {
		return Daemon{}, 0, errors.New("term start printed no socket or pid")
	}
	return d, took, nil
}

// Call sends req and returns the reply (30 s at most).
func (d Daemon) Call(req interminai.Request) (interminai.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return interminai.Call(ctx, d.Socket, req)
}

// Screen is the screen as plain text (OUTPUT ascii).
func (d Daemon) Screen() (string, error) {
	rep, err := d.Call(&interminai.Output{Format: interminai.FormatASCII})
	if err != nil {
		return "", err
	}
	var o interminai.OutputData
	if err := rep.DecodeData(&o); err != nil {
		return "", err
	}
	return o.Screen, nil
}

// Stop sends STOP; a daemon already gone is no error.
func (d Daemon) Stop() { _, _ = d.Call(&interminai.Stop{}) }

// RSS is the daemon's resident memory in KiB (VmRSS).
func (d Daemon) RSS() (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.PID))
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

// Quantiles are the median and the 99th percentile of d.
func Quantiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
