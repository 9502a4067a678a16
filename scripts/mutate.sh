#!/usr/bin/env bash
# Mutation testing (make mutate; see docs/TESTING.md). Not part of make test:
# it takes tens of minutes.
#
# 1. gremlins (pinned) over the packages whose tests need no root, one
#    package at a time, printing each one's efficacy (killed / killed+lived).
# 2. The curated mutations of scripts/mutations/*.patch, for the packages
#    whose tests start sandboxes and terminals (sandbox, supervisor,
#    quiesce) and for promises found by hand elsewhere: each patch is
#    applied alone to a scratch copy, its named tests are run, and the
#    mutation is killed when they fail. A patch's header says:
#        # pkg: ./sandbox
#        # run: ^TestName$
#        # expect: killed            (or: equivalent: the reason)
#
# Everything runs on a scratch copy in a temporary directory (beside a link
# to ../shared, which some tests read), never in the work tree.
#
# Environment:
#   MUTATE_PKGS     packages for gremlins (default: the list below)
#   MUTATE_ONLY     gremlins | curated (default: both)
#   MUTATE_REV      copy this commit (git archive) instead of the work tree
#   MUTATE_WORKERS  gremlins workers (default 2: one per core of the machine)
#   MUTATE_TIMEOUT  gremlins --timeout-coefficient (default 4)
#   MUTATE_GREMLINS_FLAGS  more gremlins flags, e.g. -E 'quick\.go$' to leave a file out
#   MUTATE_PATCHES  patches to run (default scripts/mutations/*.patch)
set -euo pipefail

