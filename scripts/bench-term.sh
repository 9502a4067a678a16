#!/usr/bin/env bash
# The term daemon's figures (issue 24), in make bench: `term start` until
# it prints its socket, an OUTPUT round trip, a keystroke typed into cat
# until the next OUTPUT shows its echo, and the daemon's RSS with a full
# scrollback, an INPUT and settled WAIT without and with --transcript
# (scripts/termbench drives the socket with package interminai), then
# the yardstick in the same run: one epoch of
# `run --pty` typing into cat (BenchmarkEpochLatency/pty). Needs root
# (the os tier). BENCH_TERM_N round trips (default 500).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin/termverify-sandbox}
N=${BENCH_TERM_N:-500}
[ -x "$BIN" ] || { echo "bench-term: $BIN missing; run make build" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/termbench" ./scripts/termbench
go test -c -o "$work/supervisor.test" ./supervisor

load() { uptime | sed 's/.*load average: */load /'; }
echo "termverify-sandbox term daemon benchmarks ($(nproc) cores, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), $(load))"
(cd "$work" && "$work/termbench" "$(cd "$OLDPWD" && realpath "$BIN")" "$N")
echo "yardstick, the same run: one run --pty epoch, x Enter typed into cat ($(load))"
(cd supervisor && "$work/supervisor.test" -test.run '^$' -test.bench 'BenchmarkEpochLatency$/pty' -test.benchtime "${N}x") | grep '^Benchmark'
