package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/supervisor"
)

func newProbeCmd() *cobra.Command {
	var asJSON bool
	var stateDir string
	cmd := &cobra.Command{
		Use:   "probe [--json]",
		Short: "Say, per constraint, the strongest tier this host can give now, and why",
		Long: `probe tries every mechanism the sandbox uses (each namespace in a child,
then a complete trial sandbox with pivot_root, seccomp, cgroup limits and an
allow-list forwarder) and reports per constraint the strongest tier that
really worked, with the reason for anything weaker.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res := supervisor.Probe(context.Background(), stateDir)
			if asJSON {
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
				_, err := cmd.OutOrStdout().Write(termsafe.JSON(buf.Bytes()))
				return err
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), probeText(res))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "state directory for the trial sandbox")
	return cmd
}

func tierWord(t receipts.Tier) string {
	if t == receipts.None {
		return "unsupported"
	}
	return string(t)
}

// probeText formats the same struct --json encodes. Reasons and details
// carry error texts (paths, kernel messages), so each is escaped for the
// terminal: one cell stays on its line.
func probeText(res supervisor.ProbeReport) string {
	esc := termsafe.String
	var b []byte
	for _, c := range res.Constraints {
		b = fmt.Appendf(b, "%s: %s (%s%s)\n", c.Constraint, tierWord(c.Tier), esc(c.Reason), fixTail(c.Fix))
	}
	b = fmt.Appendf(b, "network allow-list: %s (%s%s)\n", tierWord(res.AllowList.Tier), esc(res.AllowList.Reason), fixTail(res.AllowList.Fix))
	b = fmt.Appendf(b, "terminal with --pty: %s (%s%s)\n", tierWord(res.PTYTerminal.Tier), esc(res.PTYTerminal.Reason), fixTail(res.PTYTerminal.Fix))
	mode := "root"
	if res.Rootless {
		mode = "rootless"
		if res.RootlessReason != "" {
			mode += ": " + esc(res.RootlessReason)
		}
	}
	b = fmt.Appendf(b, "mechanisms (%s):\n", mode)
	for _, m := range res.Mechanisms {
		state, fix := "ok", ""
		if !m.OK {
			state, fix = "no", fixTail(m.Fix)
		}
		b = fmt.Appendf(b, "  %-22s %-3s %s%s\n", m.Name, state, esc(m.Detail), fix)
	}
	return string(b)
}

// fixTail is a "no" line's fix, on the same line: "; fix: ...".
func fixTail(fix string) string {
	if fix == "" {
		return ""
	}
	return "; fix: " + termsafe.String(fix)
}
