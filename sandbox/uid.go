package sandbox

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Per-sandbox host ids.
//
// As root the subject runs as a plain host uid, or, with a user
// namespace, as a container id that maps to one. Any process of the same
// host uid passes the kernel's same-uid checks against a subject
// (ptrace_may_access, kill_ok_by_cred; a subject is dumpable again after
// execve): it can read and write /proc/<pid>/root, mem and environ of it
// and signal it. So each sandbox — isolation os and none alike, with or
// without a user namespace — gets a host uid and gid of its own, the same
// number for both: derived from the mapped root, in a part of the range
// per isolation (rootID), or drawn at random and claimed exclusively for
// the sandbox's life.
//
// The range is 0x70000000 .. 0x70ffffff (2^24 ids). It lies in what
// systemd's UID table (systemd.io/UIDS-GIDS) leaves unused between its
// container ranges (524288 .. 0x6fffffff, which nspawn and machined hand
// out) and the foreign range (0x7ffe0000); it stays below 2^31, where
// signed-uid bugs live; it is far above any id a distribution gives an
// account; and it does not overlap userNSBase .. userNSBase+65535, the host
// ids of an opt-in user namespace's mapping.
//
// The claim is a symlink <StateDir>/uids/<id> whose target is the owning
// entry's name (tvs-…), made with symlinkat, which fails if the name
// exists: among supervisors sharing a state directory no two live
// sandboxes hold one id. Destroy removes it once the sandbox's processes
// are gone (before the entry); Sweep removes every claim whose entry no
// longer exists, after it swept the dead entries (and killed what they
// ran). A shared flock on the state directory is held while claiming and
// an exclusive one while sweeping and releasing, so a sweep never removes
// a claim that was made after it looked. Supervisors with different state
// directories do not see each other's claims: there, uniqueness rests on
// the random draw (two live sandboxes among n share an id with probability
// about n²/2^24).
const (
	sandboxIDBase  = 0x70000000
	sandboxIDCount = 1 << 24
)

// uidsDir is the directory of claims in the state directory.
const uidsDir = "uids"

// randomDraws is how many random ids a claim tries before it scans.
const randomDraws = 32

// scanLimit bounds the scan that follows the random draws.
const scanLimit = 4096

// inSandboxIDRange reports whether id is one of the per-sandbox ids.
func inSandboxIDRange(id int) bool { return reservedWindow().contains(id) }

// perSandboxIDs reports whether Start gives the sandbox an id of its own:
// root, and a UID or GID left zero. Rootless, the only id there is is
// the caller's. In a root supervisor's user namespace both must be left
// zero: the subject is then DefaultUID/DefaultGID inside, and the
// per-sandbox id is what that maps to on the host (userNSMappings), so
// that no two sandboxes' subjects share a host uid with a user namespace
// either; ids the caller chose there are container ids, mapped to
// userNSBase+id.
func perSandboxIDs(s *Spec, rootless bool) bool {
	if rootless {
		return false
	}
	if s.UserNamespace && s.isolation() == IsolationOS {
		return s.UID == 0 && s.GID == 0
	}
	return s.UID == 0 || s.GID == 0
}

// idClaim is one sandbox's claim on an id.
type idClaim struct {
	stateDir string
	id       int    // the host uid and gid
	entry    string // the owning sandbox's id, the symlink's target
}

// An idWindow is the range per-sandbox ids are drawn from: the reserved
// range where this process's user namespace maps it (the initial one
// maps every id), else a range the namespace does map (idWindowFor). It
// is split in two halves that never meet: ids derived from a mapped root
// (rootID) in the lower one, claimed random ids (claimID) in the upper
// one.
type idWindow struct{ base, count int }

// reservedWindow is the reserved range, 0x70000000 .. 0x70ffffff.
func reservedWindow() idWindow { return idWindow{sandboxIDBase, sandboxIDCount} }

func (w idWindow) rootHalf() (base, count int)  { return w.base, w.count / 2 }
func (w idWindow) claimHalf() (base, count int) { return w.base + w.count/2, w.count - w.count/2 }

// rootPart is the part of the lower half that isolation iso's per-root
// ids come from: its first half for os, the rest for none (rootID).
func (w idWindow) rootPart(iso Isolation) (base, count int) {
	base, count = w.rootHalf()
	if iso == IsolationNone {
		return base + count/2, count - count/2
	}
	return base, count / 2
}

// In a user namespace that does not map the reserved range (a rootless
// Podman container maps 0..65536 onto the user's own uid and a
// subordinate range), a per-sandbox id must still be one the kernel can
// switch to: setresuid to an unmapped id fails with EINVAL. There the
// window is the largest range of ids mapped in both uid_map and gid_map,
// without the ids below minNestedID (0, and the system accounts an image
// defines) and without 65534 and 65535 (nobody, and the overflow id the
// kernel shows for unmapped ids). Such a namespace has no reserved range
// of its own, so an id may equal an account of the container's image;
// in the CI containers this is for, nothing else runs as those.
const minNestedID = 1000

