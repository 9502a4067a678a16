# termverify-sandbox — build, test, fuzz, bench, lint.
# Every install step the targets need is in scripts/setup.sh, which they call.

GO        ?= go
BIN       := bin/termverify-sandbox
PKGS      := ./...
FUZZTIME  ?= 10m
SHORTFUZZ ?= 5s

.PHONY: all setup build example screenshots test test-race fuzz fuzz-short bench lint mutate clean conformance conformance-golden

all: build

setup:
	@bash scripts/setup.sh

# cgo is required: libcontainer's nsenter runs C before the Go runtime.
# Linked statically (netgo, osusergo: no NSS), so that the binary, which is
# also our PID-1 reaper inside the sandbox, runs in a --rootfs without a C
# library, and each of its three process starts skips the dynamic loader.
# cmd/termverify-sandbox/exec_test.go builds it the same way.
STATIC := -tags 'netgo osusergo' -ldflags '-linkmode external -extldflags -static'
build: setup
	CGO_ENABLED=1 $(GO) build -trimpath $(STATIC) -o $(BIN) ./cmd/termverify-sandbox

# The README's first command: build, then run the main job on the bundled example.
example: build
	@bash scripts/example.sh

# The example report's pictures in docs/ (docs/REPORTS.md), by headless
# Chromium from out/example.html.
screenshots: example
	@bash scripts/screenshots.sh

# The README's second command (and CI's): vet, unit and integration tests as
# root against the real sandbox, plus a short run of every fuzz target.
test: build lint
	CGO_ENABLED=1 $(GO) test -count=1 -timeout 20m $(PKGS)
	@FUZZTIME=$(SHORTFUZZ) bash scripts/fuzz.sh

# The conformance corpus (testdata/conformance, docs/CONFORMANCE.md) against
# our codecs and adapter: every family, the parity summary printed. The
# adapter and pty scenarios run real sandboxes (as root).
conformance: build
	@mkdir -p bin/subjects
	CGO_ENABLED=0 $(GO) build -o bin/subjects/echo-subject ./examples/echo-subject
	$(BIN) conformance --subjects bin/subjects

# Regenerate the corpus's golden results: the codec and daemon cases, the
# manifest and their summary (no root), then the adapter and pty golden
# transcripts and the whole summary (as root, real sandboxes). Review the
# diff before committing it: that review is how a changed result is accepted.
conformance-golden: setup
	CGO_ENABLED=1 $(GO) test -count=1 ./conformance -run TestCorpus -update
	CGO_ENABLED=1 $(GO) test -count=1 ./cmd/termverify-sandbox -run TestConformanceCorpus -update

# Long fuzzing: every Fuzz target for FUZZTIME each (default 10m).
fuzz: setup
	@FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

fuzz-short: setup
	@FUZZTIME=$(SHORTFUZZ) bash scripts/fuzz.sh

# Benchmarks side by side with their yardsticks; see docs/BENCHMARKS.md.
# scripts/bench-pty.sh (PTY mode's epoch latency and quiesce's reaction,
# beside the control/v1 epoch) is one of them: BENCH_ROUNDS rounds.
bench: build
	@for s in scripts/bench-*.sh; do echo "== $$s"; bash "$$s" || exit 1; done

# Mutation testing: gremlins (pinned in the script) over the packages whose
# tests need no root, then the curated mutations of scripts/mutations/ for
# sandbox, supervisor and quiesce. Slow (tens of minutes), so not part of
# `make test`; efficacy per package and the figures are in docs/TESTING.md.
mutate: setup
	@bash scripts/mutate.sh

# go mod tidy -diff (fails, changing nothing, when go.mod or go.sum is not
# tidy), vet, gofmt and staticcheck (pinned; fetched through the module proxy on
# first use and cached). Part of `make test`: ~10 s warm, ~45 s cold.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: setup
	@$(GO) mod tidy -diff >&2 || { echo "go.mod/go.sum not tidy: run go mod tidy (diff above)" >&2; exit 1; }
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt: files above need formatting" >&2; exit 1; }
	$(GO) run $(STATICCHECK) $(PKGS)

clean:
	rm -rf bin out
