package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/transcript"
)

// newValidateCmd checks transcripts with the strict codec.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check termverify.transcript/v1 transcripts with the strict codec",
		Long: `Checks each FILE ("-" for stdin) with the strict termverify.transcript/v1
codec, as it reads it (no file is held in memory whole), and prints one
line per file:

  FILE: OK (N records)
  FILE: record S (line L): RULE: detail
  FILE: RULE: detail                      (a whole-file rule)

Exit status: 0 when every file is valid, 1 when any is invalid, 2 on a usage
or I/O error.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &exitError{Code: exitUsage, Err: errors.New("validate: name at least one FILE (- for stdin)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			invalid := false
			for _, name := range args {
				n, err := validateFile(cmd.InOrStdin(), name)
				if _, ok := errors.AsType[*transcript.Error](err); err != nil && !ok {
					return &exitError{Code: exitUsage, Err: fmt.Errorf("validate %s: %w", termsafe.String(name), termsafe.Error(err))}
				}
				if err != nil {
					invalid = true
				}
				if _, werr := fmt.Fprintln(out, formatValidationCount(name, n, err)); werr != nil {
					return &exitError{Code: exitUsage, Err: fmt.Errorf("validate: write stdout: %w", werr)}
				}
			}
			if invalid {
				return &exitError{Code: exitFailed} // the lines above said why
			}
			return nil
		},
	}
}

// readTranscript reads and parses the transcript name ("-": stdin), for
// the commands that use its records.
func readTranscript(stdin io.Reader, name string) (*transcript.Transcript, error) {
	if name == "-" {
		return transcript.Read(stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return transcript.Read(f)
}

// validateFile checks the transcript name ("-": stdin) and returns its
// record count.
func validateFile(stdin io.Reader, name string) (int, error) {
	if name == "-" {
		return transcript.ValidateReader(stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return transcript.ValidateReader(f)
}

// formatValidation is the one-line verdict for a file. The detail may quote
// the transcript and the name may be a file a subject named, so the line is
// escaped for the terminal: it stays one line whatever they hold.
func formatValidation(name string, t *transcript.Transcript, err error) string {
	n := 0
	if t != nil {
		n = len(t.Records)
	}
	return formatValidationCount(name, n, err)
}

// formatValidationCount is formatValidation from a record count.
func formatValidationCount(name string, records int, err error) string {
	e, ok := errors.AsType[*transcript.Error](err)
	var line string
	switch {
	case err == nil:
		line = fmt.Sprintf("%s: OK (%d records)", name, records)
	case ok && e.Record < 0:
		line = fmt.Sprintf("%s: %s: %v", name, e.Rule, e.Err)
	case ok:
		line = fmt.Sprintf("%s: record %d (line %d): %s: %v", name, e.Record, e.Line, e.Rule, e.Err)
	default:
		line = fmt.Sprintf("%s: %v", name, err)
	}
	return termsafe.String(line)
}
