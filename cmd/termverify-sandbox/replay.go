package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/receipts"
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

// notRun says why a source never ran ("" when it did): it ended
// run.unsupported, or run.failed with no observation of a running subject
// (the readiness observation never came). Upstream's rule: only an
// observation whose process is absent or running shows that the run
// reached execution.
func notRun(t *transcript.Transcript) string {
	last := &t.Records[len(t.Records)-1]
	p := last.Payload()
	str := func(v *canon.Value, name string) string {
		if m, ok := v.Get(name); ok && m.Kind == canon.String {
			return m.Str
		}
		return ""
	}
	switch last.Kind {
	case transcript.KindRunUnsupported:
		return fmt.Sprintf("the source ended run.unsupported (%s, %s): %s", str(p, "constraint"), str(p, "code"), str(p, "message"))
	case transcript.KindRunFailed:
		for i := range t.Records {
			if reachedExecution(&t.Records[i]) {
				return ""
			}
		}
		e, _ := p.Get("error")
		if e == nil {
			e = &canon.Value{}
		}
		return fmt.Sprintf("the source ended run.failed (%s) before any observation of a running subject: %s", str(e, "code"), str(e, "message"))
	}
	return ""
}

// reachedExecution reports whether r is an observation of a running
// subject: its process member is absent or running.
func reachedExecution(r *transcript.Record) bool {
	if r.Kind != transcript.KindObservation {
		return false
	}
	proc, ok := r.Payload().Get("process")
	if !ok {
		return true
	}
	state, ok := proc.Get("state")
	return !ok || state.Kind != canon.String || state.Str != "exited"
}

// unsendable names the source's inputs a control/v1 subject cannot
// receive, each kind once with its first seq; "" when there are none.
func unsendable(t *transcript.Transcript, kinds []string) string {
	var found []string
	seen := map[string]bool{}
	for i := range t.Records {
		r := &t.Records[i]
		if !strings.HasPrefix(r.Kind, "input.") || slices.Contains(kinds, r.Kind) || seen[r.Kind] {
			continue
		}
		seen[r.Kind] = true
		found = append(found, fmt.Sprintf("%s (first at seq %d)", r.Kind, r.Seq))
	}
	return strings.Join(found, ", ")
}

// ptyRecorded reports whether the source was recorded in PTY mode: its
// terminal receipt is os by the sandbox's pty. A replay in the other mode
// would diverge at every observation, having compared nothing useful.
func ptyRecorded(t *transcript.Transcript) bool {
	for _, r := range t.Receipts() {
		if r.Constraint == receipts.Terminal {
			return r.Tier == receipts.OS && r.Mechanism == receipts.MechanismPTY
		}
	}
	return false
}

// replayRequest builds the replay's request from the source and the flags.
func (o replayOptions) replayRequest(src *transcript.Transcript, args []string) (supervisor.Request, error) {
	var req supervisor.Request
	if o.transcript == "" {
		return req, errors.New("--transcript is required")
	}
	if o.transcript == "-" {
		return req, errors.New("--transcript: give a file; replay prints its verdict on stdout and reads the new transcript back to compare it")
	}
	if recorded := ptyRecorded(src); recorded != o.pty {
		mode := map[bool]string{true: "in PTY mode (its terminal receipt names the sandbox's pty): replay it with --pty", false: "over control/v1: replay it without --pty"}[recorded]
		return req, fmt.Errorf("the source was recorded %s; nothing was started", mode)
	}
	kinds := supervisor.InputKinds(o.pty)
	if bad := unsendable(src, kinds); bad != "" {
		return req, fmt.Errorf("the source has inputs a control/v1 subject cannot receive: %s; replay them with --pty, or against a terminal program; nothing was started", bad)
	}
	// The subject reads the run id in session.hello (the echo subject
	// echoes it in its state), so the source's is the default: another id
	// is another input.
	req.RunID = o.runID
	if req.RunID == "" {
		req.RunID = src.RunID
	}
	req.Config = src.Config()
	sv, _ := src.Records[0].Payload().Get("subject")
	subj, err := transcript.DecodeSubject(sv)
	if err != nil {
		return req, fmt.Errorf("the source's subject: %w", err)
	}
	// The adapter and platform are recorded, not replayed: this tool and
	// this host. Whether they match the source is reported, not enforced.
	subj.Adapter, subj.Platform = transcript.Selector{}, nil
	req.Subject = subj
	if req.Inputs, err = src.Inputs(kinds...); err != nil {
		return req, fmt.Errorf("the source's inputs: %w", err)
	}
	req.Replay = true
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
	if why := notRun(src); why != "" {
		var text []byte
		if o.json {
			if text, err = marshalJSON(replayJSON{Format: replayFormat, Source: source, Replayed: false, NotRun: why}); err != nil {
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
	v := compare.Transcripts(src, replayed, ignores...)
	subjectDiff := compare.Subjects(src, replayed)
	var text []byte
	if o.json {
		matches := len(subjectDiff) == 0
		c := compareReport(source, o.transcript, &v)
		r := replayJSON{Format: replayFormat, Source: source, Replayed: true, Transcript: o.transcript,
			Outcome: res.Outcome, SubjectMatches: &matches, SubjectDifferences: subjectDiff, Comparison: &c}
		if text, err = marshalJSON(r); err != nil {
			return usage(err)
		}
	} else {
		var b strings.Builder
		fmt.Fprintf(&b, "replay  %s\n", termsafe.String(outcomeLine(res)))
		if len(subjectDiff) == 0 {
			b.WriteString("subject matches the source\n")
		} else {
			fmt.Fprintf(&b, "subject differs from the source in %s\n", termsafe.String(strings.Join(subjectDiff, ", ")))
		}
		b.WriteString(renderVerdict(source, o.transcript, &v, colorOn(out)))
		text = []byte(b.String())
	}
	if _, err := out.Write(text); err != nil {
		return usage(err)
	}
	if !v.Equivalent {
		return &exitError{Code: exitFailed}
	}
	return nil
}

// outcomeLine is the new run's outcome in a few words.
func outcomeLine(r supervisor.Result) string {
	if r.Succeeded() {
		return "run.finished: the subject exited with status 0"
	}
	return r.Outcome + ": " + describeResult(r)
}

// replayFormat names replay's --json report.
const replayFormat = "termverify-sandbox.replay/v1"

// replayJSON is replay's --json report.
type replayJSON struct {
	Format             string       `json:"format"`
	Source             string       `json:"source"`
	Replayed           bool         `json:"replayed"`
	NotRun             string       `json:"not_run,omitempty"`
	Transcript         string       `json:"transcript,omitempty"`
	Outcome            string       `json:"outcome,omitempty"`
	SubjectMatches     *bool        `json:"subject_matches,omitempty"`
	SubjectDifferences []string     `json:"subject_differences,omitempty"`
	Comparison         *compareJSON `json:"comparison,omitempty"`
}
