// term mcp driven by a client that is not Go's: the official TypeScript
// SDK lists the tools and calls terminal_start, terminal_input and
// terminal_stop over the real binary's stdio. TVS_BIN is the binary,
// TVS_STATE_DIR the sandboxes' state directory (the Go test that runs
// this checks it for leaks).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const bin = process.env.TVS_BIN;
const stateDir = process.env.TVS_STATE_DIR;

test("term mcp through the TypeScript SDK", { skip: !bin && "TVS_BIN is not set" }, async () => {
  const transport = new StdioClientTransport({
    command: bin,
    args: ["term", "mcp", "--state-dir", stateDir],
    env: process.env,
    stderr: "inherit",
  });
  const client = new Client({ name: "termmcp-node-test", version: "1" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ["terminal_start", "terminal_input", "terminal_output", "terminal_wait", "terminal_status",
      "terminal_resize", "terminal_kill", "terminal_stop", "terminal_receipts"]) {
      assert.ok(names.includes(want), `tools ${names} lack ${want}`);
    }
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object", `${t.name}'s input schema`);
    }

    const started = await client.callTool({ name: "terminal_start", arguments: { command: ["cat"], size: "70x12" } });
    assert.ok(!started.isError, JSON.stringify(started.content));
    const { session, receipts } = started.structuredContent;
    assert.match(session, /^s\d+$/);
    assert.equal(receipts.filesystem, "os");
    assert.equal(receipts.network, "os");

    const typed = await client.callTool({ name: "terminal_input", arguments: { session, text: "from node\\r" } });
    assert.ok(!typed.isError, JSON.stringify(typed.content));
    assert.equal(typed.structuredContent.settled, true);
    // cat echoes the line and prints it again: twice on the screen.
    assert.equal(typed.structuredContent.screen.split("from node").length - 1, 2, typed.structuredContent.screen);
    assert.match(typed.content[0].text, /from node/);

    const bad = await client.callTool({ name: "terminal_input", arguments: { session: "nope", text: "x" } });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /no session "nope"/);

    const stopped = await client.callTool({ name: "terminal_stop", arguments: { session } });
    assert.ok(!stopped.isError, JSON.stringify(stopped.content));
    assert.equal(stopped.structuredContent.stopped, true);

    const gone = await client.callTool({ name: "terminal_status", arguments: { session } });
    assert.equal(gone.isError, true);
  } finally {
    await client.close();
  }
});
