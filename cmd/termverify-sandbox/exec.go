package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/netpolicy"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// execOptions are exec's flags.
type execOptions struct {
	root     string
	rootfs   string
	network  string
	allow    []string
	memory   string
	pids     int64
	cpus     float64
	userns   bool
	stateDir string
	verbose  bool
}

func newExecCmd() *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec [--root DIR | --rootfs DIR] [--network deny | --allow HOST:PORT ...] [--memory SIZE] [--pids N] -- CMD [ARGS...]",
		Short: "Run a command inside the sandbox run uses, stdio passed through",
		Long: `exec runs CMD inside exactly the sandbox that run builds: fresh root, the
mapped root read-write at /sandbox (the working directory), denied or
allow-listed network, dropped privileges, seccomp, cgroup limits. It prints
nothing of its own unless --verbose; its exit status is CMD's, or 128+N when
CMD died of signal N. Without --root or --rootfs an empty temporary root is
mapped and removed afterwards.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return &exitError{Code: exitUsage, Err: errors.New("exec: give the command after --")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.root, "root", "", "host directory mapped read-write at "+sandbox.Workdir)
	f.StringVar(&o.rootfs, "rootfs", "", "complete root filesystem (read-only) instead of the host's system directories")
	f.StringVar(&o.network, "network", "deny", "network policy: deny (allow-list is implied by --allow)")
	f.StringArrayVar(&o.allow, "allow", nil, "allow TCP to HOST:PORT (repeatable; implies the allow-list policy)")
	d := sandbox.DefaultLimits()
	f.StringVar(&o.memory, "memory", strconv.FormatInt(d.MemoryBytes, 10), "memory limit in bytes (suffixes K, M, G); 0 for none")
	f.Int64Var(&o.pids, "pids", d.Pids, "task (process and thread) limit; 0 for none")
	f.Float64Var(&o.cpus, "cpus", 0, "CPU quota in cores; 0 for none")
	f.BoolVar(&o.userns, "userns", false, "use a user namespace even as root (always used when not root)")
	f.StringVar(&o.stateDir, "state-dir", "", "state directory (default "+sandbox.DefaultStateDir()+")")
	f.BoolVar(&o.verbose, "verbose", false, "print what was applied (to stderr)")
	return cmd
}

// runExec turns the options into a sandbox.Spec and runs it.
func runExec(cmd *cobra.Command, o execOptions, args []string) error {
	spec, err := o.spec(args)
	if err != nil {
		return &exitError{Code: exitUsage, Err: err}
	}
	errOut := cmd.ErrOrStderr()
	// Leftovers of a supervisor that was killed go first; our own live
	// sandboxes and other supervisors' are skipped by owner.
	if _, err := sandbox.Sweep(spec.StateDir); err != nil && o.verbose {
		fmt.Fprintf(errOut, "exec: sweep: %v\n", err)
	}
	// SIGINT, SIGTERM and SIGHUP do not end exec by their default action,
	// which would skip every cleanup: the first is passed on to the
	// subject (as a shell passes it to its foreground job), a second kills
	// the sandbox, and exec then ends as usual with the subject's status.
	// Registered before Start so that none is lost while the sandbox
	// starts. (SIGKILL cannot be caught: the next start's sweep removes
	// what it leaves.)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(sigs)
	box, err := sandbox.Start(context.Background(), spec)
	defer box.Destroy()
	if err != nil {
		if ee, ok := errors.AsType[*sandbox.ExecError](err); ok {
			return &exitError{Code: ee.Code, Err: err}
		}
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", err)}
	}
	done := make(chan struct{})
	defer close(done)
	go forwardSignals(box, sigs, done)
	if o.verbose {
		enc := json.NewEncoder(errOut)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Applied  sandbox.Applied  `json:"applied"`
			Evidence sandbox.Evidence `json:"evidence"`
		}{box.Applied(), box.Evidence()})
	}
	exit, err := box.Wait()
	if err != nil {
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", err)}
	}
	if err := box.Destroy(); err != nil {
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", err)}
	}
	if o.verbose {
		b, _ := json.Marshal(exit)
		fmt.Fprintf(errOut, "exec: subject exit %s\n", b)
	}
	if st := exit.ShellStatus(); st != 0 {
		return &exitError{Code: st}
	}
	return nil
}

// spec builds the sandbox.Spec.
func (o execOptions) spec(args []string) (sandbox.Spec, error) {
	s := sandbox.Spec{
		Args:          args,
		Env:           os.Environ(),
		Stdin:         os.Stdin,
		Stdout:        os.Stdout,
		Stderr:        os.Stderr,
		StateDir:      o.stateDir,
		UserNamespace: o.userns,
		Limits:        sandbox.Limits{Pids: o.pids, CPUs: o.cpus},
	}
	s.Env = sandboxEnv(s.Env)
	mem, err := parseSize(o.memory)
	if err != nil {
		return s, fmt.Errorf("--memory: %w", err)
	}
	s.Limits.MemoryBytes = mem
	switch {
	case len(o.allow) > 0:
		if o.network != "deny" && o.network != string(netpolicy.AllowList) {
			return s, fmt.Errorf("--allow and --network %s conflict", o.network)
		}
		s.Network.Mode = netpolicy.AllowList
		for _, a := range o.allow {
			hp, err := netpolicy.ParseHostPort(a)
			if err != nil {
				return s, fmt.Errorf("--allow: %w", err)
			}
			s.Network.Allowed = append(s.Network.Allowed, hp)
		}
	case o.network == "deny":
		s.Network.Mode = netpolicy.Deny
	default:
		return s, fmt.Errorf("--network %q: want deny, or --allow HOST:PORT", o.network)
	}
	// Without --root or --rootfs the subject gets an empty scratch root
	// that lives and dies with the sandbox's state (swept after a crash).
	s.ScratchRoot = o.root == "" && o.rootfs == ""
	for _, p := range []*string{&o.root, &o.rootfs} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return s, err
			}
		}
	}
	s.Root, s.RootFS = o.root, o.rootfs
	return s, s.Validate()
}

// sandboxEnv keeps the caller's environment except what names host
// places the sandbox cannot see or should not learn.
func sandboxEnv(env []string) []string {
	var out []string
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		switch k {
		case "HOME", "PWD", "OLDPWD", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "TMPDIR":
			continue
		}
		out = append(out, e)
	}
	return append(out, "HOME="+sandbox.Workdir, "PWD="+sandbox.Workdir)
}

// parseSize reads "512M", "1G", "1048576".
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mult = 1 << 10
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult = 1 << 20
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "g"):
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * mult, nil
}

// forwardSignals passes the first signal to the subject and kills the
// sandbox on the second, until done is closed.
func forwardSignals(box *sandbox.Sandbox, sigs <-chan os.Signal, done <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		case sig := <-sigs:
			if n == 0 {
				_ = box.Signal(sig.(unix.Signal))
			} else {
				_ = box.Kill()
			}
		}
	}
}
