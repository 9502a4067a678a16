package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// nodeTestDir holds the TypeScript SDK's test of term mcp, and the SDK
// scripts/setup.sh installs there (node_modules, gitignored).
const nodeTestDir = "../../termmcp/testdata/node"

// TestTermMCPNode runs term mcp under a client that is not Go's: the
// official TypeScript SDK (@modelcontextprotocol/sdk), through node's own
// test runner.
func TestTermMCPNode(t *testing.T) {
	sandboxtest.RequireRoot(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (scripts/setup.sh installs the SDK only where node is)")
	}
	if _, err := os.Stat(filepath.Join(nodeTestDir, "node_modules/@modelcontextprotocol/sdk/package.json")); err != nil {
		t.Skipf("@modelcontextprotocol/sdk is not installed in %s: run scripts/setup.sh (%v)", nodeTestDir, err)
	}
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "mcp.test.mjs")
	cmd.Dir = nodeTestDir
	cmd.Env = append(os.Environ(), "TVS_BIN="+bin, "TVS_STATE_DIR="+state)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the TypeScript SDK's test failed: %v", err)
	}
}
