#!/usr/bin/env bash
# Benchmarks the vt terminal emulator against tmux on the same two 16 MiB
# streams, on an 80x24 screen with 2,000 lines of scrollback each:
#   mixed: the recorded vim, less, bash, curses and top sessions of
#          vt/testdata, repeated (cursor movement, SGR, line drawing, wide
#          characters, scroll regions, alternate screen);
#   log:   scrolling log lines of 40-120 columns with a coloured level.
# vt: bytes fed per second in process (go test -bench, b.SetBytes).
# tmux: the stream's size over the time from starting `cat FILE` in a
# detached pane (raw tty, status line off, private socket) until the pane
# is dead, minus the same for an empty file (tmux's own start-up and
# teardown). Also reports vt's heap per scrollback line. Run by `make
# bench`; figures are recorded in docs/VT.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
sock=$tmp/tmux.sock
cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null || true # our private server only
	rm -rf "$tmp"
}
trap cleanup EXIT

go test -c -o "$tmp/vt.test" ./vt/
cd vt # the test binary reads testdata/ from its package directory
VT_BENCH_DIR=$tmp "$tmp/vt.test" -test.run '^TestWriteBenchStreams$' >/dev/null
: >"$tmp/empty.bin"
mixed_bytes=$(wc -c <"$tmp/mixed.bin")
log_bytes=$(wc -c <"$tmp/log.bin")
echo "streams: mixed $mixed_bytes bytes, log $log_bytes bytes ($(nproc) CPUs, $(tmux -V))"

if ! command -v tmux >/dev/null; then
	echo "tmux is not installed: only vt is measured" >&2
	have_tmux=0
else
	have_tmux=1
	printf 'set -g status off\nset -g history-limit 2000\n' >"$tmp/tmux.conf"
	tmux -S "$sock" -f "$tmp/tmux.conf" new-session -d -s keep "sleep 100000"
fi

n=0
# tmux_seconds FILE: seconds from starting `cat FILE` in a fresh 80x24
# pane until the pane (and with it its session) is gone.
tmux_seconds() {
	n=$((n + 1))
	local name=b$n t0 t1
	t0=$(date +%s%N)
	tmux -S "$sock" new-session -d -s "$name" -x 80 -y 24 "stty raw -echo; cat $1"
	while tmux -S "$sock" has-session -t "=$name" 2>/dev/null; do sleep 0.002; done
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}'
}

rate() { awk -v bytes="$1" -v s="$2" -v e="$3" 'BEGIN {d = s - e; if (d <= 0) print "inf"; else printf "%.1f\n", bytes / d / 1e6}'; }

# This VM's speed drifts by tens of percent from minute to minute, so the
# two are measured in alternating rounds and the ratios compare figures of
# the same rounds.
rounds=${BENCH_ROUNDS:-5}
for ((r = 1; r <= rounds; r++)); do
	out=$("$tmp/vt.test" -test.run '^$' -test.bench '^BenchmarkFeed(Mixed|Log)$' -test.benchtime 3x)
	vm=$(awk '/^BenchmarkFeedMixed/ {for (i = 1; i <= NF; i++) if ($i == "MB/s") print $(i-1)}' <<<"$out")
	vl=$(awk '/^BenchmarkFeedLog/ {for (i = 1; i <= NF; i++) if ($i == "MB/s") print $(i-1)}' <<<"$out")
	echo "$vm" >>"$tmp/vt-mixed"
	echo "$vl" >>"$tmp/vt-log"
	line="round $r: vt mixed $vm MB/s, log $vl MB/s"
	if ((have_tmux)); then
		te=$(tmux_seconds "$tmp/empty.bin")
		tm=$(tmux_seconds "$tmp/mixed.bin")
		tl=$(tmux_seconds "$tmp/log.bin")
		te2=$(tmux_seconds "$tmp/empty.bin")
		empty=$(awk -v a="$te" -v b="$te2" 'BEGIN {printf "%.4f", (a + b) / 2}')
		rate "$mixed_bytes" "$tm" "$empty" >>"$tmp/tmux-mixed"
		rate "$log_bytes" "$tl" "$empty" >>"$tmp/tmux-log"
		line="$line; tmux mixed $(tail -1 "$tmp/tmux-mixed") MB/s (${tm}s), log $(tail -1 "$tmp/tmux-log") MB/s (${tl}s), empty ${empty}s"
	fi
	echo "$line"
done

median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
best() { sort -g "$1" | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
printf '\n%-28s %12s %10s\n' "MB/s ($rounds rounds)" "median" "best"
for s in mixed log; do
	printf '%-28s %12s %10s\n' "vt $s" "$(median "$tmp/vt-$s")" "$(best "$tmp/vt-$s")"
	if ((have_tmux)); then
		printf '%-28s %12s %10s\n' "tmux $s" "$(median "$tmp/tmux-$s")" "$(best "$tmp/tmux-$s")"
		printf '%-28s %12s %10s\n' "ratio vt / tmux ($s)" "$(ratio "$(median "$tmp/vt-$s")" "$(median "$tmp/tmux-$s")")" \
			"$(ratio "$(best "$tmp/vt-$s")" "$(best "$tmp/tmux-$s")")"
	fi
done
"$tmp/vt.test" -test.run '^$' -test.bench '^BenchmarkScrollbackLine$' -test.benchtime 1x |
	awk '/^BenchmarkScrollbackLine/ {for (i = 1; i <= NF; i++) if ($i == "bytes/line") print "vt heap per scrollback line (log lines): " $(i-1) " bytes"}'
