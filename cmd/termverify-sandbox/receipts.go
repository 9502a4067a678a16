package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the work on its issue.
func newReceiptsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "receipts",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return &exitError{Code: exitUsage, Err: errors.New("receipts: not built yet")}
		},
	}
}
