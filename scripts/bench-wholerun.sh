#!/usr/bin/env bash
# Issue 12's whole-run figure (make bench runs it): a Python
# termverify.control/v1 subject (examples/upstream-subject) and 100 text
# inputs, as the issue measured it. Three variants interleaved, ROUNDS
# rounds (default 15): the subject bare, fed the same 102 lines from a
# file (session.hello, the 100 inputs, input.stop); the same lines fed in
# lockstep by scripts/lockstep (one reply awaited per line, as a
# supervisor must: the floor of any driver, with nothing of ours); `run`
# sandboxed; `run --isolation none`; and two process starts, to price
# the start of our binary (it links libcontainer) against a small Go
# program's: `termverify-sandbox version` and scripts/lockstep with no
# arguments (usage, exit 2). Prints the medians, the ratios to bare and
# the targets (sandboxed <= 2x bare, none <= 1.3x), what each run costs
# beyond the lockstep floor, and the floor of `--isolation none` for any
# driver shipped in this binary (lockstep + the start difference); and
# scripts/lcfloor running /bin/true against lcfloor with no arguments (its
# own start and usage exit), whose difference is libcontainer's container
# alone: added to the none floor it is the sandboxed floor. Needs root for
# the os tier.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/benchlib.sh

BIN=${BIN:-bin/termverify-sandbox}
ROUNDS=${ROUNDS:-15}
PY=/usr/bin/python3
[ -x "$BIN" ] || { echo "bench: $BIN missing; run make build" >&2; exit 2; }
[ -x "$PY" ] || { echo "bench: $PY missing (the sandbox binds the host's /usr)" >&2; exit 2; }

work=$(mktemp -d)
lcstate="$work/lcstate"
mkdir "$lcstate"
# An lcfloor run cut short (Ctrl-C) leaves its container's cgroups, named
# by its state entry (floor-*): they go before the directory.
cleanup() {
	local d
	for d in "$lcstate"/floor-*; do
		[ -d "$d" ] || continue
		remove_cgroups "${d##*/}"
	done
	rm -rf "$work"
}
trap cleanup EXIT
LOCKSTEP="$work/lockstep"
# Built as a plain Go program (no cgo): the least a Go driver can be.
CGO_ENABLED=0 go build -trimpath -o "$LOCKSTEP" ./scripts/lockstep
LCFLOOR="$work/lcfloor"
build_lcfloor "$LCFLOOR"
root="$work/root"
mkdir -p "$root"
chmod 755 "$work" "$root"
cp examples/upstream-subject/subject.py "$root/subject.py"
for ((i = 0; i < 100; i++)); do echo "{\"kind\":\"input.text\",\"payload\":{\"text\":\"line $i\"}}"; done >"$work/inputs.jsonl"
echo '{"kind":"input.stop","payload":{}}' >>"$work/inputs.jsonl"
hello='{"protocol":"termverify.control/v1","kind":"session.hello","payload":{"run_id":"example-run","at_ms":0,"config":{"seed":"42","clock":{"mode":"manual","initial_ms":0},"locale":"en-US","timezone":"UTC","terminal":{"columns":80,"rows":24,"capabilities":[]},"filesystem":{"mode":"sandbox","root_id":"app"},"network":{"mode":"deny"}}}}'
{
	echo "$hello"
	for ((i = 0; i < 100; i++)); do echo "{\"protocol\":\"termverify.control/v1\",\"kind\":\"input.text\",\"payload\":{\"text\":\"line $i\"}}"; done
	echo '{"protocol":"termverify.control/v1","kind":"input.stop","payload":{}}'
} >"$work/bare.in"

ms() { # ms CMD...: wall time of one execution, in µs
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}
run() { "$BIN" run --request examples/request.json --inputs "$work/inputs.jsonl" --root app="$root" \
	--isolation "$1" --transcript "$work/t.jsonl" -- "$PY" subject.py; }
bare() { (cd "$root" && TERMVERIFY_FS_ROOT="$root" "$PY" subject.py <"$work/bare.in"); }
lockstep() { (cd "$root" && TERMVERIFY_FS_ROOT="$root" "$LOCKSTEP" "$work/bare.in" "$PY" subject.py); }

# Each variant once, checked: the bare subject answers every line, runs finish.
lines=$(bare | wc -l)
[ "$lines" -ge 102 ] || { echo "bench: the bare subject wrote $lines lines, want >= 102" >&2; exit 1; }
lockstep || { echo "bench: the lockstep driver failed" >&2; exit 1; }
for iso in os none; do
	run "$iso" >/dev/null 2>&1 || { echo "bench: run --isolation $iso failed" >&2; exit 1; }
done

echo "issue 12 whole run: Python upstream subject, 100 text inputs, $ROUNDS interleaved rounds, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < ROUNDS; r++)); do
	echo "bare $(ms bare)"
	echo "lockstep $(ms lockstep)"
	echo "os $(ms run os)"
	echo "none $(ms run none)"
	echo "startours $(ms "$BIN" version)"
	echo "startgo $(ms "$LOCKSTEP")"
	echo "lcfloor $(ms "$LCFLOOR" "$lcstate" /bin/true)"
	echo "lcstart $(ms "$LCFLOOR")"
done >"$work/times"
med() { awk -v v="$1" '$1 == v {print $2}' "$work/times" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'; }
b=$(med bare) l=$(med lockstep) o=$(med os) n=$(med none) so=$(med startours) sg=$(med startgo) lf=$(med lcfloor) ls=$(med lcstart)
printf '   %-42s %8s ms\n' "subject bare, 102 lines from a file" "$b" "lockstep floor (scripts/lockstep)" "$l" "run, sandboxed (--isolation os)" "$o" "run, --isolation none" "$n" \
	"start+exit: termverify-sandbox version" "$so" "start+exit: small Go program" "$sg" \
	"lcfloor /bin/true" "$lf" "start+exit: lcfloor (usage)" "$ls"
awk -v b="$b" -v l="$l" -v o="$o" -v n="$n" -v so="$so" -v sg="$sg" -v lf="$lf" -v ls="$ls" 'BEGIN {
	printf "   sandboxed/bare %.2fx (target <= 2), none/bare %.2fx (target <= 1.3), lockstep/bare %.2fx\n", o/b, n/b, l/b
	printf "   beyond the lockstep floor: sandboxed +%.1f ms, none +%.1f ms\n", o-l, n-l
	printf "   floor of none in this binary: lockstep + start difference = %.1f ms = %.2fx bare\n", l+so-sg, (l+so-sg)/b
	printf "   floor sandboxed: that + libcontainer container (lcfloor - its start) = %.1f ms = %.2fx bare\n", l+so-sg+lf-ls, (l+so-sg+lf-ls)/b }'
echo "   load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
