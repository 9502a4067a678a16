#!/usr/bin/env bash
# Start-to-exit of /bin/true: termverify-sandbox exec vs the runc CLI (built
# from the runc version go.mod pins, default `runc spec` bundle) vs the
# floor of libcontainer's start path (scripts/lcfloor: a bare libcontainer
# container, nothing of ours) vs that floor with a shell as PID 1 forking
# the command (lcpid1: the cost of having a PID 1 that is not the subject,
# as our reaper is) vs bubblewrap vs unshare vs bare, interleaved
# round-robin in one run so that machine load hits every variant alike.
# Prints median wall and CPU (user+system of the command and everything it
# started) and the ratios issue 12 sets targets on: exec at most 1.10x
# lcfloor and never slower than the runc CLI (docs/SANDBOX.md and
# docs/BENCHMARKS.md quote runs). BUSY=1 runs one busy loop per CPU beside
# the measurement (the loaded case). Needs root; installs bubblewrap and jq
# if missing and builds runc with `go install`.
#   N=200 bash scripts/bench-sandbox.sh; BUSY=1 N=200 bash scripts/bench-sandbox.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
[ "$(id -u)" = 0 ] || { echo "bench-sandbox: needs root" >&2; exit 1; }
. scripts/benchlib.sh
if [ -z "${BIN:-}" ]; then
	# Built as make build does, every time (cached, so cheap): a dynamic
	# build pays the loader on each of its three process starts, and a
	# binary kept from an older checkout measures older code.
	BIN=bin/termverify-sandbox
	CGO_ENABLED=1 go build -trimpath "${static[@]}" -o "$BIN" ./cmd/termverify-sandbox
fi
need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v jq >/dev/null || need_apt+=(jq) # edits the runc bundle's config
if [ "${#need_apt[@]}" -gt 0 ]; then
	# A fresh machine has no package lists yet: update first.
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
mkdir -p bin/bench
build_lcfloor bin/bench/lcfloor
runc_version=$(go list -m -f '{{.Version}}' github.com/opencontainers/runc)
if [ ! -x "bin/bench/runc-$runc_version" ]; then
	GOBIN=$PWD/bin/bench go install "github.com/opencontainers/runc@$runc_version"
	mv bin/bench/runc "bin/bench/runc-$runc_version"
fi
RUNC=bin/bench/runc-$runc_version
state=$(mktemp -d /run/tvs-bench.XXXXXX)
root=$(mktemp -d)
chmod 777 "$root"
# A variant cut short (Ctrl-C, or a failure under set -e) leaves cgroups
# that only its entry in $state names, so they go before the state dir:
# every container with a saved state through runc delete -f (runc reads any
# libcontainer state of its version: runc's own, lcfloor's and exec's),
# then cgroups named by an id whose state was never saved (exec's tvs-*,
# lcfloor's floor-*: a start cut between its cgroups and its state).
cleanup() {
	set +e
	local st d
	for st in "$state"/runc/*/state.json "$state"/*/lc/*/state.json; do
		[ -f "$st" ] || continue
		d=${st%/state.json}
		"$RUNC" --root "${d%/*}" delete -f "${d##*/}" >/dev/null 2>&1
	done
	for d in "$state"/tvs-* "$state"/floor-*; do
		[ -d "$d" ] || continue
		remove_cgroups "${d##*/}"
	done
	rm -rf "$state" "$root"
	for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; done
}
busy=()
trap cleanup EXIT
# The runc bundle: runc's default spec, /bin/true, no terminal, the host's
# /usr bound read-only under a root of symlinks as in the bwrap variant.
bundle=$state/bundle
mkdir -p "$bundle/rootfs"/{usr,proc,dev,tmp,sys}
ln -s usr/bin "$bundle/rootfs/bin"
ln -s usr/lib "$bundle/rootfs/lib"
ln -s usr/lib64 "$bundle/rootfs/lib64"
(cd "$bundle" && "$OLDPWD/$RUNC" spec)
jq '.process.terminal = false | .process.args = ["/bin/true"]
	| .mounts += [{destination: "/usr", type: "bind", source: "/usr", options: ["rbind", "ro"]}]' \
	"$bundle/config.json" >"$bundle/config.json.new"
