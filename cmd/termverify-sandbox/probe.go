package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the work on its issue.
func newProbeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "probe",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return &exitError{Code: exitUsage, Err: errors.New("probe: not built yet")}
		},
	}
}
