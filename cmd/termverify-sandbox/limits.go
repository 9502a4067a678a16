package main

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// limitFlags are the resource-limit flags run and exec share.
type limitFlags struct {
	memory   string
	pids     int64
	cpus     float64
	fileSize string
	tmpSize  string
	mode     string // --limits: enforce or best-effort
}

func (l *limitFlags) register(f *pflag.FlagSet) {
	d := sandbox.DefaultLimits()
	f.StringVar(&l.memory, "memory", strconv.FormatInt(d.MemoryBytes, 10), "memory limit in bytes (suffixes K, M, G); 0 for none")
	f.Int64Var(&l.pids, "pids", d.Pids, "task (process and thread) limit; 0 for none")
	f.Float64Var(&l.cpus, "cpus", 0, "CPU quota in cores; 0 for none")
	f.StringVar(&l.fileSize, "file-size", strconv.FormatInt(d.FileBytes, 10), "largest file the subject may write (RLIMIT_FSIZE; caps each file, not the total); 0 for none")
	f.StringVar(&l.tmpSize, "tmp-size", strconv.FormatInt(d.TmpBytes, 10), "size of the sandbox's private /tmp; 0 for the tmpfs default (half of RAM)")
	f.StringVar(&l.mode, "limits", "best-effort", "enforce (refuse to start when a requested limit cannot be applied) or best-effort (run without it and say so)")
}

// limits turns the flags into sandbox.Limits.
func (l *limitFlags) limits() (sandbox.Limits, error) {
	var out sandbox.Limits
	var err error
	if out.MemoryBytes, err = parseSize(l.memory); err != nil {
		return out, fmt.Errorf("--memory: %w", err)
	}
	if out.FileBytes, err = parseSize(l.fileSize); err != nil {
		return out, fmt.Errorf("--file-size: %w", err)
	}
	if out.TmpBytes, err = parseSize(l.tmpSize); err != nil {
		return out, fmt.Errorf("--tmp-size: %w", err)
	}
	out.Pids, out.CPUs = l.pids, l.cpus
	switch l.mode {
	case "enforce":
		out.Enforce = true
	case "best-effort":
	default:
		return out, fmt.Errorf("--limits %q: want enforce or best-effort", l.mode)
	}
	return out, nil
}

// parseSize reads a byte count: a whole number ("1048576"), or a decimal
// number with a binary suffix K, M or G, either case ("512M", "1.5G" =
// 1610612736). A fraction of a byte is rounded down; a fraction without a
// suffix, a sign, an exponent, NaN or a value beyond int64 is refused.
// The arithmetic is exact (math/big), so "0.1G" is 107374182, not a float's
// neighbour of it.
func parseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		}
		if mult != 1 {
			num = s[:n-1]
		}
	}
	whole, frac, dot := strings.Cut(num, ".")
	if !allDigits(whole) || dot && !allDigits(frac) {
		return 0, fmt.Errorf("%q is not a size (want bytes, or a number with K, M or G: 1048576, 512M, 1.5G)", s)
	}
	if dot && mult == 1 {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	// (whole.frac × mult) rounded down = (wholefrac × mult) / 10^len(frac).
	n, _ := new(big.Int).SetString(whole+frac, 10)
	n.Mul(n, big.NewInt(mult))
	n.Quo(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil))
	if !n.IsInt64() {
		return 0, fmt.Errorf("%q is too large (at most %d bytes)", s, int64(1<<63-1))
	}
	return n.Int64(), nil
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