mv "$bundle/config.json.new" "$bundle/config.json"
n=0

variants=(exec runc lcfloor lcpid1 bwrap unshare bare)
run() {
	case $1 in
	exec) "$BIN" exec --state-dir "$state" --root "$root" -- /bin/true ;;
	runc) n=$((n + 1)) && "$RUNC" --root "$state/runc" run --bundle "$bundle" "bench-$n" ;;
	lcfloor) bin/bench/lcfloor "$state" /bin/true ;;
	# The same floor with a PID 1 that forks the subject and waits, as
	# our reaper does (/bin/true by path is not a shell builtin): what
	# the structure costs, without anything of ours in it.
	lcpid1) bin/bench/lcfloor "$state" /bin/sh -c '/bin/true; exit $?' ;;
	bwrap) bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
		--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp /bin/true ;;
	unshare) unshare --net --mount --pid --fork /bin/true ;;
	bare) /bin/true ;;
	esac
}
declare -A samples cpus
for v in "${variants[@]}"; do run "$v"; done # warm caches
if [ -n "${BUSY:-}" ]; then
	# The loaded case: one busy loop per CPU, at the same priority.
	for ((c = 0; c < $(nproc); c++)); do
		(while :; do :; done) &
		busy+=($!)
	done
fi
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# children_cpu: user+system µs of every child this shell has reaped
# (libcontainer's init, the reaper and the subject are reaped below the
# command, so they count too), from the times builtin (ms resolution; no
# fork, so nothing is added inside the timed window).
# It sets cpu_us, in this shell: a $(...) would run times in a subshell,
# which has reaped nothing.
tf=$state/times
cpu_us=0
children_cpu() {
	local cu cs t n=0
	times >"$tf"
	{ read -r _ && read -r cu cs; } <"$tf"
	for t in "$cu" "$cs"; do # "1m2.345s"
		t=${t%s}
		local min=${t%%m*} sec=${t#*m}
		n=$((n + min * 60000000 + 10#${sec%.*} * 1000000 + 10#${sec#*.} * 1000))
	done
	cpu_us=$n
}
for ((i = 0; i < N; i++)); do
	for v in "${variants[@]}"; do
		children_cpu
		c0=$cpu_us
		s=$EPOCHREALTIME
		run "$v"
		e=$EPOCHREALTIME
		children_cpu
		samples[$v]+="$(((${e/./} - ${s/./})))"$'\n'
		cpus[$v]+="$((cpu_us - c0))"$'\n'
	done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
declare -A med cmed
for v in "${variants[@]}"; do
	med[$v]=$(printf '%s' "${samples[$v]}" | median)
	cmed[$v]=$(printf '%s' "${cpus[$v]}" | median)
done
echo "start-to-exit of /bin/true, N=$N interleaved, $(nproc) CPUs, ${BUSY:+one busy loop per CPU beside it, }load $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
printf '%-8s %10s %8s %8s\n' variant median_ms x_bare cpu_ms
for v in "${variants[@]}"; do
	awk -v v="$v" -v m="${med[$v]}" -v b="${med[bare]}" -v c="${cmed[$v]}" 'BEGIN {printf "%-8s %10.2f %8.1f %8.1f\n", v, m/1000, m/b, c/1000}'
done
awk -v a="${med[exec]}" -v r="${med[runc]}" -v f="${med[lcfloor]}" -v p="${med[lcpid1]}" -v b="${med[bwrap]}" \
	'BEGIN {printf "exec/lcfloor %.2fx (target <= 1.10)  exec/runc %.2fx (target <= 1)  exec/lcpid1 %.2fx  lcfloor/bwrap %.1fx  exec/bwrap %.1fx\n", a/f, a/r, a/p, f/b, a/b}'
