package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/batch"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/supervisor"
)

// batchOptions are batch's flags: run's shared flags but the per-run
// outputs (each entry's go to --out), and the batch's own.
type batchOptions struct {
	runFlags
	jobs     int
	shard    string
	out      string
	junit    string
	summary  string
	html     string
	evidence bool
	stderr   bool
}

// perRunOutputs are run's flags that name one run's files: a batch names
// them after each entry in --out instead.
var perRunOutputs = map[string]bool{"transcript": true, "evidence": true, "stderr": true}

func newBatchCmd() *cobra.Command {
	var o batchOptions
	cmd := &cobra.Command{
		Use:   "batch MANIFEST|DIR --out DIR [-j N] [--shard I/N] [--junit FILE] [--summary FILE] [--html FILE] [run flags] [-- SUBJECT [ARGS...]]",
		Short: "Run the runs of a manifest or a directory of requests, N at a time, with JUnit and JSON reports",
		Long: `batch runs every entry of MANIFEST (JSONL, or a JSON array: per entry a
request file, an inputs file, roots ID=DIR, a subject argv and a name;
paths relative to the manifest's directory) or of DIR (NAME.json requests,
each with NAME.inputs.jsonl beside it if present), as run would, at most
-j at a time. --root and the subject after -- are the defaults of entries
that give none (and the only ones in DIR mode). See docs/BATCH.md.

--shard I/N runs only the entries whose 0-based manifest position modulo N
is I (I from 0 to N-1, as Kubernetes' JOB_COMPLETION_INDEX counts; a CI
system that counts from 1 passes its index minus one).

Each entry's transcript is --out/NAME.jsonl (with --evidence,
NAME.evidence.json; with --stderr, NAME.stderr). --html FILE writes one
HTML page: the summary, then each entry's run (docs/REPORTS.md). On a terminal, stderr
shows one updating progress line. SIGINT, SIGTERM or SIGHUP stops the
batch: the runs in progress end run.failed (interrupted) with their
sandboxes torn down and transcripts kept; entries not started are
reported skipped.

Exit status: 0 every entry finished with exit 0; 1 any entry did not
(failed, unsupported, skipped); 2 usage or host error (a bad manifest
starts nothing; an entry whose run could not start is an error case).`,
		Args: func(cmd *cobra.Command, args []string) error {
			n := cmd.ArgsLenAtDash()
			if !(n < 0 && len(args) == 1) && !(n == 1 && len(args) >= 2) {
				return &exitError{Code: exitUsage, Err: errors.New("batch: give one MANIFEST or DIR, then optionally the default subject after --")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBatch(cmd, o, args[0], args[1:])
		},
	}
	f := cmd.Flags()
	shared := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.runFlags.register(shared)
	shared.VisitAll(func(fl *pflag.Flag) {
		if !perRunOutputs[fl.Name] {
			f.AddFlag(fl)
		}
	})
	f.IntVarP(&o.jobs, "jobs", "j", 1, "runs at a time")
	f.StringVar(&o.shard, "shard", "0/1", "run only shard I of N: the entries at 0-based positions p with p mod N == I")
	f.StringVar(&o.out, "out", "", "directory for each entry's NAME.jsonl transcript (required)")
	f.StringVar(&o.junit, "junit", "", "write a JUnit XML report, one testcase per entry")
	f.StringVar(&o.summary, "summary", "", "write the JSON summary (termverify-sandbox.batch/v1)")
	f.StringVar(&o.html, "html", "", "write a self-contained HTML page: the summary, then each entry's run (docs/REPORTS.md)")
	f.BoolVar(&o.evidence, "evidence", false, "write each entry's evidence as --out/NAME.evidence.json")
	f.BoolVar(&o.stderr, "stderr", false, "write each entry's subject stderr as --out/NAME.stderr")
	return cmd
}

func runBatch(cmd *cobra.Command, o batchOptions, manifest string, subject []string) error {
	singlePInit() // the subject never gets our environment
	usage := func(err error) error {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("batch: %w", termsafe.Error(err))}
	}
	opts, err := o.toOptions(manifest, subject)
	if err != nil {
		return usage(err)
	}
	errOut := cmd.ErrOrStderr()
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(errOut, "batch: "+format+"\n", termsafe.Args(args)...) }
	if cols, ok := terminalColumns(errOut); ok {
		opts.Progress, opts.ProgressColumns = errOut, cols
	}
	ctx, stop := supervisor.InterruptContext(cmd.Context())
	defer stop()
	// The reports are written by batch.Run, even for an interrupted
	// batch: they say what ran.
	sum, err := batch.Run(ctx, opts)
	if err != nil {
		return usage(err)
	}
	t := sum.Totals
	line := fmt.Sprintf("%d entries: %d passed, %d failed, %d unsupported, %d errors, %d skipped",
		t.Entries, t.Passed, t.Failed, t.Unsupported, t.Errors, t.Skipped)
	if sum.Interrupted != "" {
		line = "interrupted (" + sum.Interrupted + "): " + line
	}
	if sum.ExitStatus == exitOK {
		return nil
	}
	return &exitError{Code: sum.ExitStatus, Err: errors.New("batch: " + termsafe.String(line))}
}

// toOptions turns the flags into the batch's options: the manifest read
// and sharded, and the shared run flags as every run's base request.
func (o batchOptions) toOptions(manifest string, subject []string) (batch.Options, error) {
	var opts batch.Options
	if o.out == "" {
		return opts, errors.New("--out is required")
	}
	if o.jobs < 1 {
		return opts, fmt.Errorf("--jobs %d: want at least 1", o.jobs)
	}
	shard, err := batch.ParseShard(o.shard)
	if err != nil {
		return opts, fmt.Errorf("--shard: %w", err)
	}
	// Every run would refuse a relative state directory on its own: one
	// usage error now instead of one failed run per entry.
	if o.stateDir != "" && !filepath.IsAbs(o.stateDir) {
		return opts, fmt.Errorf("--state-dir %s: give an absolute path", o.stateDir)
	}
	var base supervisor.Request
	// apply also checks the default roots; its output fields are replaced
	// per entry.
	if err := o.apply(&base, subject); err != nil {
		return opts, err
	}
	entries, err := batch.Load(manifest, batch.Defaults{Roots: o.roots, Subject: subject})
	if err != nil {
		return opts, err
	}
	return batch.Options{Manifest: manifest, Shard: shard, Entries: batch.Select(entries, shard), Base: base,
		Jobs: o.jobs, OutDir: o.out, JUnit: o.junit, Summary: o.summary, HTML: o.html, Evidence: o.evidence, Stderr: o.stderr}, nil
}

// terminalColumns reports whether w is a terminal, and its width.
func terminalColumns(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false
	}
	return int(ws.Col), true
}
