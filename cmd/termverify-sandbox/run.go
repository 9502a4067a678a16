package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

// runOptions are run's flags: the request and the input script, and the
// flags run shares with replay.
type runOptions struct {
	request string
	inputs  string
	runFlags
}

// runFlags are the flags of a run that replay takes too: where the subject
// runs, under which policy, limits and deadlines, and where the outputs go.
type runFlags struct {
	roots      []string
	rootfs     string
	isolation  string
	require    string
	limits     limitFlags
	stderrMax  string
	stateDir   string
	handshake  time.Duration
	epoch      time.Duration
	runLimit   time.Duration
	transcript string
	evidence   string
	stderr     string
	pty        bool
	marker     bool
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --request FILE [--inputs FILE] --root ID=DIR --transcript FILE [flags] -- SUBJECT [ARGS...]",
		Short: "Run a subject in the sandbox over termverify.control/v1 and record its transcript",
		Long: `run spawns SUBJECT inside the sandbox (or, with --isolation none, directly in
the mapped root), sends session.hello with the request's config, runs one
single-flight epoch per input of the script, drains the stop, and writes a
termverify.transcript/v1 transcript whose seven receipts say per constraint
whether an OS mechanism enforced it (os) or it was only delivered.

With --pty, SUBJECT is an unmodified terminal program instead: it runs on a
pseudoterminal of the sandbox's own (TERM=xterm-256color, LANG=C.UTF-8),
each input is typed as xterm would send it, and each epoch closes with an
observation of the screen when the kernel says the program waits for
input again (docs/PTY.md). Inputs may then also be input.mouse and
input.clipboard_set.

SUBJECT is resolved as a shell in the mapped root would resolve it: the
mapped root is the working directory (/sandbox inside), so ./app and
/usr/bin/python3 app.py both work.

Exit status: 0 the run finished and the subject exited 0; 1 the run
finished otherwise, failed, was unsupported (the transcript says how);
2 usage or host error, no transcript written.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return &exitError{Code: exitUsage, Err: errors.New("run: give the subject command after --")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.request, "request", "", `request file {"run_id", "config", "subject"} (required)`)
	f.StringVar(&o.inputs, "inputs", "", `input script: JSONL, one {"kind", "payload"} per line ("-" for stdin)`)
	o.runFlags.register(f)
	return cmd
}

// register defines the shared flags on f.
func (o *runFlags) register(f *pflag.FlagSet) {
	f.StringArrayVar(&o.roots, "root", nil, "map filesystem root_id ID to host directory DIR: ID=DIR (repeatable)")
	f.StringVar(&o.rootfs, "rootfs", "", "complete root filesystem (read-only) instead of the host's system directories")
	f.StringVar(&o.isolation, "isolation", "auto", "os (refuse unless filesystem and network get the os tier), auto (strongest available), none (no namespaces)")
	f.StringVar(&o.require, "require", "", "minimum tier per constraint, e.g. filesystem=os,network=os; a weaker run ends as run.unsupported")
	o.limits.register(f)
	f.StringVar(&o.stateDir, "state-dir", "", "sandbox state directory (default "+sandbox.DefaultStateDir()+")")
	f.DurationVar(&o.handshake, "handshake-timeout", supervisor.DefaultHandshakeTimeout, "deadline for the whole handshake")
	f.DurationVar(&o.epoch, "epoch-timeout", supervisor.DefaultEpochTimeout, "deadline for each whole epoch (and the stop drain)")
	f.DurationVar(&o.runLimit, "run-timeout", supervisor.DefaultRunTimeout, "deadline for the whole run")
	f.StringVar(&o.transcript, "transcript", "", `transcript file, written whole or not at all ("-" for stdout) (required)`)
	f.StringVar(&o.evidence, "evidence", "", "write volatile host evidence (namespaces, cgroups, pids, times, stderr) as JSON")
	f.StringVar(&o.stderr, "stderr", "", "write the subject's stderr to FILE, a regular file with no symlink on its path (default: discarded)")
	f.BoolVar(&o.pty, "pty", false, "run SUBJECT as an unmodified terminal program on a terminal of the sandbox's own and record its screens (docs/PTY.md), instead of over termverify.control/v1")
	f.BoolVar(&o.marker, "ready-marker", false, "with --pty: an epoch closes when the program prints $TERMVERIFY_READY_MARKER (upstream's <<termverify.ready:RUN_ID>>) instead of when the kernel says it waits for input; typed text that could echo a marker is refused")
	f.StringVar(&o.stderrMax, "stderr-limit", fmt.Sprint(supervisor.DefaultStderrLimit), "largest --stderr file; what the subject writes beyond it is counted in the evidence and dropped")
}

func runRun(cmd *cobra.Command, o runOptions, args []string) error {
	singlePInit() // the subject never gets our environment
	req, err := o.toRequest(args)
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("run: %w", termsafe.Error(err))}
	}
	if o.transcript == "-" {
		req.Transcript = cmd.OutOrStdout()
	}
	errOut := cmd.ErrOrStderr()
	req.Logf = func(format string, args ...any) { fmt.Fprintf(errOut, "run: "+format+"\n", termsafe.Args(args)...) }
	ctx, stop := supervisor.InterruptContext(cmd.Context())
	defer stop()
	res, err := supervisor.Run(ctx, req)
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("run: %w", termsafe.Error(err))}
	}
	if res.Succeeded() {
		return nil
	}
	return &exitError{Code: exitFailed, Err: fmt.Errorf("run: %s", describeResult(res))}
}

// toRequest turns the flags into a supervisor.Request.
func (o runOptions) toRequest(args []string) (supervisor.Request, error) {
	var req supervisor.Request
	if o.request == "" {
		return req, errors.New("--request is required")
	}
	if o.transcript == "" {
		return req, errors.New("--transcript is required")
	}
	rf, err := supervisor.ReadRunFile(o.request)
	if err != nil {
		return req, err
	}
	req.RunID, req.Config, req.Subject = rf.RunID, rf.Config, rf.Subject
	// Each reader enforces its file's size limit while reading.
	switch {
	case o.inputs == "-":
		req.Inputs, err = supervisor.ParseInputs(os.Stdin, o.mode())
	case o.inputs != "":
		req.Inputs, err = supervisor.ReadInputsFile(o.inputs, o.mode())
	}
	if err != nil {
		return req, err
	}
	return req, o.apply(&req, args)
}

// mode is the run mode --pty picks.
func (o runFlags) mode() supervisor.Mode {
	if o.pty {
		return supervisor.ModePTY
	}
	return supervisor.ModeControl
}

// apply sets the shared flags' fields of req; args is the subject's argv.
func (o runFlags) apply(req *supervisor.Request, args []string) error {
	var err error
	req.Roots = map[string]string{}
	for _, r := range o.roots {
		id, dir, ok := strings.Cut(r, "=")
		if !ok || id == "" || dir == "" {
			return fmt.Errorf("--root %q: want ID=DIR", r)
		}
		if _, dup := req.Roots[id]; dup {
			return fmt.Errorf("--root %s given twice", id)
		}
		req.Roots[id] = dir
	}
	if req.Isolation, err = receipts.ParseIsolation(o.isolation); err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	if req.Require, err = receipts.ParseRequire(o.require); err != nil {
		return fmt.Errorf("--require: %w", err)
	}
	if req.Limits, err = o.limits.limits(); err != nil {
		return err
	}
	if req.StderrLimit, err = parseSize(o.stderrMax); err != nil {
		return fmt.Errorf("--stderr-limit: %w", err)
	}
	req.Args, req.RootFS, req.StateDir, req.PTY, req.ReadyMarker = args, o.rootfs, o.stateDir, o.pty, o.marker
	req.Deadlines = supervisor.Deadlines{Handshake: o.handshake, Epoch: o.epoch, Run: o.runLimit}
	if o.transcript != "-" {
		req.TranscriptPath = o.transcript
	}
	req.EvidencePath, req.StderrPath = o.evidence, o.stderr
	return nil
}

// describeResult is the one-line reason for a non-zero exit. The codes and
// messages are the subject's words: each is escaped for the terminal.
func describeResult(r supervisor.Result) string {
	switch r.Outcome {
	case transcript.KindRunFinished:
		if r.Exit.Kind == transcript.ExitSignal {
			return "the subject was killed by SIG" + termsafe.String(r.Exit.Signal)
		}
		return fmt.Sprintf("the subject exited with status %d", r.Exit.Code)
	case transcript.KindRunUnsupported:
		return fmt.Sprintf("unsupported: %s (%s): %s", termsafe.String(string(r.Refusal.Constraint)),
			termsafe.String(r.Refusal.Code), termsafe.String(r.Refusal.Message))
	case transcript.KindRunFailed:
		return fmt.Sprintf("failed (%s): %s", termsafe.String(r.Error.Code), termsafe.String(r.Error.Message))
	}
	return "no outcome"
}
