# Shared by the bench scripts that start libcontainer containers of their
# own (bench-sandbox.sh, bench-wholerun.sh); sourced, never run.

# static: the go build flags make build links our binary with (cgo for
# libcontainer's nsenter, no dynamic loader), so that a yardstick built
# with them pays the same process start.
static=(-tags 'netgo osusergo' -ldflags '-linkmode external -extldflags -static')

# build_lcfloor DEST builds scripts/lcfloor to DEST, every time (the build
# cache makes that cheap): a binary kept from an older scripts/lcfloor or
# go.mod would measure another libcontainer.
build_lcfloor() {
	CGO_ENABLED=1 go build -trimpath "${static[@]}" -o "$1" ./scripts/lcfloor
}

# remove_cgroups ID kills whatever is left in every cgroup named ID, in
# any hierarchy, and removes them: what a container cut short (Ctrl-C,
# set -e) leaves when its state entry never saw a clean Destroy. Safe
# under set -e: a process that is already gone stops nothing.
remove_cgroups() {
	local cg
	find /sys/fs/cgroup -depth -type d -name "$1" 2>/dev/null | while read -r cg; do
		xargs -r kill -KILL <"$cg/cgroup.procs" 2>/dev/null || :
		for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
	done
}