# The whole script is one function, read before it runs: editing this file
# during a run (which takes tens of minutes) cannot derail the run.
main() {
cd "$(dirname "$0")/.."
repo=$(pwd)
GO=${GO:-go}
GREMLINS=github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
# transcript last: its tests are the slowest by far (see docs/TESTING.md).
PKGS=${MUTATE_PKGS:-"receipts config internal/termsafe control compare ptyinput internal/canon batch vt interminai asciicast ptyrecord transcript"}
WORKERS=${MUTATE_WORKERS:-2}
TIMEOUT=${MUTATE_TIMEOUT:-4}
ONLY=${MUTATE_ONLY:-}

scratch=$(mktemp -d /tmp/termverify-mutate.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
if [ -d "$repo/../shared" ]; then ln -s "$(cd "$repo/../shared" && pwd)" "$scratch/shared"; fi

# copy DIR: a pristine copy of the sources (the work tree's tracked and
# untracked-but-not-ignored files, or MUTATE_REV's tree).
copy() {
	rm -rf "$1" && mkdir -p "$1"
	if [ -n "${MUTATE_REV:-}" ]; then
		git -C "$repo" archive "$MUTATE_REV" | tar -C "$1" -xf -
	else
		git -C "$repo" ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -C "$1" -xf -
	fi
}

start=$(date +%s)
summary=$scratch/summary
: >"$summary"

if [ "$ONLY" != curated ]; then
	copy "$scratch/main"
	for p in $PKGS; do
		t0=$(date +%s)
		out=$scratch/gremlins-${p//\//-}.txt
		# width_table.go is generated data (Unicode ranges), not logic.
		# gremlins' work copies go under the scratch directory, so an
		# interrupted run leaves nothing behind in /tmp.
		mkdir -p "$scratch/tmp"
		(cd "$scratch/main" && TMPDIR=$scratch/tmp CGO_ENABLED=1 $GO run $GREMLINS unleash \
			--workers "$WORKERS" --test-cpu 1 --timeout-coefficient "$TIMEOUT" \
			-E 'width_table\.go$' ${MUTATE_GREMLINS_FLAGS:-} -S lt -o "$scratch/gremlins-${p//\//-}.json" "./$p") >"$out" 2>&1 || true
		grep -E '^ *(LIVED|TIMED OUT)' "$out" | sed "s|^|$p: |" || true
		k=$(grep -oE 'Killed: [0-9]+' "$out" | tail -1 | grep -oE '[0-9]+' || echo 0)
		l=$(grep -oE 'Lived: [0-9]+' "$out" | tail -1 | grep -oE '[0-9]+' || echo 0)
		to=$(grep -oE 'Timed out: [0-9]+' "$out" | tail -1 | grep -oE '[0-9]+' || echo 0)
		nc=$(grep -oE 'Not covered: [0-9]+' "$out" | tail -1 | grep -oE '[0-9]+' || echo 0)
		if ! grep -q 'Killed:' "$out"; then
			echo "$p: gremlins failed:" && tail -20 "$out"
			printf 'gremlins %-18s ERROR (see above)\n' "$p" >>"$summary"
			continue
		fi
		eff=$(awk -v k="$k" -v l="$l" 'BEGIN { if (k + l) printf "%.1f%%", 100 * k / (k + l); else print "n/a" }')
		printf 'gremlins %-18s efficacy %6s  killed %4d  lived %3d  timed out %3d  not covered %4d  (%ds)\n' \
			"$p" "$eff" "$k" "$l" "$to" "$nc" $(($(date +%s) - t0)) | tee -a "$summary"
	done
fi

if [ "$ONLY" != gremlins ]; then
	declare -A killed total equiv baseline
	# problems: patches that did not apply or run, and mutants that
	# survived though not marked equivalent. Any makes the script fail, so
	# a list gone stale with the code cannot pass for a clean run.
	problems=0
	shopt -s nullglob
	patches=(${MUTATE_PATCHES:-scripts/mutations/*.patch})
	for f in "${patches[@]}"; do
		name=$(basename "$f" .patch)
		pkg=$(sed -n 's/^# pkg: *//p' "$f" | head -1)
		run=$(sed -n 's/^# run: *//p' "$f" | head -1)
		expect=$(sed -n 's/^# expect: *//p' "$f" | head -1)
		if [ -z "$pkg" ] || [ -z "$run" ]; then
			echo "$name: no '# pkg:' or '# run:' header" >&2
			exit 1
		fi
		# A kill counts only when the same tests pass without the mutation.
		if [ -z "${baseline[$pkg $run]:-}" ]; then
			copy "$scratch/cur"
			if (cd "$scratch/cur" && CGO_ENABLED=1 $GO test -count=1 -timeout 15m "$pkg" -run "$run") >"$scratch/baseline.txt" 2>&1; then
				baseline[$pkg $run]=pass
			else
				baseline[$pkg $run]=fail
				echo "baseline: $pkg -run '$run' fails without any mutation:" && tail -5 "$scratch/baseline.txt"
			fi
		fi
		if [ "${baseline[$pkg $run]}" = fail ]; then
			printf 'curated  %-50s NOT RUN (its tests fail without the mutation)\n' "$name" | tee -a "$summary"
			problems=$((problems + 1))
			continue
		fi
		copy "$scratch/cur"
		if ! (cd "$scratch/cur" && git apply "$repo/$f"); then
			printf 'curated  %-50s DOES NOT APPLY (update the patch)\n' "$name" | tee -a "$summary"
			problems=$((problems + 1))
			continue
		fi
		t0=$(date +%s)
		log=$scratch/curated-$name.txt
		if ! (cd "$scratch/cur" && CGO_ENABLED=1 $GO vet "$pkg") >"$log" 2>&1; then
			res="NOT VIABLE (does not build)"
		elif (cd "$scratch/cur" && CGO_ENABLED=1 $GO test -count=1 -timeout 15m "$pkg" -run "$run") >>"$log" 2>&1; then
			res=SURVIVED
		else
			res=KILLED
			case "$expect" in equivalent*) ;; *) killed[$pkg]=$((${killed[$pkg]:-0} + 1)) ;; esac
		fi
		# An equivalent mutation is kept to document it, not counted.
		case "$expect" in
		equivalent*)
			res="$res (expected: $expect)"
			equiv[$pkg]=$((${equiv[$pkg]:-0} + 1))
			;;
		*)
			total[$pkg]=$((${total[$pkg]:-0} + 1))
			case "$res" in KILLED) ;; *) problems=$((problems + 1)) ;; esac
			;;
		esac
		printf 'curated  %-50s %s  (%ds)\n' "$name" "$res" $(($(date +%s) - t0)) | tee -a "$summary"
		case "$res" in
		SURVIVED*) tail -3 "$log" ;;
		KILLED*) grep -m1 -A2 -- '--- FAIL' "$log" | sed 's/^/    /' || true ;;
		esac
	done
	for pkg in $(printf '%s\n' "${!total[@]}" "${!equiv[@]}" | sort -u); do
		printf 'curated  %-18s killed %d of %d  (equivalent, not counted: %d)\n' \
			"$pkg" "${killed[$pkg]:-0}" "${total[$pkg]:-0}" "${equiv[$pkg]:-0}" >>"$summary"
	done
fi

echo
echo "== summary ($(($(date +%s) - start)) s)"
sort -s -k1,1 "$summary"
if [ "${problems:-0}" -gt 0 ]; then
	echo "curated: $problems patch(es) did not apply, did not run, or survived unexpectedly" >&2
	return 1
fi
}

# One line: bash reads a line whole before running it, so the exit is read
# with the call and nothing after it is read from a file edited meanwhile.
main "$@"; exit
