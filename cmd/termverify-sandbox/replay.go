package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/replay"
	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

// replayOptions are replay's flags: run's shared flags, compare's output
// flags, and the new run's id.
type replayOptions struct {
	runFlags
	compareFlags
	runID string
}

func newReplayCmd() *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay SOURCE --root ID=DIR --transcript OUT [flags] -- SUBJECT [ARGS...]",
		Short: "Re-run a transcript's config and inputs against a subject and compare the new transcript with it",
		Long: `replay validates SOURCE strictly, then runs SUBJECT as run does, with the
config and replay subject of SOURCE's run.started (adapter and platform are
this tool's and this host's) and SOURCE's inputs exactly as recorded: no
input.stop is added, and when the inputs run out with the run still open
the new run ends run.failed replay-not-terminated. It then compares SOURCE
(left) with the new transcript OUT (right) as compare does, says whether
the replay subject of SOURCE matches the one OUT records, and prints the
verdict.

A SOURCE that ended run.unsupported, or run.failed before any observation
of a running subject, never ran: it is reported as not run and nothing is
started. A SOURCE with an input a control/v1 subject cannot receive
(input.mouse, input.clipboard_set) is refused before anything starts.

Exit status: 0 equivalent; 1 divergent, or SOURCE was not run; 2 SOURCE is
not a valid transcript or cannot be replayed, a usage or host error, or the
run put no transcript in place.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 || len(args) < 2 {
				return &exitError{Code: exitUsage, Err: errors.New("replay: give SOURCE, then the subject command after --")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, o, args[0], args[1:])
		},
	}
	f := cmd.Flags()
	o.runFlags.register(f)
	f.Lookup("transcript").Usage = "the new transcript, written whole or not at all (required; a file: the verdict goes to stdout)"
	f.StringVar(&o.runID, "run-id", "", "the new run's id, which the subject reads in session.hello (default: SOURCE's run id)")
	o.compareFlags.register(cmd)
	return cmd
}

// replayRequest builds the replay's request from the source and the
// flags: replay.Request, then run's shared flags. The library's refusals
// get the flag that would have avoided them.
func (o replayOptions) replayRequest(src *transcript.Transcript, args []string) (supervisor.Request, error) {
	if o.transcript == "" {
		return supervisor.Request{}, errors.New("--transcript is required")
	}
	if o.transcript == "-" {
		return supervisor.Request{}, errors.New("--transcript: give a file; replay prints its verdict on stdout and reads the new transcript back to compare it")
	}
	req, err := replay.Request(src, replay.Options{RunID: o.runID, Mode: o.mode()})
	if me, ok := errors.AsType[*replay.ModeError](err); ok {
		how := map[supervisor.Mode]string{supervisor.ModePTY: "with", supervisor.ModeControl: "without"}[me.Recorded]
		return req, fmt.Errorf("%w: replay it %s --pty; nothing was started", err, how)
	}
	if _, ok := errors.AsType[*replay.InputsError](err); ok {
		return req, fmt.Errorf("%w; replay them with --pty, or against a terminal program; nothing was started", err)
	}
	if err != nil {
		return req, err
	}
	return req, o.apply(&req, args)
}

func runReplay(cmd *cobra.Command, o replayOptions, source string, args []string) error {
	singlePInit() // the subject never gets our environment
	usage := func(err error) error {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("replay: %w", termsafe.Error(err))}
	}
	ignores, err := o.parseIgnores()
	if err != nil {
		return usage(err)
	}
	src, err := readTranscript(cmd.InOrStdin(), source)
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("replay: the source is not a valid transcript: %s", formatValidation(source, src, err))}
	}
	out := cmd.OutOrStdout()
	if why := replay.NotRun(src); why != "" {
		var text []byte
		if o.json {
			if text, err = marshalJSON(replay.NotRunReport(source, why)); err != nil {
				return usage(err)
			}
		} else {
			text = []byte(termsafe.String(fmt.Sprintf("not run: %s: %s; nothing was started", source, why)) + "\n")
		}
		if _, err := out.Write(text); err != nil {
			return usage(err)
		}
		return &exitError{Code: exitFailed}
	}
	req, err := o.replayRequest(src, args)
	if err != nil {
		return usage(err)
	}
	errOut := cmd.ErrOrStderr()
	req.Logf = func(format string, args ...any) { fmt.Fprintf(errOut, "replay: "+format+"\n", termsafe.Args(args)...) }
	ctx, stop := supervisor.InterruptContext(cmd.Context())
	defer stop()
	res, err := supervisor.Run(ctx, req)
	if err != nil {
		return usage(err)
	}
	f, err := os.Open(o.transcript)
	if err != nil {
		return usage(err)
	}
	replayed, err := transcript.Read(f)
	f.Close()
	if err != nil {
		return usage(fmt.Errorf("the new transcript %s: %w", o.transcript, err))
	}
	c := replay.Compare(src, replayed, ignores...)
	rep := c.Report(source, o.transcript, res.Outcome)
	var text []byte
	if o.json {
		if text, err = marshalJSON(rep); err != nil {
			return usage(err)
		}
	} else {
		text = []byte(renderReplay(&rep, res, colorOn(out)))
	}
	if _, err := out.Write(text); err != nil {
		return usage(err)
	}
	if !rep.Comparison.Equivalent {
		return &exitError{Code: exitFailed}
	}
	return nil
}

// renderReplay is the text view of r, the report --json prints, with the
// new run's outcome in words from res.
func renderReplay(r *replay.Report, res supervisor.Result, color bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay  %s\n", termsafe.String(outcomeLine(res)))
	if *r.SubjectMatches {
		b.WriteString("subject matches the source\n")
	} else {
		fmt.Fprintf(&b, "subject differs from the source in %s\n", termsafe.String(strings.Join(r.SubjectDifferences, ", ")))
	}
	b.WriteString(renderReport(r.Comparison, color))
	return b.String()
}

// outcomeLine is the new run's outcome in a few words.
func outcomeLine(r supervisor.Result) string {
	if r.Succeeded() {
		return "run.finished: the subject exited with status 0"
	}
	return r.Outcome + ": " + describeResult(r)
}
