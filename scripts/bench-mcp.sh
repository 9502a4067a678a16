#!/usr/bin/env bash
# term mcp's figures (issue 25), in make bench: a tool call's round trip
# through the official Go SDK's client over the server's stdio, for
# terminal_output and for terminal_input with settle, on a session the
# server started and on one attached to a `term start` daemon, beside the
# daemon's own socket round trips in the same run (scripts/mcpbench).
# Needs root (the os tier). BENCH_MCP_N calls per row (default 300).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin/termverify-sandbox}
N=${BENCH_MCP_N:-300}
[ -x "$BIN" ] || { echo "bench-mcp: $BIN missing; run make build" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/mcpbench" ./scripts/mcpbench

load() { uptime | sed 's/.*load average: */load /'; }
echo "termverify-sandbox term mcp benchmarks ($(nproc) cores, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), $(load))"
(cd "$work" && "$work/mcpbench" "$(cd "$OLDPWD" && realpath "$BIN")" "$N")
echo "($(load))"
