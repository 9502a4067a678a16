#!/usr/bin/env bash
# The pictures of the example's report in docs/, taken by headless
# Chromium from out/example.html (make example writes it; `make
# screenshots` runs both). Chromium gets a fresh profile in a temporary
# directory, removed afterwards, and every flag that keeps it off the
# network; the page itself loads nothing (docs/REPORTS.md).
set -euo pipefail
cd "$(dirname "$0")/.."

page=out/example.html
[ -f "$page" ] || { echo "screenshots: $page missing; run make example" >&2; exit 2; }
command -v chromium >/dev/null || { echo "screenshots: chromium missing; run scripts/setup.sh" >&2; exit 2; }

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --disable-gpu --disable-quic --no-first-run --disable-background-networking
	--disable-component-update --disable-sync --disable-extensions --hide-scrollbars
	--user-data-dir="$profile")
[ "$(id -u)" = 0 ] && flags+=(--no-sandbox)

shot() { # NAME WIDTH,HEIGHT PAGE
	timeout 120 chromium "${flags[@]}" --window-size="$2" --screenshot="docs/$1" "file://$PWD/$3" 2>/dev/null
	echo "screenshots: docs/$1"
}
shot report-example.png 1100,2600 "$page"
# Colours, attributes, a resize and a non-zero exit: the recorded bash run
# the report's tests use (testdata/pty/README.md).
bin=bin/termverify-sandbox
[ -x "$bin" ] || { echo "screenshots: $bin missing; run make build" >&2; exit 2; }
"$bin" report testdata/pty/bash.jsonl --html out/report-colours.html >/dev/null
shot report-colours.png 1100,2200 out/report-colours.html
