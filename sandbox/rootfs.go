package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// The skeleton root is a fresh directory under the sandbox's state dir
// (on /run, a tmpfs, for root). libcontainer bind-mounts it onto itself in
// the container's new mount namespace, mounts everything below inside that
// namespace and remounts it read-only, so nothing is mounted on the host
// side (a SIGKILLed supervisor leaks no mount) and mountpoints are only
// ever created in our own directory, never in the caller's tree.

// hostSystemDirs are bound read-only from the host in the default layout;
// on a merged-/usr host the top-level ones are symlinks and are recreated
// as symlinks instead.
var hostSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// hostEtcBinds are host /etc entries bound read-only into the minimal /etc.
// ld.so.cache lets the dynamic loader find libraries in multiarch paths
// without a directory scan; alternatives backs /usr/bin symlinks.
var hostEtcBinds = []string{"/etc/alternatives", "/etc/ld.so.cache"}

const (
	roBind = unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV
	rwBind = unix.MS_BIND | unix.MS_NOSUID | unix.MS_NODEV
)

// buildSkeleton creates dir (empty) and fills it with what the layout needs
// that is not a mount: symlinks and the generated /etc files. It returns the
// mounts to add, in order.
func buildSkeleton(dir string, s *Spec, hosts []byte) ([]*configs.Mount, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	var mounts []*configs.Mount
	if s.RootFS != "" {
		m, err := skeletonFromRootFS(dir, s.RootFS, hosts)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, m...)
	} else {
		m, err := skeletonFromHost(dir, s, hosts)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, m...)
	}
	mounts = append(mounts, standardMounts(s)...)
	return mounts, nil
}

func skeletonFromHost(dir string, s *Spec, hosts []byte) ([]*configs.Mount, error) {
	var mounts []*configs.Mount
	for _, d := range hostSystemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue // absent on this host (e.g. /libx32)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(d)
			if err != nil {
				return nil, err
			}
			if err := os.Symlink(target, filepath.Join(dir, d)); err != nil {
				return nil, err
			}
			continue
		}
		if fi.IsDir() {
			mounts = append(mounts, bindMount(d, d, roBind))
		}
	}
	etc := filepath.Join(dir, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"passwd":        []byte(fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", s.UID, s.GID, s.workdir())),
		"group":         []byte(fmt.Sprintf("root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", s.GID)),
		"hosts":         hosts,
		"hostname":      []byte(s.Hostname + "\n"),
		"nsswitch.conf": []byte("passwd: files\ngroup: files\nhosts: files\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(etc, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	for _, e := range hostEtcBinds {
		if _, err := os.Stat(e); err == nil {
			mounts = append(mounts, bindMount(e, e, roBind))
		}
	}
	return mounts, nil
}

// skeletonFromRootFS binds each top-level entry of a complete root read-only
// (symlinks are recreated), so the caller's root gets no mountpoints and the
// subject cannot write it. /etc/hosts is overlaid with the pinned hosts file
// when the root has one.
func skeletonFromRootFS(dir, rootfs string, hosts []byte) ([]*configs.Mount, error) {
	entries, err := os.ReadDir(rootfs)
	if err != nil {
		return nil, err
	}
	var mounts []*configs.Mount
	for _, e := range entries {
		name := e.Name()
		switch name {
		case "proc", "dev", "tmp", "sys", strings.TrimPrefix(Workdir, "/"):
			continue // provided by the sandbox itself
		}
		src := filepath.Join(rootfs, name)
		fi, err := os.Lstat(src)
		if err != nil {
			return nil, err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return nil, err
			}
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				return nil, err
			}
		case fi.IsDir() || fi.Mode().IsRegular():
			mounts = append(mounts, bindMount(src, "/"+name, roBind|unix.MS_REC))
		}
	}
	if fi, err := os.Stat(filepath.Join(rootfs, "etc", "hosts")); err == nil && fi.Mode().IsRegular() {
		hf := filepath.Join(dir, ".hosts")
		if err := os.WriteFile(hf, hosts, 0o644); err != nil {
			return nil, err
		}
		mounts = append(mounts, bindMount(hf, "/etc/hosts", roBind))
	}
	return mounts, nil
}

// standardMounts are the sandbox's own filesystems, identical in both
// layouts: new /proc (PID namespace), minimal /dev, private /tmp, the
// mapped root at Workdir.
func standardMounts(s *Spec) []*configs.Mount {
	ms := []*configs.Mount{
		{Source: "proc", Destination: "/proc", Device: "proc", Flags: unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV},
		{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME, Data: "mode=755,size=64k"},
		{Source: "tmpfs", Destination: "/dev/shm", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV, Data: "mode=1777,size=65536k"},
		{Source: "tmpfs", Destination: "/tmp", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=1777"},
	}
	if s.Root != "" {
		ms = append(ms, bindMount(s.Root, Workdir, rwBind))
	}
	return ms
}

func bindMount(src, dst string, flags int) *configs.Mount {
	return &configs.Mount{Source: src, Destination: dst, Device: "bind", Flags: flags}
}
