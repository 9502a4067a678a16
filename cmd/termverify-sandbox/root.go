package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree. Commands print data to
// cmd.OutOrStdout() and never call os.Exit.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "termverify-sandbox",
		Short:         "Run termverify subjects inside an OS sandbox and record honest transcripts",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{Code: exitUsage, Err: err}
	})
	root.AddCommand(
		newVersionCmd(),
		newValidateCmd(),
		newControlCmd(),
		newExecCmd(),
		newProbeCmd(),
		newRunCmd(),
		newReplayCmd(),
		newCompareCmd(),
		newReceiptsCmd(),
		newBatchCmd(),
		newRenderCmd(),
		newExportCmd(),
		newReportCmd(),
		newTermCmd(),
		newConformanceCmd(),
	)
	return root
}
