#!/usr/bin/env bash
# Start-to-exit of /bin/true: termverify-sandbox exec vs bubblewrap vs
# unshare vs bare, interleaved round-robin in one run so that machine load
# hits every variant alike. Prints medians and ratios (docs/SANDBOX.md
# quotes a run). Needs root; installs bubblewrap if missing.
#   N=200 bash scripts/bench-sandbox.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
BIN=${BIN:-bin/termverify-sandbox}
[ "$(id -u)" = 0 ] || { echo "bench-sandbox: needs root" >&2; exit 1; }
[ -x "$BIN" ] || CGO_ENABLED=1 go build -trimpath -o "$BIN" ./cmd/termverify-sandbox
if ! command -v bwrap >/dev/null; then
	# A fresh machine has no package lists yet: update first.
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
state=$(mktemp -d /run/tvs-bench.XXXXXX)
root=$(mktemp -d)
chmod 777 "$root"
trap 'rm -rf "$state" "$root"' EXIT

variants=(exec bwrap unshare bare)
run() {
	case $1 in
	exec) "$BIN" exec --state-dir "$state" --root "$root" -- /bin/true ;;
	bwrap) bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
		--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp /bin/true ;;
	unshare) unshare --net --mount --pid --fork /bin/true ;;
	bare) /bin/true ;;
	esac
}
declare -A samples
for v in "${variants[@]}"; do run "$v"; done # warm caches
for ((i = 0; i < N; i++)); do
	for v in "${variants[@]}"; do
		s=$EPOCHREALTIME
		run "$v"
		e=$EPOCHREALTIME
		samples[$v]+="$(((${e/./} - ${s/./})))"$'\n'
	done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
declare -A med
for v in "${variants[@]}"; do med[$v]=$(printf '%s' "${samples[$v]}" | median); done
echo "start-to-exit of /bin/true, N=$N interleaved, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
printf '%-8s %10s %8s\n' variant median_ms x_bare
for v in "${variants[@]}"; do
	awk -v v="$v" -v m="${med[$v]}" -v b="${med[bare]}" 'BEGIN {printf "%-8s %10.2f %8.1f\n", v, m/1000, m/b}'
done
awk -v a="${med[exec]}" -v b="${med[bwrap]}" -v u="${med[unshare]}" \
	'BEGIN {printf "exec/bwrap %.1fx  exec/unshare %.1fx  exec vs runc CLI 25 ms: %.1fx faster\n", a/b, a/u, 25000/a}'
