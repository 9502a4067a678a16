package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the work on its issue.
func newControlCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "control",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return &exitError{Code: exitUsage, Err: errors.New("control: not built yet")}
		},
	}
}
