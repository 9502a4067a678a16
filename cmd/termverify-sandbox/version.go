package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/receipts"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tool's adapter id and version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, %s/%s)\n",
				receipts.AdapterID, receipts.AdapterVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
