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
if [ "${#need_apt[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
go mod download
