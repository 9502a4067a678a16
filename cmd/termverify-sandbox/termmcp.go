package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/termmcp"
)

func newTermMCPCmd() *cobra.Command {
	var stateDir string
	var maxOutput int
	var limits limitFlags
	c := &cobra.Command{
		Use:   "mcp [--state-dir DIR] [--max-output BYTES]",
		Short: "Serve sandboxed terminals to an agent over the Model Context Protocol (stdio)",
		Long: `mcp is an MCP server on stdin and stdout: an agent's client (Claude Code,
Codex, Cursor, Gemini CLI) starts it and calls its tools, terminal_start,
terminal_attach, terminal_input, terminal_output, terminal_wait,
terminal_status, terminal_resize, terminal_kill, terminal_stop and
terminal_receipts. Each terminal_start runs its program in the same OS
sandbox as term start, in the working directory the call gives (default:
this command's). When the client goes away (stdin's end), or on SIGINT,
SIGTERM or SIGHUP, every session it started is stopped and its sandbox
destroyed; if this process is killed outright, its sandboxes die with it.
A daemon attached by its socket is left running. The limit flags apply to
every sandbox it starts. See docs/TERM.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := limits.limits()
			if err != nil {
				return termFail(cmd, err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
			defer stop()
			opts := termmcp.Options{Env: os.Environ(), StateDir: stateDir, Limits: &l, MaxOutput: maxOutput, Version: receipts.AdapterVersion}
			if err := termmcp.Serve(ctx, &mcp.StdioTransport{}, opts); err != nil && ctx.Err() == nil {
				return termFail(cmd, err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&stateDir, "state-dir", "", "sandbox state directory (default the sandbox's)")
	f.IntVar(&maxOutput, "max-output", termmcp.DefaultMaxOutput, "bytes of screen text one tool result carries at most; more is cut with a note on paging")
	limits.register(f)
	return c
}
