package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/control"
)

// newControlCmd groups the tools for termverify.control/v1, the wire a
// subject speaks on its stdin and stdout.
func newControlCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "control",
		Short: "Tools for subject authors: the termverify.control/v1 wire",
	}
	cmd.AddCommand(newControlCheckCmd())
	return cmd
}

// newControlCheckCmd checks message lines read on stdin with the same codec
// the supervisor uses on a subject's stdout.
func newControlCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check < MESSAGES",
		Short: "Say for each line on stdin whether it is a valid termverify.control/v1 message",
		Long: `Reads termverify.control/v1 message lines on stdin, exactly as the supervisor
reads a subject's stdout, and prints one verdict per line:

  line N: ok KIND (subject→adapter | adapter→subject)
  line N: RULE: [MEMBER: ]detail

Exit status: 0 when every line is a valid message, 1 otherwise, 2 on a usage
or I/O error. Valid means structurally valid on its own; lifecycle order
(hello first, one reply, epochs) is the supervisor's check, not this one's.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &exitError{Code: exitUsage, Err: fmt.Errorf("control check takes no arguments (messages come on stdin), got %q", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			var writeErr error
			valid, err := control.Check(cmd.InOrStdin(), func(v control.Verdict) {
				if writeErr == nil {
					_, writeErr = fmt.Fprintln(out, formatVerdict(v))
				}
			})
			switch {
			case err != nil:
				return &exitError{Code: exitUsage, Err: fmt.Errorf("control check: read stdin: %w", err)}
			case writeErr != nil:
				return &exitError{Code: exitUsage, Err: fmt.Errorf("control check: write stdout: %w", writeErr)}
			case !valid:
				return &exitError{Code: exitFailed} // the verdicts already said why
			}
			return nil
		},
	}
}

func formatVerdict(v control.Verdict) string {
	if v.Err != nil {
		return fmt.Sprintf("line %d: %v", v.Line, v.Err)
	}
	return fmt.Sprintf("line %d: ok %s (%s)", v.Line, v.Kind, v.Kind.Direction())
}
