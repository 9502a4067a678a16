package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// Bind is a host directory mapped into the sandbox (Spec.Binds).
type Bind struct {
	// Source is the host directory, absolute and without symlinks in it.
	Source string
	// Dest is where the subject sees it; "" means Source (the same path
	// inside and out).
	Dest string
	// Writable maps it read-write; otherwise it is read-only.
	Writable bool
}

// Owner is a host user and group (Spec.BindOwner).
type Owner struct{ UID, GID int }

// dest is where b is mounted.
func (b Bind) dest() string {
	if b.Dest == "" {
		return filepath.Clean(b.Source)
	}
	return b.Dest
}

// reservedDests are the sandbox's own paths: a bind may not be mounted
// at or below one (or at "/"). /tmp is not among them: a bind below it
// lands in the sandbox's private /tmp, whose mountpoints are its own.
var reservedDests = []string{"/proc", "/dev", "/sys", "/etc", Workdir}

// validateBinds checks Binds and Dir without touching the host beyond
// opening each source once, as Start will.
func (s *Spec) validateBinds() error {
	if (len(s.Binds) > 0 || s.Dir != "") && s.isolation() != IsolationOS {
		return &SpecError{"Binds", "binds and Dir need isolation os (a mount namespace of the sandbox's own)"}
	}
	if o := s.BindOwner; o != nil && (len(s.Binds) == 0 || o.UID < 0 || o.GID < 0) {
		return &SpecError{"BindOwner", "needs Binds and ids that are not negative"}
	}
	if len(s.Binds) > 0 && s.RootFS != "" {
		// A bind's mountpoint would be resolved inside the caller's
		// root, through its symlinks.
		return &SpecError{"Binds", "binds need the default layout, not RootFS"}
	}
	var dests []string
	for i, b := range s.Binds {
		field := fmt.Sprintf("Binds[%d]", i)
		if !filepath.IsAbs(b.Source) {
			return &SpecError{field, fmt.Sprintf("source %q is not absolute", b.Source)}
		}
		dst := b.dest()
		if !filepath.IsAbs(dst) || filepath.Clean(dst) != dst || dst == "/" {
			return &SpecError{field, fmt.Sprintf("destination %q is not a clean absolute path below /", dst)}
		}
		if d := reservedUnder(dst, s); d != "" {
			return &SpecError{field, fmt.Sprintf("destination %s is the sandbox's own %s", dst, d)}
		}
		for _, other := range dests {
			if within(dst, other) || within(other, dst) {
				return &SpecError{field, fmt.Sprintf("destination %s overlaps the bind at %s", dst, other)}
			}
		}
		dests = append(dests, dst)
		h, err := openHostPath(b.Source, true)
		if err != nil {
			return fmt.Errorf("%w: %w", &SpecError{field, "cannot be mapped"}, err)
		}
		h.Close()
	}
	for i, m := range s.Masks {
		field := fmt.Sprintf("Masks[%d]", i)
		if !filepath.IsAbs(m) || filepath.Clean(m) != m {
			return &SpecError{field, fmt.Sprintf("%q is not a clean absolute path", m)}
		}
		if !slices.ContainsFunc(dests, func(d string) bool { return m != d && within(m, d) }) {
			return &SpecError{field, fmt.Sprintf("%s is not below a bind", m)}
		}
	}
	if s.Dir != "" {
		if !filepath.IsAbs(s.Dir) || filepath.Clean(s.Dir) != s.Dir {
			return &SpecError{"Dir", fmt.Sprintf("%q is not a clean absolute path", s.Dir)}
		}
		if !slices.ContainsFunc(dests, func(d string) bool { return within(s.Dir, d) }) {
			return &SpecError{"Dir", fmt.Sprintf("%s is not in a bind", s.Dir)}
		}
	}
	return nil
}

// reservedUnder is the reserved path dst is at or below, "" if none: the
// sandbox's own filesystems and the host system directories it binds.
func reservedUnder(dst string, s *Spec) string {
	for _, r := range append(slices.Clip(reservedDests), hostSystemDirs...) {
		if r == Workdir && s.Root == "" && !s.ScratchRoot {
			continue
		}
		if within(dst, r) {
			return r
		}
	}
	return ""
}

// within: p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// openBind is a Bind opened for mounting and verification.
type openBind struct {
	dir      *hostDir
	dest     string
	writable bool
}

// openBinds opens every bind source once (hostpath.go); the caller closes
// them with the sandbox.
func (sb *Sandbox) openBinds(c *cleanup) error {
	for _, b := range sb.spec.Binds {
		h, err := openHostPath(b.Source, true)
		if err != nil {
			return stepErr("open bind", b.Source, err)
		}
		c.add(h.Close)
		sb.binds = append(sb.binds, openBind{dir: h, dest: b.dest(), writable: b.Writable})
		sb.spec.hook(hookBindOpened, b.Source)
	}
	return nil
}

