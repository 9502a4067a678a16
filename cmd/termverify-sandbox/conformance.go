package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/conformance"
	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
)

// defaultCorpus is the checked-in corpus, relative to a checkout's root.
const defaultCorpus = "testdata/conformance"

type conformanceOpts struct {
	corpus, validator, adapter, daemon, subjects string
	only                                         []string
	json                                         bool
}

// newConformanceCmd runs the conformance corpus (docs/CONFORMANCE.md).
func newConformanceCmd() *cobra.Command {
	var o conformanceOpts
	cmd := &cobra.Command{
		Use:   "conformance [--corpus DIR] [--validator CMD] [--adapter CMD] [--daemon CMD] [--subjects DIR] [--only FAMILY,...] [--json]",
		Short: "Run the conformance corpus against our codecs and adapter, or another implementation's, and print the parity summary",
		Long: `Runs every case of the conformance corpus (default ` + defaultCorpus + `, run from a
checkout's root) and compares each result with its golden one:

  codec, daemon   each file judged by the validator: ours, or --validator CMD
                  (run as CMD FORMAT FILE; docs/CONFORMANCE.md has the contract)
  adapter, pty    each scenario run by the adapter: ours (this binary's run),
                  or --adapter CMD (run with run's flags), its transcript
                  compared with the golden one, ignoring only x- members and
                  run.started's payload.subject.adapter
  session         request lines sent to a live daemon serving /bin/cat: ours
                  (this binary's term start), or --daemon CMD (run as
                  CMD --socket S -- /bin/cat), each reply compared

--subjects DIR is the directory holding the shipped subject (echo-subject),
mapped as the scenarios' root "app"; the adapter and pty families need it
(make conformance builds it), or leave them out with --only codec,daemon.

Prints each failing case, then the counts; --json prints the parity summary
instead: canonical JSON, byte-stable. A corpus whose fixtureVersion this
build does not know is refused.

Exit status: 0 when every case gave its golden result, 1 otherwise, 2 on a
usage error, a refused corpus or an I/O error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runConformance(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.corpus, "corpus", defaultCorpus, "the corpus directory (holding manifest.json)")
	f.StringVar(&o.validator, "validator", "", "another implementation's validator command (words split at spaces), run as CMD FORMAT FILE; default: our codecs")
	f.StringVar(&o.adapter, "adapter", "", "another implementation's adapter command (words split at spaces), run with run's flags; default: this binary's run")
	f.StringVar(&o.daemon, "daemon", "", "another implementation's daemon command (words split at spaces), run as CMD --socket S -- PROGRAM; default: this binary's term start")
	f.StringVar(&o.subjects, "subjects", "", "the directory holding echo-subject, mapped as root app for the adapter and pty scenarios")
	f.StringSliceVar(&o.only, "only", nil, "run only these families: "+strings.Join(conformance.Families, ", "))
	f.BoolVar(&o.json, "json", false, "print the parity summary as canonical JSON")
	cmd.AddCommand(newConformanceValidateCmd())
	return cmd
}

func runConformance(cmd *cobra.Command, o conformanceOpts) error {
	usage := func(err error) error { return &exitError{Code: exitUsage, Err: fmt.Errorf("conformance: %w", err)} }
	for _, f := range o.only {
		if !containsString(conformance.Families, f) {
			return usage(fmt.Errorf("--only %q is not a family (%s)", f, strings.Join(conformance.Families, ", ")))
		}
	}
	c, err := conformance.Load(o.corpus)
	if err != nil {
		return usage(err)
	}
	opts := conformance.Options{Families: o.only}
	if o.validator == "" {
		opts.Validator = conformance.Ours{}
	} else {
		opts.Validator = conformance.Command{Argv: strings.Fields(o.validator)}
	}
	self, err := os.Executable()
	if err != nil {
		return usage(fmt.Errorf("find this binary for the adapter and daemon: %w", err))
	}
	opts.Adapter = conformance.CommandAdapter{Argv: []string{self, "run"}}
	if o.adapter != "" {
		opts.Adapter = conformance.CommandAdapter{Argv: strings.Fields(o.adapter)}
	}
	opts.Daemon = conformance.CommandDaemon{Argv: []string{self, "term", "start"}}
	if o.daemon != "" {
		opts.Daemon = conformance.CommandDaemon{Argv: strings.Fields(o.daemon)}
	}
	if needsScenarios(c, o.only) {
		if o.subjects == "" {
			return usage(errors.New("the adapter and pty scenarios need --subjects DIR, the directory holding echo-subject (make conformance builds it); or run --only codec,daemon"))
		}
		if opts.Subjects, err = filepath.Abs(o.subjects); err != nil {
			return usage(err)
		}
		if _, err := os.Stat(filepath.Join(opts.Subjects, "echo-subject")); err != nil {
			return usage(fmt.Errorf("--subjects: %w (build it: go build -o DIR/echo-subject ./examples/echo-subject)", err))
		}
	}
	work, done, err := workDir()
	if err != nil {
		return usage(err)
	}
	defer done()
	opts.Work = work
	s, err := conformance.Run(cmd.Context(), c, opts)
	if err != nil {
		return usage(err)
	}
	out := cmd.OutOrStdout()
	if o.json {
		_, err = out.Write(s.Encode())
	} else {
		err = printSummary(out, s)
	}
	if err != nil {
		return usage(fmt.Errorf("write stdout: %w", err))
	}
	if !s.OK() {
		return &exitError{Code: exitFailed}
	}
	return nil
}

// workDir makes an empty directory of ours under the temporary
// directory, for decompressed case files and scenario transcripts, and
// returns it with the function that removes it (fd-relative; Run leaves
// it empty).
func workDir() (*safeout.Dir, func(), error) {
	tmp, err := safeout.OpenDir(os.TempDir())
	if err != nil {
		return nil, nil, fmt.Errorf("work directory: %w", err)
	}
	name := "tvs-conformance-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// A fresh directory, never one that was there (EEXIST is refused).
	if err := unix.Mkdirat(tmp.Fd(), name, 0o700); err != nil {
		tmp.Close()
		return nil, nil, fmt.Errorf("work directory %s: %w", filepath.Join(os.TempDir(), name), err)
	}
	work, err := tmp.MkdirAll([]string{name}, 0o700, filepath.Join(os.TempDir(), name))
	if err != nil {
		tmp.Close()
		return nil, nil, fmt.Errorf("work directory: %w", err)
	}
	return work, func() {
		work.Close()
		_ = unix.Unlinkat(tmp.Fd(), name, unix.AT_REMOVEDIR)
		tmp.Close()
	}, nil
}

func needsScenarios(c *conformance.Corpus, only []string) bool {
	for _, cs := range c.Manifest.Cases {
		if (cs.Family == conformance.FamilyAdapter || cs.Family == conformance.FamilyPTY) && (len(only) == 0 || containsString(only, cs.Family)) {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func printSummary(w interface{ Write([]byte) (int, error) }, s *conformance.Summary) error {
	var b strings.Builder
	for _, f := range s.Failures {
		// A result may quote a case's bytes or a command's stderr: each
		// line is made safe for the terminal on its own.
		fmt.Fprintf(&b, "FAIL %s\n  want %s\n  got  %s\n", termsafe.String(f.ID), termsafe.String(f.Want), termsafe.String(f.Got))
	}
	for _, fam := range conformance.Families {
		if c, ok := s.Families[fam]; ok {
			fmt.Fprintf(&b, "%-8s %d/%d passed\n", fam, c.Passed, c.Total)
		}
	}
	verdict := "PASS"
	if !s.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s: %d/%d cases gave their golden result (fixtureVersion %d), %d failed\n", verdict, s.Passed, s.Total, s.FixtureVersion, s.Failed)
	_, err := w.Write([]byte(b.String()))
	return err
}

// newConformanceValidateCmd is our codecs behind the outside-validator
// contract, so that the contract itself is tested end to end
// (--validator "termverify-sandbox conformance validate").
func newConformanceValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FORMAT FILE",
		Short: "Judge one case file with our codecs, as an outside validator must (docs/CONFORMANCE.md)",
		Long: `Judges FILE as FORMAT (control, transcript, inputs or daemon) with our codecs
and answers as the validator contract says: exit 0 when valid, printing the
message kind (control) or request type (daemon); exit 1 when invalid, with
"RULE LINE" as stderr's first line and, for daemon, the error reply line the
daemon sends on stdout; exit 2 on a usage or I/O error.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[1])
			if err != nil {
				return &exitError{Code: exitUsage, Err: fmt.Errorf("conformance validate: %w", err)}
			}
			v, err := conformance.Ours{}.Validate(cmd.Context(), args[0], data, args[1])
			if err != nil {
				return &exitError{Code: exitUsage, Err: fmt.Errorf("conformance validate: %w", err)}
			}
			out := cmd.OutOrStdout()
			if v.Valid {
				if v.Kind != "" {
					fmt.Fprintln(out, v.Kind)
				}
				return nil
			}
			if v.Reply != "" {
				fmt.Fprintln(out, v.Reply)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s %d\n", v.Rule, v.Line)
			return &exitError{Code: exitFailed}
		},
	}
}
