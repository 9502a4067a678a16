package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// The skeleton root is a fresh directory of the sandbox's own: as root
// without a user namespace, in the private tmpfs of its pins
// (pinner.skeletonIn), which unpin detaches from the host once the init
// has mounted; otherwise <entry>/root on the state directory's
// filesystem. libcontainer bind-mounts it onto itself in the container's
// new mount namespace, mounts everything below inside that namespace and
// remounts it read-only, so nothing is mounted on the host side once
// Start has returned (a supervisor SIGKILLed before that leaves only the
// pins mount, which the next Sweep detaches) and mountpoints are only
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
// mounts to add, in order, and the host entries it opened for them (the
// caller keeps them open until the sandbox is verified). root and rootfs
// are the opened mapped root and complete root, nil when not mapped;
// binds the opened Spec.Binds, mounted idmapped by owner when it is not
// nil (bindIDMapping).
// pin gives the mount source for an opened entry (pinner.source).
func buildSkeleton(dir string, s *Spec, hosts []byte, root, rootfs *hostDir, binds []openBind, owner *configs.MountIDMapping, pin func(*hostDir) (string, error)) ([]*configs.Mount, []*hostDir, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	var mounts []*configs.Mount
	var held []*hostDir
	if rootfs != nil {
		m, h, err := skeletonFromRootFS(dir, rootfs, hosts, pin, s.hook)
		if err != nil {
			return nil, nil, err
		}
		mounts, held = append(mounts, m...), h
	} else {
		m, err := skeletonFromHost(dir, s, hosts)
		if err != nil {
			return nil, nil, err
		}
		mounts = append(mounts, m...)
	}
	rootSource := ""
	if root != nil {
		src, err := pin(root)
		if err != nil {
			return nil, held, err
		}
		rootSource = src
	}
	mounts = append(mounts, standardMounts(rootSource, s)...)
	// After /tmp's tmpfs: a bind below /tmp gets its mountpoint there.
	for _, b := range binds {
		src, err := pin(b.dir)
		if err != nil {
			return nil, held, err
		}
		flags := roBind
		if b.writable {
			flags = rwBind
		}
		m := bindMount(src, b.dest, flags)
		m.IDMapping = owner
		mounts = append(mounts, m)
	}
	// After the binds they lie in, in the sandbox's mount namespace only.
	for _, m := range s.Masks {
		mounts = append(mounts, &configs.Mount{Source: "tvs-mask", Destination: m, Device: "tmpfs",
			Flags: unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, Data: "mode=0555,size=4k"})
	}
	return mounts, held, nil
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
// when the root has one. The root and each entry are hostile paths: each is
// opened once without following symlinks, bound by its descriptor
// (hostDir.source), and returned in held, which the caller keeps open until
// the sandbox is verified and closes with it.
func skeletonFromRootFS(dir string, rootfs *hostDir, hosts []byte, pin func(*hostDir) (string, error), hook func(point, path string)) (mounts []*configs.Mount, held []*hostDir, err error) {
	defer func() {
		if err != nil {
			for _, h := range held {
				h.Close()
			}
			held = nil
		}
	}()
	names, err := readDirNames(rootfs)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range names {
		switch name {
		case "proc", "dev", "tmp", "sys", strings.TrimPrefix(Workdir, "/"):
			continue // provided by the sandbox itself
		}
		e, err := openHostEntry(rootfs, name)
		if err != nil {
			return nil, held, err
		}
		switch e.mode() {
		case unix.S_IFLNK:
			target, err := readlinkFd(e)
			e.Close()
			if err != nil {
				return nil, held, err
			}
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				return nil, held, err
			}
		case unix.S_IFDIR, unix.S_IFREG:
			held = append(held, e)
			hook(hookRootFSEntryOpened, e.path)
			src, err := pin(e)
			if err != nil {
				return nil, held, err
			}
			mounts = append(mounts, bindMount(src, "/"+name, roBind|unix.MS_REC))
		default:
			e.Close() // devices, sockets, fifos: not part of a root we map
		}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(int(rootfs.file.Fd()), "etc/hosts", &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		// Beside the skeleton, never in it: the skeleton holds symlinks
		// named by the rootfs, so a name of ours there could be one of
		// theirs pointing anywhere on the host.
		hf := filepath.Join(filepath.Dir(dir), "hosts")
		if err := writeNewFile(hf, hosts); err != nil {
			return nil, held, err
		}
		mounts = append(mounts, bindMount(hf, "/etc/hosts", roBind))
	}
	return mounts, held, nil
}

// readDirNames lists the opened directory through its descriptor.
func readDirNames(d *hostDir) ([]string, error) {
	fd, err := unix.Openat(int(d.file.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.Readdirnames(-1)
}

// readlinkFd reads the target of an O_PATH|O_NOFOLLOW descriptor of a
// symlink.
func readlinkFd(h *hostDir) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(int(h.file.Fd()), "", buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: h.path, Err: err}
	}
	return string(buf[:n]), nil
}

// standardMounts are the sandbox's own filesystems, identical in both
// layouts: new /proc (PID namespace), minimal /dev, private /tmp, the
// mapped root or the scratch root at Workdir.
// rootSource is the mount source of the mapped root (hostDir.source), ""
// when none is mapped.
func standardMounts(rootSource string, s *Spec) []*configs.Mount {
	l := s.Limits
	tmp := "mode=1777"
	if l.TmpBytes > 0 {
		tmp += ",size=" + strconv.FormatInt(l.TmpBytes, 10)
	}
	ms := []*configs.Mount{
		{Source: "proc", Destination: "/proc", Device: "proc", Flags: unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV},
		{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME, Data: "mode=755,size=64k"},
		{Source: "tmpfs", Destination: "/dev/shm", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV, Data: "mode=1777,size=65536k"},
		{Source: "tmpfs", Destination: "/tmp", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: tmp},
	}
	if rootSource != "" {
		ms = append(ms, bindMount(rootSource, Workdir, rwBind))
	}
	if s.scratchTmpfs() {
		// The scratch root: mounted by libcontainer's init inside the new
		// mount namespace, so no host filesystem holds a byte of it and
		// the kernel frees it with the namespace, whoever dies first.
		// Owned by the subject's ids as the init sees them (inside a user
		// namespace, the container ids), private to it.
		data := fmt.Sprintf("mode=0700,uid=%d,gid=%d", s.UID, s.GID)
		if l.ScratchBytes > 0 {
			data += ",size=" + strconv.FormatInt(l.ScratchBytes, 10)
		}
		ms = append(ms, &configs.Mount{Source: "tvs-scratch", Destination: Workdir, Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: data})
	}
	return ms
}

func bindMount(src, dst string, flags int) *configs.Mount {
	return &configs.Mount{Source: src, Destination: dst, Device: "bind", Flags: flags}
}

// writeNewFile creates path, which must not exist and is not followed if
// it is a symlink, and writes data to it.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
