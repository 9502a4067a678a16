// Command mcpbench measures `term mcp` for scripts/bench-mcp.sh: a tool
// call's round trip through the official Go SDK's client over the
// server's stdio, for terminal_output and for terminal_input with settle,
// on a session the server started and on one attached to a `term start`
// daemon; and, in the same run, the daemon's own round trips over its
// socket (OUTPUT; INPUT then WAIT settled) as the yardstick. The program
// is cat, on an 80x24 terminal.
//
//	mcpbench BIN N
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/scripts/internal/benchdaemon"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mcpbench BIN N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "mcpbench: N must be a positive count")
		os.Exit(2)
	}
	if err := run(os.Args[1], n); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

func run(bin string, n int) error {
	d, _, err := benchdaemon.Start(bin, "/bin/cat")
	if err != nil {
		return err
	}
	defer d.Stop()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "term", "mcp")}, nil)
	if err != nil {
		return fmt.Errorf("connect to term mcp: %w", err)
	}
	defer cs.Close()
	local, err := call(cs, "terminal_start", map[string]any{"command": []string{"/bin/cat"}})
	if err != nil {
		return err
	}
	attached, err := call(cs, "terminal_attach", map[string]any{"socket": d.Socket})
	if err != nil {
		return err
	}
	rows := []struct {
		name string
		f    func(i int) error
	}{
		{"MCP terminal_output, started session", func(int) error {
			_, err := call(cs, "terminal_output", map[string]any{"session": local["session"]})
			return err
		}},
		{"MCP terminal_input x + settle, started session", func(i int) error {
			return typeSettled(cs, local["session"], i)
		}},
		{"MCP terminal_output, attached session", func(int) error {
			_, err := call(cs, "terminal_output", map[string]any{"session": attached["session"]})
			return err
		}},
		{"MCP terminal_input x + settle, attached session", func(i int) error {
			return typeSettled(cs, attached["session"], i)
		}},
		{"daemon OUTPUT round trip (socket)", func(int) error {
			_, err := d.Call(&interminai.Output{Format: interminai.FormatASCII})
			return err
		}},
		{"daemon INPUT x + WAIT settled (socket)", func(i int) error {
			data := "x"
			if i%70 == 69 {
				data = "\r"
			}
			if _, err := d.Call(&interminai.Input{Data: data}); err != nil {
				return err
			}
			_, err := d.Call(&interminai.Wait{Settled: true, Timeout: 10 * time.Second, HasTimeout: true})
			return err
		}},
	}
	for _, r := range rows {
		var d []time.Duration
		for i := range n {
			t := time.Now()
			if err := r.f(i); err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			d = append(d, time.Since(t))
		}
		p50, p99 := benchdaemon.Quantiles(d)
		fmt.Printf("%-50s p50 %8.3f ms  p99 %8.3f ms  (%d calls)\n", r.name, benchdaemon.Ms(p50), benchdaemon.Ms(p99), n)
	}
	return nil
}

// typeSettled types one x (a CR every 70, so cat's line stays short)
// and requires the settled screen the call returns.
func typeSettled(cs *mcp.ClientSession, session any, i int) error {
	text := "x"
	if i%70 == 69 {
		text = `\r`
	}
	out, err := call(cs, "terminal_input", map[string]any{"session": session, "text": text})
	if err != nil {
		return err
	}
	if out["settled"] != true {
		return fmt.Errorf("not settled: %v", out)
	}
	return nil
}

// call calls a tool and returns its structured result.
func call(cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: tool error: %v", name, res.Content)
	}
	out, _ := res.StructuredContent.(map[string]any)
	return out, nil
}
