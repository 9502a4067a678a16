package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the work on its issue.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "run",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return &exitError{Code: exitUsage, Err: errors.New("run: not built yet")}
		},
	}
}
