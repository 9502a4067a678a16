#!/usr/bin/env bash
# Supervisor benchmarks, side by side in one run (make bench):
#  1. a whole run of the example (hello, ready, stop): sandboxed, with
#     --isolation none, and the subject bare (no supervisor at all); next to
#     it the exec start cost (exec -- /bin/true versus /bin/true bare);
#  2. epochs per second with the Go echo subject, sandboxed and not, and the
#     supervisor's own CPU per epoch;
#  3. the supervisor's peak RSS while a subject floods maximal messages.
# Medians of BENCH_RUNS runs (default 21). Needs root for the os tier.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=bin/termverify-sandbox
RUNS=${BENCH_RUNS:-21}
EPOCHS=${BENCH_EPOCHS:-4900} # a transcript holds at most 10,000 records
[ -x "$BIN" ] || { echo "bench: $BIN missing; run make build" >&2; exit 2; }
if ! command -v jq >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"
chmod 755 "$work" "$root"
CGO_ENABLED=0 go build -trimpath -o "$root/echo-subject" ./examples/echo-subject
: >"$work/stop.jsonl"
# Key chords, not text: the echo subject's state and frame grow with every
# text input, and a 20x2 terminal keeps its full-frame observations small,
# so the figure is the supervisor's, not the subject's rendering.
for ((i = 0; i < EPOCHS; i++)); do echo '{"kind":"input.key","payload":{"keys":["Control","c"]}}'; done >"$work/epochs.jsonl"
echo '{"kind":"input.text","payload":{"text":"x"}}' >"$work/one.jsonl"
jq -c '.config.terminal.columns = 20 | .config.terminal.rows = 2' examples/request.json >"$work/small.json"
hello='{"protocol":"termverify.control/v1","kind":"session.hello","payload":{"run_id":"example-run","at_ms":0,"config":{"seed":"42","clock":{"mode":"manual","initial_ms":0},"locale":"en-US","timezone":"UTC","terminal":{"columns":80,"rows":24,"capabilities":[]},"filesystem":{"mode":"sandbox","root_id":"app"},"network":{"mode":"deny"}}}}'
printf '%s\n%s\n' "$hello" '{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}}' >"$work/bare.in"

run() { # run ISOLATION INPUTS TRANSCRIPT [EVIDENCE] -- subject args
	local iso=$1 inputs=$2 out=$3 ev=$4 request=examples/request.json
	shift 4
	[ "$inputs" = "$work/epochs.jsonl" ] && request="$work/small.json"
	"$BIN" run --request "$request" --inputs "$inputs" --root app="$root" \
		--isolation "$iso" --transcript "$out" ${ev:+--evidence "$ev"} "$@" >/dev/null 2>&1 || true
}

# median_ms CMD...: the median wall time of RUNS executions, in ms (3 decimals).
median_ms() {
	local i t0 t1
	for ((i = 0; i < RUNS; i++)); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]/1000}'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a/b}'; }

echo "termverify-sandbox supervisor benchmarks ($(nproc) cores, $(uname -r), medians of $RUNS runs)"
echo
echo "1. whole run of the example (hello, ready, stop)"
sandboxed=$(median_ms run os "$work/stop.jsonl" "$work/t.jsonl" "" -- ./echo-subject)
none=$(median_ms run none "$work/stop.jsonl" "$work/t.jsonl" "" -- ./echo-subject)
bare=$(median_ms sh -c "cd '$root' && ./echo-subject <'$work/bare.in'")
exec_true=$(median_ms "$BIN" exec --root "$root" -- /bin/true)
true_bare=$(median_ms /bin/true)
printf '   %-36s %9s ms\n' "run, sandboxed (--isolation os)" "$sandboxed" "run, --isolation none" "$none" "subject bare (no supervisor)" "$bare" \
	"exec -- /bin/true (sandbox start)" "$exec_true" "/bin/true bare" "$true_bare"
overhead=$(awk -v a="$sandboxed" -v b="$none" 'BEGIN {printf "%.3f", a-b}')
exec_cost=$(awk -v a="$exec_true" -v b="$true_bare" 'BEGIN {printf "%.3f", a-b}')
echo "   sandboxing adds $overhead ms to a run (sandboxed - none); the exec start cost is $exec_cost ms (exec /bin/true - bare)"
echo "   ratios: sandboxed/bare $(ratio "$sandboxed" "$bare")x, none/bare $(ratio "$none" "$bare")x"
echo
echo "2. epochs per second, Go echo subject (20x2 terminal), $EPOCHS key inputs per run"
for iso in os none; do
	run "$iso" "$work/stop.jsonl" "$work/t0.jsonl" "$work/e0.json" -- ./echo-subject
	cpu0=$(jq .supervisor_cpu_us "$work/e0.json")
	best=""
	for ((i = 0; i < 5; i++)); do
		run "$iso" "$work/epochs.jsonl" "$work/t.jsonl" "$work/e.json" -- ./echo-subject
		us=$(jq '.phases[] | select(.name=="epochs") | .us' "$work/e.json")
		cpu=$(jq .supervisor_cpu_us "$work/e.json")
		echo "$us $cpu"
	done | sort -n >"$work/epochs-$iso.txt"
	read -r us cpu < <(sed -n 3p "$work/epochs-$iso.txt") # median of 5
	grep -q '"kind":"run.finished"' "$work/t.jsonl" || { echo "bench: the $iso epoch run did not finish" >&2; exit 1; }
	awk -v n="$EPOCHS" -v us="$us" -v cpu="$cpu" -v cpu0="$cpu0" -v iso="$iso" 'BEGIN {
		printf "   %-8s %8.0f epochs/s   supervisor CPU %.1f us/epoch\n", iso, n/(us/1e6), (cpu-cpu0)/n }'
done
echo
echo "3. supervisor peak RSS under flooding subjects"
for mode in flood flood-lines; do
	run os "$work/one.jsonl" "$work/t.jsonl" "$work/e.json" -- ./echo-subject "$mode"
	printf '   %-12s %6.1f MiB   (%s)\n' "$mode" "$(jq '.supervisor_max_rss_bytes/1048576' "$work/e.json")" \
		"$(jq -r '.outcome' "$work/e.json")"
done
run os "$work/stop.jsonl" "$work/t.jsonl" "$work/e.json" -- ./echo-subject
printf '   %-12s %6.1f MiB\n' "(baseline)" "$(jq '.supervisor_max_rss_bytes/1048576' "$work/e.json")"
