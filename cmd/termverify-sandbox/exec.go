package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the work on its issue.
func newExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "exec",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return &exitError{Code: exitUsage, Err: errors.New("exec: not built yet")}
		},
	}
}