// minWindow is the fewest ids a window may have: one for an os root,
// one for a none root and two for claims.
const minWindow = 4

// sandboxIDWindow is the window of this process's user namespace.
func sandboxIDWindow() (idWindow, error) {
	uidMap, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return idWindow{}, err
	}
	gidMap, err := os.ReadFile("/proc/self/gid_map")
	if err != nil {
		return idWindow{}, err
	}
	return idWindowFor(string(uidMap), string(gidMap))
}

// idRange is [lo, hi) of ids inside a user namespace.
type idRange struct{ lo, hi int }

// parseIDMap reads a /proc/<pid>/uid_map or gid_map: lines of "inside
// outside count"; only the inside ranges matter here.
func parseIDMap(text string) ([]idRange, error) {
	var rs []idRange
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("id map line %q: want three fields", line)
		}
		in, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || in < 0 || n <= 0 {
			return nil, fmt.Errorf("id map line %q: bad numbers", line)
		}
		rs = append(rs, idRange{int(in), int(min(in+n, 1<<32))})
	}
	return rs, nil
}

// covers reports whether the ranges hold every id of [lo, hi).
func covers(rs []idRange, lo, hi int) bool {
	for _, r := range rs {
		if r.lo <= lo && hi <= r.hi {
			return true
		}
	}
	return false
}

// idWindowFor is the window for a namespace with these maps: the
// reserved range when both map all of it, else the largest range mapped
// in both (see minNestedID), below 2^31. A namespace that maps fewer than minWindow
// such ids has none: ErrNoIDRange.
func idWindowFor(uidMap, gidMap string) (idWindow, error) {
	us, err := parseIDMap(uidMap)
	if err != nil {
		return idWindow{}, fmt.Errorf("uid_map: %w", err)
	}
	gs, err := parseIDMap(gidMap)
	if err != nil {
		return idWindow{}, fmt.Errorf("gid_map: %w", err)
	}
	r := reservedWindow()
	if covers(us, r.base, r.base+r.count) && covers(gs, r.base, r.base+r.count) {
		return r, nil
	}
	best := idRange{}
	consider := func(lo, hi int) {
		// Below 2^31, as the reserved range is: signed-uid bugs live above.
		lo, hi = max(lo, minNestedID), min(hi, 1<<31)
		if hi-lo > best.hi-best.lo {
			best = idRange{lo, hi}
		}
	}
	for _, u := range us {
		for _, g := range gs {
			lo, hi := max(u.lo, g.lo), min(u.hi, g.hi)
			if lo >= hi {
				continue
			}
			// Without nobody and the overflow id: the parts on either side.
			consider(lo, min(hi, 65534))
			consider(max(lo, 65536), hi)
		}
	}
	if best.hi-best.lo < minWindow {
		return idWindow{}, fmt.Errorf("%w (uid_map %q, gid_map %q)", ErrNoIDRange, strings.TrimSpace(uidMap), strings.TrimSpace(gidMap))
	}
	return idWindow{best.lo, best.hi - best.lo}, nil
}

// contains reports whether id is in the window.
func (w idWindow) contains(id int) bool { return id >= w.base && id < w.base+w.count }

// claimID claims a free id of the window's upper half for the entry (a
// sandbox id) in stateDir, which the caller has checked
// (ensureStateDir).
func claimID(stateDir, entry string, w idWindow) (*idClaim, error) {
	base, count := w.claimHalf()
	return claimIDIn(stateDir, entry, base, count, randomIndex)
}

// rootID is the id of every sandbox of isolation iso that maps the
// directory whose identity is root: a hash of its device and inode into
// the window's lower half, whose first part holds the os sandboxes' ids
// and whose second the none sandboxes' (rootPart).
//
// Sandboxes of one isolation that map the same directory share an id,
// so that a later run can change what an earlier one created there (a
// project tree mapped again and again); they share a writable directory
// anyway, which is a channel between them whatever their uids. An os
// sandbox and a none sandbox never share one, even on one directory:
// the none subject sees host pids, and with the os subject's uid it
// would pass the kernel's same-uid checks (ptrace_may_access, kill)
// against it — read its environment, its memory through /proc/PID/mem
// and its private /tmp through /proc/PID/root, and signal it — which the
// shared directory alone does not give. Sandboxes that map different
// directories get different ids unless the hash collides (about n²/2^23
// for n distinct roots of one isolation in use at once in the reserved
// range), and never an id that a random claim can hold.
func rootID(root fileID, w idWindow, iso Isolation) int {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], root.dev)
	binary.LittleEndian.PutUint64(b[8:], root.ino)
	h.Write(b[:])
	base, count := w.rootPart(iso)
	return base + int(h.Sum64()%uint64(count))
}

