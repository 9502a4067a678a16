package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

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
	}
	return nil
}
