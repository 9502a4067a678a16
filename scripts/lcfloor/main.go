// Command lcfloor is the floor of libcontainer's start path on this
// machine, for scripts/bench-sandbox.sh: the least a libcontainer
// container can do to run a command — the five namespaces, a read-only
// root with /usr bound in, /proc, the default devices, an empty cgroup, no
// capabilities — and nothing of ours (no reaper, no verification, no
// network policy, no seccomp). What termverify-sandbox exec costs beyond
// it is ours; what it costs is libcontainer's.
//
//	lcfloor STATEDIR CMD [ARGS...]
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/opencontainers/cgroups"
	_ "github.com/opencontainers/cgroups/devices"
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
	runtime.LockOSThread()
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: lcfloor STATEDIR CMD [ARGS...]")
		os.Exit(2)
	}
	code, err := run(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "lcfloor:", err)
		os.Exit(125)
	}
	os.Exit(code)
}

func run(stateDir string, args []string) (int, error) {
	dir, err := os.MkdirTemp(stateDir, "floor-")
	if err != nil {
		return 0, err
	}
	// The id (and so the cgroups' name) is the state entry's name: a run
	// cut short leaves that entry, and the bench's cleanup finds the
	// cgroups by it.
	id := filepath.Base(dir)
	defer os.RemoveAll(dir)
	rootfs := filepath.Join(dir, "root")
	for _, d := range []string{"usr", "proc", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return 0, err
		}
	}
	for link, target := range map[string]string{"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64"} {
		if err := os.Symlink(target, filepath.Join(rootfs, link)); err != nil {
			return 0, err
		}
	}
	devs := devices()
	cfg := &configs.Config{
		Rootfs:     rootfs,
		Readonlyfs: true,
		Namespaces: configs.Namespaces{
			{Type: configs.NEWNS}, {Type: configs.NEWPID}, {Type: configs.NEWNET},
			{Type: configs.NEWIPC}, {Type: configs.NEWUTS},
		},
		Capabilities:    &configs.Capabilities{},
		NoNewPrivileges: true,
		Devices:         devs,
		Mounts: []*configs.Mount{
			{Source: "proc", Destination: "/proc", Device: "proc", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
			{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME, Data: "mode=755"},
			{Source: "/usr", Destination: "/usr", Device: "bind", Flags: unix.MS_BIND | unix.MS_REC | unix.MS_RDONLY},
		},
		Cgroups: &cgroups.Cgroup{Path: id, Resources: &cgroups.Resources{Devices: rules(devs)}},
	}
	ct, err := libcontainer.Create(filepath.Join(dir, "lc"), id, cfg)
	if err != nil {
		return 0, err
	}
	defer ct.Destroy()
	p := &libcontainer.Process{Args: args, Env: []string{"PATH=/usr/bin:/bin"}, Cwd: "/", Init: true,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := ct.Run(p); err != nil {
		return 0, err
	}
	st, err := p.Wait()
	if st == nil {
		return 0, err
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

// devices is the usual minimal /dev: null, zero, full, random, urandom, tty.
func devices() []*devconfig.Device {
	var ds []*devconfig.Device
	for _, d := range []struct {
		path         string
		major, minor int64
	}{{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7}, {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}} {
		ds = append(ds, &devconfig.Device{
			Rule: devconfig.Rule{Type: devconfig.CharDevice, Major: d.major, Minor: d.minor, Permissions: "rwm", Allow: true},
			Path: d.path, FileMode: 0o666,
		})
	}
	return ds
}

func rules(ds []*devconfig.Device) []*devconfig.Rule {
	var rs []*devconfig.Rule
	for _, d := range ds {
		rs = append(rs, &d.Rule)
	}
	return rs
}
