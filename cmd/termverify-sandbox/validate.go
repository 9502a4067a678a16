package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the work on its issue.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "validate",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return &exitError{Code: exitUsage, Err: errors.New("validate: not built yet")}
		},
	}
}
