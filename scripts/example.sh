#!/usr/bin/env bash
# The README's main command: run the bundled example under the sandbox,
# print its receipts, validate its transcript; then the same in PTY mode
# with bash, printing the screen it left. `make example` runs it after
# `make build`. Needs root for the os tier; without it --isolation auto
# downgrades and says so on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=bin/termverify-sandbox
[ -x "$BIN" ] || { echo "example: $BIN missing; run make build" >&2; exit 2; }

root=$(mktemp -d)
chmod 755 "$root" # the subject runs as an unprivileged user inside
trap 'rm -rf "$root"' EXIT
# The subject is a plain program in the mapped root: the sandbox binds it
# read-write at /sandbox, its working directory.
CGO_ENABLED=0 go build -trimpath -o "$root/echo-subject" ./examples/echo-subject
mkdir -p out

set -x
"$BIN" run --request examples/request.json --inputs examples/inputs.jsonl \
	--root app="$root" --transcript out/example.jsonl --evidence out/example.evidence.json \
	-- ./echo-subject
"$BIN" receipts out/example.jsonl
"$BIN" validate out/example.jsonl
# PTY mode: an unmodified bash on a terminal of the sandbox's own, typed
# into; the last observation's frame is the screen it left.
"$BIN" run --pty --request examples/request.json --inputs examples/pty-inputs.jsonl \
	--root app="$root" --transcript out/example-pty.jsonl -- /bin/bash --norc --noprofile
"$BIN" validate out/example-pty.jsonl
# For people: the PTY run as an asciicast recording (asciinema play
# out/example.cast), and both runs as one HTML page that loads nothing.
"$BIN" export --asciicast out/example.cast out/example-pty.jsonl
"$BIN" report out/example-pty.jsonl out/example.jsonl --html out/example.html
{ set +x; } 2>/dev/null
tail -n 2 out/example-pty.jsonl | head -n 1 | jq -r '.payload.frame.lines[] | select(. != "")'
echo "example: the recording is out/example.cast (asciinema play out/example.cast), the report out/example.html (open it in a browser)"
