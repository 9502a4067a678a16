#!/usr/bin/env bash
# Validates the bundled example transcripts with the built binary, as a user
# would: bin/termverify-sandbox validate examples/transcripts/*.jsonl.
# The examples are written by transcript.Writer (go test ./transcript -update),
# never by hand; this checks that the CLI accepts them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/termverify-sandbox
if [[ ! -x $bin ]]; then
	echo "example-validate: $bin not built (run make build)" >&2
	exit 2
fi
"$bin" validate examples/transcripts/*.jsonl
