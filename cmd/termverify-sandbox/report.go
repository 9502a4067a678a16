package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/report"
)

// newReportCmd writes the HTML report of one or more transcripts.
func newReportCmd() *cobra.Command {
	var html string
	cmd := &cobra.Command{
		Use:   "report TRANSCRIPT... --html OUT",
		Short: "Write one self-contained HTML page showing recorded runs: verdict, receipts, every epoch's screen",
		Long: `report validates each TRANSCRIPT ("-" for stdin, once at most) with the strict
codec and writes OUT, one HTML file that loads nothing (no network, no
external script, style or font), opens from disk and prints. Per run: the
verdict; the receipts with their tiers told apart (os, delivered,
unsupported); the epochs in order, each with its inputs, diagnostics and
observation — for a PTY-mode run the screen in its colours, attributes and
cursor, rendered from the recorded output and checked against the recorded
frame, with the lines changed since the epoch before marked; for control/v1
the state and the frame. A timeline links every epoch; the arrow keys (or
j and k) move between them. docs/REPORTS.md has the sections.

Everything a subject wrote is shown as text, never as markup. OUT is
written whole or not at all, never through a symbolic link.

Exit status: 0 written; 2 a usage error, an invalid transcript (named), or
an I/O error.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &exitError{Code: exitUsage, Err: errors.New("report: give at least one TRANSCRIPT file")}
			}
			stdin := 0
			for _, a := range args {
				if a == "-" {
					stdin++
				}
			}
			if stdin > 1 {
				return &exitError{Code: exitUsage, Err: errors.New("report: only one TRANSCRIPT can be stdin (-)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, html, args)
		},
	}
	cmd.Flags().StringVar(&html, "html", "", "write the report to `OUT` (required)")
	return cmd
}

func runReport(cmd *cobra.Command, html string, names []string) error {
	if html == "" {
		return &exitError{Code: exitUsage, Err: errors.New("report: --html OUT is required (the only format report writes)")}
	}
	runs := make([]report.Run, 0, len(names))
	for _, name := range names {
		t, err := readTranscript(cmd.InOrStdin(), name)
		if err != nil {
			return &exitError{Code: exitUsage, Err: fmt.Errorf("report: %s", formatValidation(name, t, err))}
		}
		runs = append(runs, report.Run{Name: name, Transcript: t})
	}
	if err := writeOutput(html, func(w io.Writer) error { return report.WriteRuns(w, runs) }); err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("report: --html %w", termsafe.Error(err))}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: report of %d run%s\n", termsafe.String(html), len(runs), map[bool]string{true: "s"}[len(runs) != 1])
	return nil
}
