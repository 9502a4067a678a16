#!/usr/bin/env bash
# PTY mode benchmarks (issue 14), each beside its control/v1 yardstick, in
# one invocation (make bench):
#  1. one epoch's latency in a sandboxed run, from the keystroke to the
#     closed epoch, as the session runs it (BenchmarkEpochLatency): a line
#     typed into cat on the sandbox's terminal, and the yardstick, the Go
#     echo subject over control/v1 pipes; median, p99, epochs/s;
#  2. whole runs through supervisor.Run (BenchmarkPTYRun: 500 lines typed
#     into cat; BenchmarkEpochs/os: 4,900 keys to the echo subject), the
#     epochs phase of the evidence;
#  3. on a host terminal, without sandbox or supervisor (ptydrive): the cat
#     epoch, quiesce's reaction time (from the program's last output byte
#     to Settle's return; the program sleeps or computes 2 ms first) and
#     the cost of one quiesce evaluation.
# BENCH_ROUNDS rounds (default 1), interleaved; `uptime` before each step.
# Needs root (the os tier) and python3 (the reaction program).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${BENCH_ROUNDS:-1}
EPOCHS=${BENCH_PTY_EPOCHS:-1000} # epochs timed in step 1, per subject
HOST=${BENCH_PTY_HOST:-500}      # epochs timed in step 3, per benchmark

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/supervisor.test" ./supervisor
go test -c -o "$work/ptydrive.test" ./ptydrive

load() { uptime | sed 's/.*load average: */load /'; }

# bench BINARY DIR PATTERN BENCHTIME: the benchmark lines, with the load.
bench() {
	local bin=$1 dir=$2 pat=$3 n=$4
	echo "# $(date -u +%H:%M:%S) $(load) before $pat"
	(cd "$dir" && "$work/$bin" -test.run '^$' -test.bench "$pat" -test.benchtime "$n") | grep '^Benchmark' || {
		echo "bench-pty: $pat failed" >&2
		exit 1
	}
}

echo "termverify-sandbox PTY mode benchmarks ($(nproc) cores, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS round(s))"
for ((r = 0; r < ROUNDS; r++)); do
	bench supervisor.test supervisor 'BenchmarkEpochLatency$' "${EPOCHS}x"
	bench supervisor.test supervisor 'BenchmarkEpochs$/^os$' 3x
	bench supervisor.test supervisor 'BenchmarkPTYRun$' 3x
	bench ptydrive.test ptydrive 'BenchmarkCatEcho$|BenchmarkQuiesceReaction$|BenchmarkEvaluate$' "${HOST}x"
done | tee "$work/out.txt"
echo "# $(date -u +%H:%M:%S) $(load) after"

# The table: medians over the rounds of each figure.
awk '
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name)
		for (i = 3; i <= NF; i++) v[name, $i, ++n[name, $i]] = $(i - 1)
	}
	function med(name, unit,   k, m, a, i, j, t) {
		m = n[name, unit]
		if (!m) return "-"
		for (i = 1; i <= m; i++) a[i] = v[name, unit, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return a[int((m + 1) / 2)]
	}
	function row(label, name, p50, p99, rate) {
		printf "   %-44s %9s %9s %10s\n", label, med(name, p50), med(name, p99), med(name, rate)
	}
	END {
		printf "\n1. one epoch in a sandboxed run (20x2, --isolation os)\n"
		printf "   %-44s %9s %9s %10s\n", "", "p50 ms", "p99 ms", "epochs/s"
		row("control/v1: key to the echo subject (yardstick)", "BenchmarkEpochLatency/control", "p50-ms", "p99-ms", "epochs/s")
		row("pty: \"x\" Enter typed into cat", "BenchmarkEpochLatency/pty", "p50-ms", "p99-ms", "epochs/s")
		printf "   supervisor CPU per epoch: control %s us, pty %s us\n", med("BenchmarkEpochLatency/control", "cpu-µs/epoch"), med("BenchmarkEpochLatency/pty", "cpu-µs/epoch")
		printf "\n2. whole runs through supervisor.Run, epochs phase of the evidence\n"
		printf "   %-44s %9s   (supervisor CPU %s us/epoch)\n", "control/v1: 4,900 keys, echo subject", med("BenchmarkEpochs/os", "loop-epochs/s") " epochs/s", med("BenchmarkEpochs/os", "cpu-µs/epoch")
		printf "   %-44s %9s   (supervisor CPU %s us/epoch)\n", "pty: 500 lines typed into cat", med("BenchmarkPTYRun", "loop-epochs/s") " epochs/s", med("BenchmarkPTYRun", "cpu-µs/epoch")
		printf "\n3. host terminal, ptydrive alone\n"
		printf "   %-44s %9s %9s %10s\n", "", "p50 ms", "p99 ms", "epochs/s"
		row("cat: \"x\" Enter to the closed epoch", "BenchmarkCatEcho", "p50-ms", "p99-ms", "epochs/s")
		row("last output byte to Settle, after a sleep", "BenchmarkQuiesceReaction/sleep", "react-p50-ms", "react-p99-ms", "-")
		row("last output byte to Settle, after computing", "BenchmarkQuiesceReaction/busy", "react-p50-ms", "react-p99-ms", "-")
		printf "   one quiesce evaluation of cat waiting: %s ns\n", med("BenchmarkEvaluate", "ns/op")
	}' "$work/out.txt"
