package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// The term mcp tests act as an agent's client does: the SDK's client,
// over the real binary's stdin and stdout.

// mcpClient is one `term mcp` process and the client session on it.
type mcpClient struct {
	t       *testing.T
	cs      *mcp.ClientSession
	cmd     *exec.Cmd
	state   string
	updates chan string // URIs of notifications/resources/updated
}

// newMCPClient starts `term mcp` with a state directory of its own,
// checked for leaks (and for marker's processes) once the test is over.
func newMCPClient(t *testing.T, bin, marker string) *mcpClient {
	t.Helper()
	c := &mcpClient{t: t, state: t.TempDir(), updates: make(chan string, 64)}
	sandboxtest.CheckNoLeaks(t, c.state, marker)
	c.cmd = exec.Command(bin, "term", "mcp", "--state-dir", c.state)
	c.cmd.Dir = t.TempDir()
	c.cmd.Stderr = os.Stderr
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SUDO_") {
			c.cmd.Env = append(c.cmd.Env, e)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "termmcp-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case c.updates <- req.Params.URI:
			default:
			}
		},
	})
	// A long grace: the server must end on stdin's EOF by itself, not
	// by the SIGTERM the transport sends after it.
	tr := &mcp.CommandTransport{Command: c.cmd, TerminateDuration: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect to term mcp: %v", err)
	}
	c.cs = cs
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cs.Close()
		}
	})
	return c
}

// call calls a tool and returns its result; a protocol error fails the
// test (a tool error does not).
func (c *mcpClient) call(name string, args map[string]any) *mcp.CallToolResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

