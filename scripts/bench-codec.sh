#!/usr/bin/env bash
# Benchmarks the strict transcript codec (transcript.Parse: framing, decoding,
# RFC 8785 check, every semantic pass) on a realistic ~30 MiB transcript, and
# Python's plain json.loads over the same lines as a yardstick. Run by
# `make bench`; figures are recorded in docs/TRANSCRIPT.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
file=$tmp/bench.jsonl

go run ./scripts/gentranscript -o "$file"
bytes=$(wc -c <"$file")
records=$(wc -l <"$file")
echo "transcript: $bytes bytes, $records records ($(nproc) CPUs)"

TRANSCRIPT_BENCH_FILE=$file go test -run '^$' -bench '^BenchmarkParse$' -benchtime 20x -count 1 ./transcript/ | tee "$tmp/go.txt"
go_mbs=$(awk '/^BenchmarkParse/ { for (i = 1; i <= NF; i++) if ($(i) == "MB/s") print $(i-1) }' "$tmp/go.txt")

# Best of 5 passes of json.loads over every line (bytes in, as Parse gets them).
py_mbs=$(python3 - "$file" <<'PY'
import json, sys, time
data = open(sys.argv[1], "rb").read()
lines = data.split(b"\n")[:-1]
best = float("inf")
for _ in range(5):
    t0 = time.perf_counter()
    for line in lines:
        json.loads(line)
    best = min(best, time.perf_counter() - t0)
print(f"{len(data) / best / 1e6:.2f}")
PY
)
printf '\n%-44s %10s\n' "codec" "MB/s"
printf '%-44s %10s\n' "transcript.Parse (strict, all rules)" "$go_mbs"
printf '%-44s %10s\n' "python3 json.loads per line (no rules)" "$py_mbs"
