package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// receiptsOptions are receipts' flags.
type receiptsOptions struct {
	json    bool
	require string
}

func newReceiptsCmd() *cobra.Command {
	var o receiptsOptions
	cmd := &cobra.Command{
		Use:   "receipts FILE [--json] [--require constraint=tier,...]",
		Short: "Show a transcript's seven receipts and check them against a policy",
		Long: `receipts validates FILE strictly and prints the audit view of its capability
receipts: per constraint the status, tier, effective value, delivery channel
and variables (or the OS mechanism), and the reason of an unsupported one;
then the weakest tier. --json prints the same report as JSON.

Exit status: 0 the transcript is valid and meets --require; 1 it is invalid
or a required tier is not met (each shortfall is named on stderr); 2 usage
or I/O error.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &exitError{Code: exitUsage, Err: errors.New("receipts: give exactly one transcript file")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReceipts(cmd, o, args[0])
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&o.require, "require", "", "minimum tier per constraint, e.g. filesystem=os,network=os")
	return cmd
}

func runReceipts(cmd *cobra.Command, o receiptsOptions, path string) error {
	require, err := receipts.ParseRequire(o.require)
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("receipts: --require: %w", err)}
	}
	// Everything below may come from the transcript, which anyone may have
	// written: every string is escaped for the terminal (internal/termsafe).
	data, err := os.ReadFile(path)
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("receipts: %w", termsafe.Error(err))}
	}
	report, err := audit(data)
	if err != nil {
		return &exitError{Code: exitFailed, Err: fmt.Errorf("receipts: %s: %w", termsafe.String(path), termsafe.Error(err))}
	}
	var text []byte
	if o.json {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(&report); err != nil {
			return &exitError{Code: exitUsage, Err: err}
		}
		text = termsafe.JSON(buf.Bytes())
	} else {
		safe := safeReport(report)
		text = []byte(safe.Table())
	}
	if _, err := cmd.OutOrStdout().Write(text); err != nil {
		return &exitError{Code: exitUsage, Err: err}
	}
	if v := report.Check(require); len(v) > 0 {
		lines := make([]string, len(v))
		for i, x := range v {
			lines[i] = termsafe.String(x.String())
		}
		return &exitError{Code: exitFailed, Err: fmt.Errorf("receipts: policy not met:\n  %s", strings.Join(lines, "\n  "))}
	}
	return nil
}

// audit parses a transcript strictly and returns the audit view of its
// receipts. A transcript that is not valid is an error: its receipts prove
// nothing.
func audit(data []byte) (receipts.Report, error) {
	t, err := transcript.Parse(data)
	if err != nil {
		return receipts.Report{}, err
	}
	return t.Report()
}

// safeReport is a copy of r, for printing only, with every string escaped
// for the terminal: the run id, the reasons and the delivered values come
// from the transcript, and a raw newline or escape sequence in one of them
// would forge a table line or drive the reader's terminal.
func safeReport(r receipts.Report) receipts.Report {
	esc := termsafe.String
	r.RunID, r.Outcome, r.Weakest = esc(r.RunID), esc(r.Outcome), receipts.Tier(esc(string(r.Weakest)))
	rows := make([]receipts.Row, len(r.Receipts))
	for i, row := range r.Receipts {
		row.Constraint = receipts.Constraint(esc(string(row.Constraint)))
		row.Status = receipts.Status(esc(string(row.Status)))
		row.Tier = receipts.Tier(esc(string(row.Tier)))
		row.Channel = receipts.Channel(esc(string(row.Channel)))
		row.Effective, row.Cwd = esc(row.Effective), esc(row.Cwd)
		row.Mechanism, row.Reason = esc(row.Mechanism), esc(row.Reason)
		env := make([]string, len(row.Env))
		for j, e := range row.Env {
			env[j] = esc(e)
		}
		if row.Env == nil {
			env = nil
		}
		row.Env = env
		rows[i] = row
	}
	r.Receipts = rows
	return r
}