// verifyBinds checks what the sandbox sees at each bind's destination
// (procRoot: the init's root as the host reaches it): the directory that
// was opened, read-only unless it was asked for writable, and writable
// when it was.
func (sb *Sandbox) verifyBinds(procRoot string) error {
	for _, b := range sb.binds {
		got, err := statID(procRoot + b.dest)
		if err != nil || got != b.dir.id {
			return stepErr("verify", "bind", fmt.Errorf("%w: %s is not the directory %s that was opened (%v)", ErrNotVerified, b.dest, b.dir.path, err))
		}
		var st unix.Statfs_t
		if err := unix.Statfs(procRoot+b.dest, &st); err != nil {
			return stepErr("verify", "bind", fmt.Errorf("%w: statfs %s: %v", ErrNotVerified, b.dest, err))
		}
		if ro := st.Flags&unix.ST_RDONLY != 0; ro == b.writable {
			return stepErr("verify", "bind", fmt.Errorf("%w: %s is mounted read-only %v, want writable %v", ErrNotVerified, b.dest, ro, b.writable))
		}
		if err := sb.verifyBindOwner(procRoot, b); err != nil {
			return stepErr("verify", "bind owner", fmt.Errorf("%w: %w", ErrNotVerified, err))
		}
	}
	for _, m := range sb.spec.Masks {
		var st unix.Statfs_t
		if err := unix.Statfs(procRoot+m, &st); err != nil || st.Type != unix.TMPFS_MAGIC || st.Flags&unix.ST_RDONLY == 0 {
			return stepErr("verify", "mask", fmt.Errorf("%w: %s is not covered by a read-only tmpfs (type %#x, %v)", ErrNotVerified, m, st.Type, err))
		}
	}
	return nil
}

// verifyBindOwner checks Spec.BindOwner's idmapping on b from the owner
// its directory is seen with through the sandbox: the subject's uid and
// gid where the directory is BindOwner's on the filesystem, the overflow
// ids where it is another's; without BindOwner, the filesystem's own.
func (sb *Sandbox) verifyBindOwner(procRoot string, b openBind) error {
	var src, seen unix.Stat_t
	if err := unix.Fstat(int(b.dir.file.Fd()), &src); err != nil {
		return err
	}
	if err := unix.Stat(procRoot+b.dest, &seen); err != nil {
		return err
	}
	wantUID, wantGID := int(src.Uid), int(src.Gid)
	if o := sb.spec.BindOwner; o != nil {
		wantUID, wantGID = overflowID("uid"), overflowID("gid")
		if int(src.Uid) == o.UID {
			wantUID = sb.hostUID
		}
		if int(src.Gid) == o.GID {
			wantGID = sb.hostGID
		}
	}
	if int(seen.Uid) != wantUID || int(seen.Gid) != wantGID {
		return fmt.Errorf("%s is owned by %d:%d through the sandbox, want %d:%d (on the host %d:%d)", b.dest, seen.Uid, seen.Gid, wantUID, wantGID, src.Uid, src.Gid)
	}
	return nil
}

// overflowID is the kernel's overflow uid or gid (kind "uid" or "gid"),
// what an unmapped id is seen as; 65534 when unreadable.
func overflowID(kind string) int {
	b, err := os.ReadFile("/proc/sys/kernel/overflow" + kind)
	if err != nil {
		return 65534
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 65534
	}
	return n
}

// bindIDMapping is the idmapping of Spec.BindOwner for the binds: the
// subject's host uid and gid (the kernel's view of them, inside a user
// namespace too) are BindOwner's on the filesystem, and nothing else is
// mapped. nil without BindOwner.
func (sb *Sandbox) bindIDMapping(rootless bool) (*configs.MountIDMapping, error) {
	o := sb.spec.BindOwner
	if o == nil {
		return nil, nil
	}
	if rootless {
		return nil, stepErr("binds", "owner", fmt.Errorf("%w: files owned by the caller need an idmapped mount, which a rootless supervisor cannot make", ErrInvalidSpec))
	}
	// In runc's terms the mapping is that of a user namespace applied to
	// the mount: an id ContainerID on the filesystem is seen, and written,
	// as HostID through it.
	return &configs.MountIDMapping{
		UIDMappings: []configs.IDMap{{ContainerID: int64(o.UID), HostID: int64(sb.hostUID), Size: 1}},
		GIDMappings: []configs.IDMap{{ContainerID: int64(o.GID), HostID: int64(sb.hostGID), Size: 1}},
	}, nil
}
