package termmcp

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect serves s on an in-memory transport and returns a client on it.
func connect(t *testing.T, s *server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.mcp.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// Calls that need no sandbox: a panic in a tool and a session that does
// not exist are tool errors, and the server answers on.
func TestToolErrors(t *testing.T) {
	s := newServer(Options{})
	addTool(s, "boom", "panics", nil, func(context.Context, sessionIn) (stopOut, string, error) { panic("kaboom") })
	cs := connect(t, s)
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"boom", map[string]any{"session": "s1"}, "kaboom"},
		{"terminal_status", map[string]any{"session": "s7"}, "none is open: terminal_start one"},
		{"terminal_input", map[string]any{"text": "x"}, "session"},
		{"terminal_output", map[string]any{"session": "s1", "from": true}, "from"},
		{"terminal_start", map[string]any{"command": []string{}}, "command is empty"},
		{"terminal_attach", map[string]any{"socket": ""}, "socket is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.name, Arguments: tc.args})
			if err != nil {
				t.Fatalf("a protocol error, want a tool error: %v", err)
			}
			text := ""
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
			if !res.IsError || !strings.Contains(text, tc.want) {
				t.Errorf("isError %t, %q; want a tool error saying %q", res.IsError, text, tc.want)
			}
		})
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("the server after the errors: %v", err)
	}
}
