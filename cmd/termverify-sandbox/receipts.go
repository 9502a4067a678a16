package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/supervisor"
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
	data, err := os.ReadFile(path)
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("receipts: %w", err)}
	}
	report, err := supervisor.Audit(data)
	if err != nil {
		return &exitError{Code: exitFailed, Err: fmt.Errorf("receipts: %s: %w", path, err)}
	}
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(&report); err != nil {
			return &exitError{Code: exitUsage, Err: err}
		}
	} else if _, err := fmt.Fprint(out, report.Table()); err != nil {
		return &exitError{Code: exitUsage, Err: err}
	}
	if v := report.Check(require); len(v) > 0 {
		lines := make([]string, len(v))
		for i, x := range v {
			lines[i] = x.String()
		}
		return &exitError{Code: exitFailed, Err: fmt.Errorf("receipts: policy not met:\n  %s", strings.Join(lines, "\n  "))}
	}
	return nil
}