// claimIDIn is claimID over [base, base+count), drawing with draw (a
// test passes a small range or a fixed draw).
func claimIDIn(stateDir, entry string, base, count int, draw func(n int) (int, error)) (*idClaim, error) {
	var id int
	err := withClaims(stateDir, unix.LOCK_SH, true, func(fd int) error {
		var err error
		id, err = claimIn(fd, entry, base, count, draw)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim a per-sandbox id in %s: %w", filepath.Join(stateDir, uidsDir), err)
	}
	return &idClaim{stateDir: stateDir, id: id, entry: entry}, nil
}

func claimIn(fd int, entry string, base, count int, draw func(n int) (int, error)) (int, error) {
	try := func(i int) (bool, error) {
		err := unix.Symlinkat(entry, fd, strconv.Itoa(base+i))
		if errors.Is(err, unix.EEXIST) {
			return false, nil
		}
		return err == nil, err
	}
	for range randomDraws {
		i, err := draw(count)
		if err != nil {
			return 0, err
		}
		if ok, err := try(i); ok || err != nil {
			return base + i, err
		}
	}
	// Crowded (or a test's tiny range): look at the neighbours.
	start, err := draw(count)
	if err != nil {
		return 0, err
	}
	for k := 0; k < count && k < scanLimit; k++ {
		i := (start + k) % count
		if ok, err := try(i); ok || err != nil {
			return base + i, err
		}
	}
	return 0, fmt.Errorf("no free id among %d tried in %d..%d", randomDraws+min(count, scanLimit), base, base+count-1)
}

// release removes the claim if it is still this entry's, and the claims
// directory if that leaves it empty. Called once the sandbox's processes
// are gone.
func (c *idClaim) release() error {
	if c == nil {
		return nil
	}
	err := withClaims(c.stateDir, unix.LOCK_EX, false, func(fd int) error {
		name := strconv.Itoa(c.id)
		if target, err := readlinkat(fd, name); err != nil || target != c.entry {
			return nil // not ours (any more): never remove another's claim
		}
		if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("release id %d: %w", c.id, err)
	}
	return nil
}

// sweepClaims removes every claim in stateDir whose entry no longer
// exists (its sandbox was destroyed or swept), and the claims directory
// if that leaves it empty. Sweep calls it after it swept the entries of
// dead supervisors, so their processes are gone first.
func sweepClaims(stateDir string) error {
	// Exclusive: no claim is made while we decide, so the name we remove
	// is the claim we looked at.
	return withClaims(stateDir, unix.LOCK_EX, false, func(fd int) error {
		names, err := claimNames(fd)
		if err != nil {
			return fmt.Errorf("sweep claims: %w", err)
		}
		var errs []error
		for _, name := range names {
			target, err := readlinkat(fd, name)
			if err != nil {
				continue // not a claim (not ours to judge): left alone
			}
			if validEntryName(target) {
				if _, err := os.Lstat(filepath.Join(stateDir, target)); !errors.Is(err, os.ErrNotExist) {
					continue // its entry is there: live, or not swept yet
				}
			}
			if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("sweep claim %s: %w", name, err))
			}
		}
		return errors.Join(errs...)
	})
}

// validEntryName: a sandbox id as newID makes it, never a path.
func validEntryName(s string) bool {
	return strings.HasPrefix(s, "tvs-") && !strings.ContainsAny(s, "/\x00") && s != "tvs-"
}

// withClaims runs fn on <stateDir>/uids with a flock of the state
// directory held (shared to claim, exclusive to release and sweep: the
// state directory, unlike the claims directory, is never removed, so the
// lock always means the same thing). create makes the claims directory,
// 0700; without it a missing one means there is nothing to do. Under the
// exclusive lock the claims directory is removed when fn leaves it empty:
// a state directory with no sandbox holds nothing of ours. The state
// directory itself was checked (ensureStateDir); the claims directory is
// checked again, because the claims decide who runs as which uid.
func withClaims(stateDir string, how int, create bool, fn func(fd int) error) error {
	sfd, err := unix.Open(stateDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: stateDir, Err: err}
	}
	defer unix.Close(sfd)
	if err := flock(sfd, how); err != nil {
		return &os.PathError{Op: "flock", Path: stateDir, Err: err}
	}
	dir := filepath.Join(stateDir, uidsDir)
	if create {
		if err := unix.Mkdirat(sfd, uidsDir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
	}
	fd, err := unix.Openat(sfd, uidsDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && !create {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return &UnsafeDirError{What: stateDirWhat, Path: dir, UID: int(st.Uid), Mode: os.FileMode(st.Mode & 0o777),
			Reason: fmt.Sprintf("must be owned by uid %d and writable by no one else", os.Geteuid())}
	}
	err = fn(fd)
	if how == unix.LOCK_EX {
		// Fails (ENOTEMPTY) while any claim is left: fine.
		_ = unix.Unlinkat(sfd, uidsDir, unix.AT_REMOVEDIR)
	}
	return err
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", unix.ENAMETOOLONG // longer than any entry name
	}
	return string(buf[:n]), nil
}

// claimNames lists the directory fd (which it does not close).
func claimNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), uidsDir)
	defer f.Close()
	return f.Readdirnames(-1)
}

// randomIndex draws uniformly from [0, n).
func randomIndex(n int) (int, error) {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, err
	}
	return int(v.Int64()), nil
}
