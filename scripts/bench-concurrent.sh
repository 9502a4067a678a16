#!/usr/bin/env bash
# Many sandboxes at once (issue 12): for each concurrency C in $LEVELS
# (default 1 2 8 32), C loops each run `termverify-sandbox exec -- /bin/true`
# (a scratch root, the default network deny) back to back for $DURATION
# seconds (default 10), then C loops of bubblewrap doing the same, so both
# meet the same machine. Prints starts per second, p50/p99 start-to-exit
# latency and failures per variant and level, then checks that nothing of
# any of our sandboxes is left: no tvs-* cgroup in any hierarchy, no state
# entry, no mount, no live network namespace, no scratch directory. Exits 1
# on a failed start or a leftover. Needs root. (make bench runs it.)
#   DURATION=2 LEVELS="1 32" bash scripts/bench-concurrent.sh   # quick check
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
LEVELS=${LEVELS:-1 2 8 32}
[ "$(id -u)" = 0 ] || { echo "bench-concurrent: needs root" >&2; exit 1; }
command -v bwrap >/dev/null || {
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
}
BIN=${BIN:-bin/termverify-sandbox}
[ -x "$BIN" ] || { echo "bench-concurrent: $BIN missing; run make build" >&2; exit 2; }
BIN=$(realpath "$BIN")

# A private state directory and temporary directory: what is left in them
# is ours alone, whatever else runs on the machine. Both must pass the
# sandbox's trusted-directory check (root's, not writable by others).
work=$(mktemp -d /run/tvs-concurrent.XXXXXX)
chmod 755 "$work"
mkdir -m 711 "$work/state"
mkdir -m 755 "$work/tmp" "$work/log" "$work/evidence"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

# worker VARIANT END LOG: runs starts until END (µs since the epoch) and
# logs "latency_us status" per start. exec's --verbose evidence (stderr)
# is kept: it names the sandbox id and network namespace the leak check
# looks for.
worker() {
	local variant=$1 end=$2 log=$3 s e rc
	while (($(now_us) < end)); do
		s=$EPOCHREALTIME
		rc=0
		case $variant in
		exec) TMPDIR=$work/tmp "$BIN" exec --verbose --state-dir "$work/state" -- /bin/true \
			2>>"${log/\/log\//\/evidence\/}" || rc=$? ;;
		bwrap) bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
			--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp /bin/true || rc=$? ;;
		esac
		e=$EPOCHREALTIME
		echo "$((${e/./} - ${s/./})) $rc" >>"$log"
	done
}

printf 'concurrent start-to-exit of /bin/true, %ss per level, %s CPUs, load before %s\n' \
	"$DURATION" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %4s %8s %9s %9s %9s %8s  %s\n' variant C starts starts/s p50_ms p99_ms failed load1
failed_total=0
for c in $LEVELS; do
	for variant in exec bwrap; do
		end=$(($(now_us) + DURATION * 1000000))
		pids=()
		for ((w = 0; w < c; w++)); do
			worker "$variant" "$end" "$work/log/$variant-$c-$w" &
			pids+=($!)
		done
		wait "${pids[@]}"
		cat "$work/log/$variant-$c-"[0-9]* >"$work/log/$variant-$c.all"
		read -r n fails p50 p99 < <(sort -n "$work/log/$variant-$c.all" | awk '{lat[NR]=$1; if ($2 != 0) f++} END {
			p50 = lat[int((NR + 1) / 2)]; i99 = int(NR * 0.99 + 0.5); if (i99 < 1) i99 = 1
			printf "%d %d %.2f %.2f\n", NR, f + 0, p50 / 1000, lat[i99] / 1000 }')
		printf '%-6s %4d %8d %9.1f %9s %9s %8d  %s\n' "$variant" "$c" "$n" \
			"$(awk -v n="$n" -v d="$DURATION" 'BEGIN { print n / d }')" "$p50" "$p99" "$fails" \
			"$(cut -d' ' -f1 /proc/loadavg)"
		failed_total=$((failed_total + fails))
		if ((fails > 0)); then
			echo "bench-concurrent: $variant at $c: $fails failed starts; first statuses:" >&2
			awk '$2 != 0' "$work/log/$variant-$c.all" | head -3 >&2
			grep -h '^termverify-sandbox' "$work/evidence/$variant-$c-"* 2>/dev/null | sort | uniq -c | head -5 >&2 || true
		fi
	done
done

# Nothing of ours may be left: every sandbox exec reported (its id and its
# network namespace inode are in the evidence), looked for everywhere it
# could remain.
cat "$work/evidence/"* >"$work/evidence.all" 2>/dev/null || true
grep -o '"id": "tvs-[0-9a-f]*"' "$work/evidence.all" | cut -d'"' -f4 | sort -u >"$work/ids" || true
grep -o '"net": [0-9]*' "$work/evidence.all" | awk '{print $2}' | sort -u >"$work/netns" || true
leaks=()
cg=$(find /sys/fs/cgroup -mindepth 2 -maxdepth 6 -type d -name 'tvs-*' 2>/dev/null | awk -F/ '{print $NF}' | sort -u |
	comm -12 - "$work/ids" | wc -l)
((cg == 0)) || leaks+=("$cg cgroup names")
st=$(find "$work/state" -mindepth 1 -maxdepth 1 -name 'tvs-*' | wc -l)
((st == 0)) || leaks+=("$st state entries")
mnt=$(grep -c -e "$work" /proc/self/mountinfo || true)
((mnt == 0)) || leaks+=("$mnt mounts")
ns=$(for p in /proc/[0-9]*; do stat -L -c %i "$p/ns/net" 2>/dev/null; done | sort -u | comm -12 - "$work/netns" | wc -l)
((ns == 0)) || leaks+=("$ns network namespaces")
tmp=$(find "$work/tmp" -mindepth 1 -maxdepth 1 | wc -l)
((tmp == 0)) || leaks+=("$tmp scratch directories")
echo "checked $(wc -l <"$work/ids") sandboxes: cgroups, state entries, mounts, network namespaces, scratch directories"
if ((${#leaks[@]} > 0)); then
	echo "bench-concurrent: left behind: ${leaks[*]}" >&2
	exit 1
fi
if ((failed_total > 0)); then
	echo "bench-concurrent: $failed_total failed starts" >&2
	exit 1
fi
echo "no failed start, nothing left behind"
