#!/usr/bin/env bash
# Runs every Fuzz* target in the module for FUZZTIME each (one at a time:
# go test -fuzz takes a single target per package invocation).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
# Minimizing a new interesting input can outlast a short -fuzztime, and the
# go command then fails the run with "context deadline exceeded" although
# nothing was found; bound minimization well inside the run.
FUZZMINTIME="${FUZZMINTIME:-2s}"
status=0
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target for $FUZZTIME"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINTIME" "$pkg"; then
			status=1
		fi
	done
done
exit $status