// ok calls a tool that must succeed and returns its structured result.
func (c *mcpClient) ok(name string, args map[string]any) map[string]any {
	c.t.Helper()
	res := c.call(name, args)
	if res.IsError {
		c.t.Fatalf("%s %v: tool error %q", name, args, resultText(res))
	}
	if resultText(res) == "" {
		c.t.Errorf("%s: no text rendering", name)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		c.t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil || out == nil {
		c.t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out
}

// toolError calls a tool that must fail with a tool error whose message
// contains want.
func (c *mcpClient) toolError(name string, args map[string]any, want string) {
	c.t.Helper()
	res := c.call(name, args)
	if !res.IsError || !strings.Contains(resultText(res), want) {
		c.t.Errorf("%s %v: isError %t, %q; want a tool error saying %q", name, args, res.IsError, resultText(res), want)
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// closeStdin ends the client's side, as an agent that quits does, and
// waits for the server to exit by itself.
func (c *mcpClient) closeStdin() {
	c.t.Helper()
	begin := time.Now()
	if err := c.cs.Close(); err != nil {
		c.t.Errorf("close the client: %v", err)
	}
	if c.cmd.ProcessState == nil {
		c.t.Fatal("the server's process was not waited for")
	}
	if ws := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		c.t.Errorf("the server ended by %v after %v, not by itself on stdin's end", ws.Signal(), time.Since(begin))
	}
}

func TestTermMCP(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)

	t.Run("tools and schemas", func(t *testing.T) {
		c := newMCPClient(t, bin, "")
		res, err := c.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			sc, _ := tool.InputSchema.(map[string]any)
			if sc["type"] != "object" || tool.Description == "" || tool.OutputSchema == nil {
				t.Errorf("%s: input schema %v, description %q, output schema %v", tool.Name, tool.InputSchema, tool.Description, tool.OutputSchema)
			}
		}
		for _, want := range []string{"terminal_start", "terminal_attach", "terminal_input", "terminal_output", "terminal_wait",
			"terminal_status", "terminal_resize", "terminal_kill", "terminal_stop", "terminal_receipts"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools %v lack %s", names, want)
			}
		}
		c.closeStdin()
	})

	t.Run("vim edits a file, which is the caller's", func(t *testing.T) {
		c := newMCPClient(t, bin, "")
		work := t.TempDir()
		st := c.ok("terminal_start", map[string]any{"command": []string{"vim", "-u", "NONE", "-i", "NONE", "-n", "-N", "notes.txt"}, "cwd": work})
		id, _ := st["session"].(string)
		if !strings.Contains(st["screen"].(string), "notes.txt") {
			t.Errorf("vim's first screen: %q", st["screen"])
		}
		out := c.ok("terminal_input", map[string]any{"session": id, "text": `ihello from mcp`, "keys": [][]string{{"Escape"}}})
		if out["settled"] != true || !strings.Contains(out["screen"].(string), "hello from mcp") {
			t.Errorf("after typing: %v", out)
		}
		out = c.ok("terminal_input", map[string]any{"session": id, "text": `:wq\r`})
		if out["exited"] != true || out["exit_code"] != 0.0 {
			t.Errorf("after :wq: %v", out)
		}
		c.ok("terminal_stop", map[string]any{"session": id})
		b, err := os.ReadFile(filepath.Join(work, "notes.txt"))
		if err != nil || string(b) != "hello from mcp\n" {
			t.Errorf("notes.txt: %q, %v", b, err)
		}
		if uid, gid := fileOwner(t, filepath.Join(work, "notes.txt")); uid != os.Geteuid() || gid != os.Getegid() {
			t.Errorf("notes.txt belongs to %d:%d, want the caller %d:%d", uid, gid, os.Geteuid(), os.Getegid())
		}
		c.toolError("terminal_status", map[string]any{"session": id}, "no session")
		c.closeStdin()
	})

	t.Run("two sessions at once, and the screen resource", func(t *testing.T) {
		c := newMCPClient(t, bin, "")
		a := c.ok("terminal_start", map[string]any{"command": []string{"cat"}, "size": "60x10"})["session"].(string)
		b := c.ok("terminal_start", map[string]any{"command": []string{"cat"}})["session"].(string)
		if a == b {
			t.Fatalf("two sessions with one id %q", a)
		}
		uri := "terminal://" + b + "/screen"
		if err := c.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
		c.ok("terminal_input", map[string]any{"session": a, "text": `alpha\r`})
		c.ok("terminal_input", map[string]any{"session": b, "text": `beta\r`})
		sa := c.ok("terminal_output", map[string]any{"session": a})
		sb := c.ok("terminal_output", map[string]any{"session": b})
		if s := sa["screen"].(string); !strings.Contains(s, "alpha") || strings.Contains(s, "beta") {
			t.Errorf("session %s's screen: %q", a, s)
		}
		if s := sb["screen"].(string); !strings.Contains(s, "beta") || strings.Contains(s, "alpha") {
			t.Errorf("session %s's screen: %q", b, s)
		}
		if size := sa["size"].(map[string]any); size["cols"] != 60.0 || size["rows"] != 10.0 {
			t.Errorf("session %s's size: %v", a, size)
		}
		select {
		case got := <-c.updates:
			if got != uri {
				t.Errorf("updated %s, want %s", got, uri)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("no notifications/resources/updated for %s", uri)
		}
		rr, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "beta") {
			t.Errorf("read %s: %v, %v", uri, rr, err)
		}
		c.ok("terminal_stop", map[string]any{"session": a})
		if _, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "terminal://" + a + "/screen"}); err == nil {
			t.Errorf("the stopped session's screen is still a resource")
		}
		if st := c.ok("terminal_status", map[string]any{"session": b}); st["running"] != true {
			t.Errorf("the other session after the stop: %v", st)
		}
		c.closeStdin()
	})

	t.Run("the client's EOF stops every session", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(3)
		c := newMCPClient(t, bin, marker)
		for range 2 {
			c.ok("terminal_start", map[string]any{"command": []string{"sleep", marker}, "timeout_ms": 2000})
		}
		// Each sandbox's init and program carry the marker.
		if n := len(sandboxtest.PidsMatching(marker)); n < 2 {
			t.Fatalf("%d processes run, want two programs", n)
		}
		c.closeStdin()
		if pids := sandboxtest.PidsMatching(marker); len(pids) > 0 {
			t.Errorf("after the client's end, programs still run: %v", pids)
		}
	})

	t.Run("a killed server takes its sandboxes with it", func(t *testing.T) {
		marker := sandboxtest.SleepMarker(4)
		c := newMCPClient(t, bin, marker)
		c.ok("terminal_start", map[string]any{"command": []string{"sleep", marker}, "timeout_ms": 2000})
		if len(sandboxtest.PidsMatching(marker)) == 0 {
			t.Fatal("the program does not run")
		}
		if err := c.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = c.cs.Close() // reaps the killed server
		for deadline := time.Now().Add(10 * time.Second); len(sandboxtest.PidsMatching(marker)) > 0; {
			if time.Now().After(deadline) {
				t.Fatal("the sandbox outlived its server")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// What the dead server left in its state directory is swept, as
		// the next start would.
		if _, err := sandbox.Sweep(c.state); err != nil {
			t.Errorf("sweep: %v", err)
		}
	})

	t.Run("bad calls are tool errors, and the server goes on", func(t *testing.T) {
		c := newMCPClient(t, bin, "")
		c.toolError("terminal_input", map[string]any{"session": "s99", "text": "x"}, "terminal_start")
		c.toolError("terminal_start", map[string]any{"command": []string{}}, "command is empty")
		c.toolError("terminal_start", map[string]any{"cwd": "/"}, "command")
		c.toolError("terminal_start", map[string]any{"command": []string{"cat"}, "size": "huge"}, "COLSxROWS")
		c.toolError("terminal_start", map[string]any{"command": []string{"cat"}, "cwd": "/nonexistent-dir-of-tvs"}, "cwd")
		id := c.ok("terminal_start", map[string]any{"command": []string{"cat"}})["session"].(string)
		c.toolError("terminal_input", map[string]any{"session": id, "keys": [][]string{{"Hyper", "x"}}}, "nothing was typed")
		c.toolError("terminal_input", map[string]any{"session": id}, "nothing to type")
		c.toolError("terminal_wait", map[string]any{"session": id}, "exactly one")
		c.toolError("terminal_output", map[string]any{"session": id, "from": "top"}, "line number")
		c.toolError("terminal_output", map[string]any{"session": id, "format": "html"}, "ascii ansi")
		c.toolError("terminal_kill", map[string]any{"session": id, "signal": "SIGNOPE"}, "SIGINT")
		c.toolError("terminal_resize", map[string]any{"session": id, "cols": 0, "rows": 5}, "1 to 1024")
		c.toolError("terminal_kill", map[string]any{"session": id, "signal": "SIGSTOP"}, "SIGTSTP")
		w := c.ok("terminal_wait", map[string]any{"session": id, "contains": "never shown", "timeout_ms": 300})
		if w["timed_out"] != true || w["found"] != false {
			t.Errorf("a wait that times out: %v", w)
		}
		c.ok("terminal_kill", map[string]any{"session": id, "signal": "KILL"})
		if w := c.ok("terminal_wait", map[string]any{"session": id, "exited": true}); w["exit_code"] != 137.0 {
			t.Errorf("wait after SIGKILL: %v", w)
		}
		c.toolError("terminal_input", map[string]any{"session": id, "text": "x"}, "the program has ended")
		nf := c.ok("terminal_start", map[string]any{"command": []string{"no-such-program-tvs"}})
		if nf["exited"] != true || nf["exit_code"] != 127.0 {
			t.Errorf("a program not found: %v", nf)
		}
		if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
			t.Errorf("the server after the bad calls: %v", err)
		}
		c.closeStdin()
	})

	t.Run("receipts say os for filesystem and network", func(t *testing.T) {
		c := newMCPClient(t, bin, "")
		st := c.ok("terminal_start", map[string]any{"command": []string{"cat"}})
		id := st["session"].(string)
		r := c.ok("terminal_receipts", map[string]any{"session": id})
		rs := r["receipts"].(map[string]any)
		if rs["filesystem"] != "os" || rs["network"] != "os" || len(rs) != 7 {
			t.Errorf("receipts %v, want filesystem and network os, seven constraints", rs)
		}
		if sr := st["receipts"].(map[string]any); sr["filesystem"] != "os" || sr["network"] != "os" {
			t.Errorf("terminal_start's receipts %v", sr)
		}
		if details := r["details"].([]any); len(details) != 7 {
			t.Errorf("details %v", details)
		}
		c.closeStdin()
	})

	t.Run("a full scrollback is cut, and paged with from", func(t *testing.T) {
		c := newMCPClient(t, bin, "")
		id := c.ok("terminal_start", map[string]any{"command": []string{"seq", "1", "3000"}})["session"].(string)
		c.ok("terminal_wait", map[string]any{"session": id, "exited": true})
		var got []string
		from := any("-")
		for page := 0; ; page++ {
			if page > 100 {
				t.Fatal("paging never ended")
			}
			out := c.ok("terminal_output", map[string]any{"session": id, "from": from, "max_bytes": 4000})
			s := out["screen"].(string)
			if len(s) > 4000 {
				t.Fatalf("page %d: %d bytes, over max_bytes", page, len(s))
			}
			got = append(got, strings.Fields(s)...)
			cut, _ := out["truncated"].(map[string]any)
			if cut == nil {
				break
			}
			if !strings.Contains(cut["note"].(string), "from") {
				t.Errorf("cut note %q", cut["note"])
			}
			from = cut["next_from"]
		}
		if len(got) != 3000 || got[0] != "1" || got[2999] != "3000" {
			t.Errorf("paged %d lines, %v … %v; want 1 to 3000 once each", len(got), got[:min(3, len(got))], got[max(0, len(got)-3):])
		}
		c.closeStdin()
	})

	t.Run("a session recorded, at its stop and at the client's end", func(t *testing.T) {
		c := newMCPClient(t, bin, "")
		work := t.TempDir()
		a := c.ok("terminal_start", map[string]any{"command": []string{"cat"}, "cwd": work, "transcript": "a.jsonl"})
		b := c.ok("terminal_start", map[string]any{"command": []string{"cat"}, "cwd": work, "transcript": filepath.Join(work, "b.jsonl")})
		if a["transcript"] != filepath.Join(work, "a.jsonl") {
			t.Errorf("transcript %v, want %s", a["transcript"], filepath.Join(work, "a.jsonl"))
		}
		for _, st := range []map[string]any{a, b} {
			c.ok("terminal_input", map[string]any{"session": st["session"], "text": `recorded line\r`, "keys": [][]string{{"Enter"}}})
		}
		if stop := c.ok("terminal_stop", map[string]any{"session": a["session"]}); stop["transcript"] != a["transcript"] {
			t.Errorf("stop: %v", stop)
		}
		c.closeStdin() // b is recorded as the server stops it
		for _, name := range []string{"a.jsonl", "b.jsonl"} {
			path := filepath.Join(work, name)
			if _, errOut, status := run(t, exec.Command(bin, "validate", path)); status != 0 {
				t.Errorf("validate %s: status %d, %s", name, status, errOut)
			}
			if body, err := os.ReadFile(path); err != nil || !strings.Contains(string(body), `recorded line\r`) || !strings.Contains(string(body), `"input.key"`) {
				t.Errorf("%s: %v, no input.text of the line typed or input.key of the Enter:\n%s", name, err, body)
			}
			// replay --pty re-runs the agent's session: the same screens.
			if status, out := replayPTY(t, bin, path, nil, nil, "cat"); status != 0 || !strings.Contains(out, "equivalent") {
				t.Errorf("replay --pty %s: status %d\n%s", name, status, out)
			}
		}
	})

	t.Run("attach to a daemon term start started", func(t *testing.T) {
		h := newTermHarness(t, bin, "")
		d := h.start("--", "cat")
		c := newMCPClient(t, bin, "")
		c.toolError("terminal_attach", map[string]any{"socket": filepath.Join(h.tmp, "nothing")}, "term start")
		at := c.ok("terminal_attach", map[string]any{"socket": d.socket})
		id := at["session"].(string)
		if at["running"] != true || at["receipts"].(map[string]any)["network"] != "os" {
			t.Errorf("attach: %v", at)
		}
		if out := c.ok("terminal_input", map[string]any{"session": id, "text": `attached\r`, "keys": [][]string{{"Control", "d"}}, "settle": false}); out == nil {
			t.Fatal("no result")
		}
		c.ok("terminal_wait", map[string]any{"session": id, "exited": true})
		if s := h.screen(d); !strings.Contains(s, "attached") {
			t.Errorf("the daemon's screen: %q", s)
		}
		c.toolError("terminal_input", map[string]any{"session": id, "keys": [][]string{{"ArrowUp"}}}, "cursor-key mode")
		c.ok("terminal_stop", map[string]any{"session": id})
		waitGone(t, d.pid)
		c.closeStdin()
	})
}
