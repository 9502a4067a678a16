package main

import (
	"fmt"
	"strconv"

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
