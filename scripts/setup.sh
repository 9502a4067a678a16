#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian machine, and does
# nothing when it is already there. Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v gcc >/dev/null || need_apt+=(gcc libc6-dev)
# The binary is linked statically (see the Makefile): it needs libc.a.
if command -v gcc >/dev/null && [ "$(gcc -print-file-name=libc.a)" = libc.a ]; then
	need_apt+=(libc6-dev)
fi
command -v ip >/dev/null || need_apt+=(iproute2)
# The neighbours the tests and benchmarks run against: Podman with
# Debian's runc for the container matrix (runc named explicitly, so that
# apt does not pick crun, which refuses a cgroup v1 hybrid layout), uidmap
# for rootless Podman, tmux as the reference terminal, bubblewrap as the
# speed yardstick.
command -v podman >/dev/null || need_apt+=(podman)
[ -x /usr/sbin/runc ] || need_apt+=(runc)
command -v newuidmap >/dev/null || need_apt+=(uidmap)
command -v tmux >/dev/null || need_apt+=(tmux)
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
# The programs PTY mode's acceptance tests run in the sandbox (which sees
# the host's /usr) against tmux, and jq for the example and bench scripts.
command -v vim >/dev/null || need_apt+=(vim)
command -v less >/dev/null || need_apt+=(less)
command -v top >/dev/null || need_apt+=(procps)
[ -x /usr/bin/python3 ] || need_apt+=(python3)
command -v jq >/dev/null || need_apt+=(jq)
# The readers our exports are checked with: asciinema's own player reads
# the asciicast export (asciicast's tests), headless Chromium loads the HTML
# report (report's tests, make screenshots).
command -v asciinema >/dev/null || need_apt+=(asciinema)
command -v chromium >/dev/null || need_apt+=(chromium)
if [ "${#need_apt[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The rootless-Podman rows of the container matrix run Podman as this
# unprivileged account, which needs a subordinate id range. Only created
# when the machine is ours to set up (root); the rows skip without it.
rootless=tvs-rootless
if [ "$(id -u)" = 0 ]; then
	if ! id "$rootless" >/dev/null 2>&1; then
		useradd --create-home --shell /usr/sbin/nologin "$rootless"
	fi
	grep -q "^$rootless:" /etc/subuid 2>/dev/null || usermod --add-subuids 400000-465535 "$rootless"
	grep -q "^$rootless:" /etc/subgid 2>/dev/null || usermod --add-subgids 400000-465535 "$rootless"
fi

go mod download

# term mcp's test with a client that is not Go's: the official TypeScript
# MCP SDK, pinned in termmcp/testdata/node/package-lock.json, installed in
# that directory (gitignored). Where node is missing the test skips, saying so.
if command -v npm >/dev/null && [ ! -f termmcp/testdata/node/node_modules/@modelcontextprotocol/sdk/package.json ]; then
	# A registry that cannot be reached costs that one test (it skips,
	# naming the missing package), not the whole suite.
	(cd termmcp/testdata/node && npm ci --no-audit --no-fund --loglevel=error) ||
		echo "setup: npm ci in termmcp/testdata/node failed: TestTermMCPNode will skip" >&2
fi
