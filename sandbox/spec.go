package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/termverify/termverify-sandbox/netpolicy"
)

// Isolation selects the backend a Spec runs under.
type Isolation string

// The isolation levels. IsolationOS builds namespaces and a fresh root with
// libcontainer; IsolationNone runs the subject directly on the host (every
// constraint at most delivered) but keeps the same Wait/Kill/Destroy surface.
const (
	IsolationOS   Isolation = "os"
	IsolationNone Isolation = "none"
)

// Workdir is the in-sandbox path at which Spec.Root is bind-mounted
// read-write; it is also the subject's working directory and HOME default.
const Workdir = "/sandbox"

// DefaultUID and DefaultGID are the ids the subject runs as inside an
// opt-in user namespace of a root supervisor (Spec.UserNamespace), when
// Spec.UID and GID are zero: container ids, mapped to the sandbox's own
// host id (uid.go), as without a user namespace. No sandbox runs as the
// host's nobody, and no two sandboxes' subjects share a host uid.
const (
	DefaultUID = 65534
	DefaultGID = 65534
)

// Limits are the resource limits of a sandbox. Zero means "no limit".
type Limits struct {
	MemoryBytes int64   // memory.limit_in_bytes (v1) / memory.max (v2); swap is capped to the same value
	Pids        int64   // pids.max: every task (thread or process) in the sandbox counts, the init included
	CPUs        float64 // CPU quota in cores (e.g. 0.5); 0 leaves CPU unlimited
	// FileBytes is RLIMIT_FSIZE: no single file can be written beyond it
	// (the writer gets SIGXFSZ, or EFBIG when it ignores that). It caps
	// each file, not the total: the mapped root's total is bounded only by
	// the filesystem the caller maps.
	FileBytes int64
	// TmpBytes is the size of the sandbox's private /tmp (a tmpfs, also
	// charged to the memory cgroup where there is one).
	TmpBytes int64
	// ScratchBytes is the size of an os sandbox's scratch root
	// (Spec.ScratchRoot): a tmpfs at Workdir, charged to the memory cgroup
	// like /tmp. Writing beyond it fails with ENOSPC.
	ScratchBytes int64
	// Enforce makes every requested cgroup limit a condition of the start:
	// a limit that cannot be applied and verified (rootless on cgroup v1,
	// a read-only cgroupfs) fails Start with ErrLimitNotEnforced before
	// the subject runs. Without it such a limit is reported as not
	// applied (Applied.Mechanisms) and the sandbox runs without it.
	Enforce bool
}

// DefaultLimits are the limits exec and run use when no flag overrides
// them: 1 GiB of memory, 512 tasks, files of at most 1 GiB, a 256 MiB /tmp
// and a 512 MiB scratch root. The two tmpfs are charged to the memory
// cgroup: together with the subject's own memory they stay within it.
func DefaultLimits() Limits {
	return Limits{MemoryBytes: 1 << 30, Pids: 512, FileBytes: 1 << 30, TmpBytes: 256 << 20, ScratchBytes: 512 << 20}
}

// cpuPeriod is the CFS period, in µs, a CPU limit's quota is given in.
const cpuPeriod = 100000

// cpuQuota is the CFS quota in µs per cpuPeriod for l.CPUs, rounded up
// to a whole µs but for float64 noise below a millionth of one (1.1 CPUs
// is 110000.00000000001 µs: 110000). Both backends write it and the
// verification reads it back, so all three must round alike.
func (l Limits) cpuQuota() int64 { return int64(l.CPUs*cpuPeriod + 0.999999) }

// Spec describes one sandbox. It is plain data: build it, then Validate (or
// Start, which validates first) before any system call is made.
type Spec struct {
	// Isolation picks the backend; the zero value means IsolationOS.
	Isolation Isolation

	// Args is the subject's argv. Args[0] is resolved inside the sandbox as a
	// shell started in Workdir would: a name with a slash is a path (relative
	// to Workdir), any other name is looked up in the PATH of Env.
	Args []string
	// Env is the subject's complete environment ("K=V"). Nothing is added
	// except PATH when Env has none (DefaultPath).
	Env []string

	// Root is the host directory mapped read-write at Workdir. Optional when
	// RootFS is set (the working directory is then "/").
	Root string
	// ScratchRoot, instead of Root, gives the subject a fresh empty root
	// at Workdir, owned by the subject's uid. Under isolation os it is a
	// tmpfs of Limits.ScratchBytes mounted in the sandbox's own mount
	// namespace: nothing of it is on a host filesystem, and it is gone
	// with the namespace, when the sandbox ends or its supervisor dies.
	// Isolation none has no mount namespace: there it is a directory in
	// the temporary directory, recorded in the sandbox's state entry,
	// removed by Destroy or, after a crash, by the next Sweep, and bounded
	// only per file (Limits.FileBytes).
	ScratchRoot bool
	// Binds are host directories the subject sees at their own paths (or
	// at Dest), read-write or read-only, beside Root: the layout an agent
	// expects of a sandboxed terminal, where a path named on the host
	// means the same file inside. Each Source is opened once without
	// following symlinks, and what the sandbox sees at Dest is verified to
	// be that directory, with the write access asked for, before the
	// subject runs. Isolation os only.
	Binds []Bind
	// BindOwner, if set, maps the subject's ids to these host ids on every
	// bind (an idmapped mount): what the subject creates there belongs to
	// BindOwner on the host, and what BindOwner owns there the subject
	// may use as its own. Other owners' files appear as the overflow id.
	// Isolation os with a root supervisor only.
	BindOwner *Owner
	// Masks are paths inside Binds that the subject sees as an empty
	// read-only directory (a tmpfs of the sandbox's own mounted over
	// them): what the host keeps there, such as the term daemon's own
	// socket, the subject can neither see nor move. Isolation os only.
	Masks []string
	// Dir is the subject's working directory inside the sandbox, when not
	// the default (Workdir with Root or ScratchRoot, "/" otherwise): it
	// must be a Bind's Dest or lie below one. Isolation os only.
	Dir string
	// RootFS, if set, is a complete root filesystem used read-only instead of
	// the host's system directories. It is never mounted as the container
	// root itself: its top-level entries are bound read-only into a fresh
	// per-sandbox root, so mountpoints are never created in the caller's tree.
	RootFS string

	// Network is the network policy; a zero Mode means netpolicy.Deny.
	Network netpolicy.Policy
	// Limits are the cgroup limits.
	Limits Limits

	// Stdin, Stdout and Stderr are the subject's stdio; the caller owns them
	// (and closes its own ends). Nil means /dev/null. Use pipe ends or
	// regular files: they are handed to the subject as file descriptors.
	Stdin, Stdout, Stderr *os.File
	// Terminal, if set, gives the subject a new pseudoterminal of the
	// sandbox's own devpts instance, of this size, as its stdin, stdout,
	// stderr and controlling terminal; Sandbox.Console returns the master.
	// Stdin, Stdout and Stderr must then be nil. Under isolation none it
	// is a host pty made for the subject alone (console_direct.go).
	Terminal *TerminalSize

	// StateDir holds per-sandbox state (the skeleton root, libcontainer
	// state, the owner record). Default: DefaultStateDir().
	StateDir string
	// Hostname is the UTS hostname inside; default "sandbox".
	Hostname string

	// UserNamespace forces a user namespace even when the supervisor is root.
	// It is always used when the supervisor is not root.
	UserNamespace bool
	// UID and GID the subject runs as. A non-zero value is the caller's
	// choice and is used as given (it must not lie in the per-sandbox
	// range, 0x70000000..0x70ffffff). Zero means: as root without a user
	// namespace (isolation os and none), a fresh host id for this sandbox
	// alone, drawn from that range and claimed for the sandbox's life
	// (Evidence.UID/GID say which); in a root supervisor's user namespace,
	// DefaultUID/DefaultGID inside it; rootless, 0 inside the user
	// namespace, mapped to the caller's own uid, where no other id is
	// mapped.
	UID, GID int

	// testHook, set only by this package's tests, runs at the named points
	// of Start between a check and the use of what was checked, so that a
	// test can attack exactly that window deterministically. The
	// direct-cgroup points run on the goroutine that makes the direct
	// runner's cgroup, concurrently with Start's own.
	testHook func(point, path string)
}

// Points at which Spec.testHook runs.
const (
	hookRootOpened         = "root-opened"          // the mapped root is open, not yet mounted
	hookRootFSEntryOpened  = "rootfs-entry-opened"  // a --rootfs entry is open, not yet mounted
	hookBindOpened         = "bind-opened"          // a bind's source is open, not yet mounted
	hookBeforeContainerRun = "before-container-run" // everything is opened; libcontainer mounts next
	hookDirectCgroup       = "direct-cgroup"        // isolation none, root: its cgroup is about to be made (path: the id)
	hookDirectCgroupEnd    = "direct-cgroup-end"    // the cgroup is made, or failed (path: the id)
	hookDirectCgroupOpen   = "direct-cgroup-open"   // its directories are open for the reaper, which is not yet started (path: the id)
	hookDirectParked       = "direct-parked"        // the reaper is parked, not yet verified (path: its pid)
)

func (s *Spec) hook(point, path string) {
	if s.testHook != nil {
		s.testHook(point, path)
	}
}

// DefaultPath is the PATH given to the subject when Env has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// DefaultStateDir is /run/termverify-sandbox for root. For another user it
// is $XDG_RUNTIME_DIR/termverify-sandbox when XDG_RUNTIME_DIR is set to an
// absolute path (the user's own 0700 directory), else
// termverify-sandbox-<euid> in the temporary directory: a predictable name
// there, so Start and Sweep check it (and any StateDir) every time before
// use — owned by the euid, writable by no one else, no symlink on its
// path (statedir.go) — and refuse one another user made.
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/termverify-sandbox"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "termverify-sandbox")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("termverify-sandbox-%d", os.Geteuid()))
}

// SpecError reports an invalid Spec field; nothing was started.
type SpecError struct {
	Field  string // the Spec field, e.g. "Root" or "Network.Allowed"
	Reason string
}

func (e *SpecError) Error() string { return fmt.Sprintf("invalid spec: %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrInvalidSpec) true for every *SpecError.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

// Validate checks the spec without touching the system beyond opening
// (O_PATH, no symlink at any component) the directories it names.
func (s *Spec) Validate() error {
	switch s.Isolation {
	case "", IsolationOS, IsolationNone:
	default:
		return &SpecError{"Isolation", fmt.Sprintf("unknown isolation %q", s.Isolation)}
	}
	if len(s.Args) == 0 || s.Args[0] == "" {
		return &SpecError{"Args", "empty command"}
	}
	for _, e := range s.Env {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return &SpecError{"Env", fmt.Sprintf("%q is not K=V", e)}
		}
	}
	if s.ScratchRoot && s.Root != "" {
		return &SpecError{"ScratchRoot", "set together with Root"}
	}
	if s.Root == "" && s.RootFS == "" && !s.ScratchRoot && len(s.Binds) == 0 {
		return &SpecError{"Root", "neither Root, ScratchRoot, RootFS nor Binds set"}
	}
	if err := s.validateBinds(); err != nil {
		return err
	}
	for _, d := range []struct{ field, path string }{{"Root", s.Root}, {"RootFS", s.RootFS}} {
		if d.path == "" {
			continue
		}
		if !filepath.IsAbs(d.path) {
			return &SpecError{d.field, fmt.Sprintf("%q is not absolute", d.path)}
		}
		// Start opens the directory again and uses only that descriptor;
		// this early open gives the same refusal before anything runs.
		h, err := openHostPath(d.path, true)
		if err != nil {
			// Both: errors.Is finds ErrInvalidSpec and the cause
			// (ErrSymlinkPath, fs.ErrNotExist).
			return fmt.Errorf("%w: %w", &SpecError{d.field, "cannot be mapped"}, err)
		}
		h.Close()
	}
	if s.isolation() == IsolationNone && s.RootFS != "" {
		return &SpecError{"RootFS", "a complete root needs isolation os"}
	}
	if s.isolation() == IsolationNone && s.Root == "" && !s.ScratchRoot {
		return &SpecError{"Root", "isolation none needs Root as the working directory"}
	}
	if err := s.validateTerminal(); err != nil {
		return err
	}
	if err := normPolicy(s.Network).Validate(); err != nil {
		return &SpecError{"Network", err.Error()}
	}
	if s.isolation() == IsolationNone && s.Network.Mode == netpolicy.AllowList {
		// An allow-list cannot be honestly delivered without a namespace.
		return &SpecError{"Network", "an allow-list needs isolation os"}
	}
	if s.Limits.MemoryBytes < 0 || s.Limits.Pids < 0 || s.Limits.CPUs < 0 || s.Limits.FileBytes < 0 || s.Limits.TmpBytes < 0 || s.Limits.ScratchBytes < 0 {
		return &SpecError{"Limits", "negative limit"}
	}
	if s.Limits.MemoryBytes != 0 && s.Limits.MemoryBytes < 4<<20 {
		return &SpecError{"Limits.MemoryBytes", "below 4 MiB the init itself cannot start"}
	}
	if s.Limits.Pids != 0 && s.Limits.Pids < minPids {
		return &SpecError{"Limits.Pids", fmt.Sprintf("below %d the init's own threads do not fit", minPids)}
	}
	if s.UID < 0 || s.GID < 0 {
		return &SpecError{"UID", "negative id"}
	}
	if inSandboxIDRange(s.UID) || inSandboxIDRange(s.GID) {
		// Those are handed out one per sandbox; a caller's choice there
		// could be a live sandbox's.
		return &SpecError{"UID", fmt.Sprintf("ids %d..%d are reserved for per-sandbox ids (leave UID and GID zero for one)", sandboxIDBase, sandboxIDBase+sandboxIDCount-1)}
	}
	if s.StateDir != "" && !filepath.IsAbs(s.StateDir) {
		return &SpecError{"StateDir", "not absolute"}
	}
	if strings.ContainsAny(s.Hostname, "/\x00 ") || len(s.Hostname) > 64 {
		return &SpecError{"Hostname", "not a host name"}
	}
	return nil
}

// stdio returns Stdin, Stdout and Stderr as the interfaces libcontainer's
// Process and os/exec's Cmd take: a nil *os.File in an interface is not
// nil, so an unset stream stays a nil interface (which both read as
// /dev/null).
func (s *Spec) stdio() (in io.Reader, out, errOut io.Writer) {
	if s.Stdin != nil {
		in = s.Stdin
	}
	if s.Stdout != nil {
		out = s.Stdout
	}
	if s.Stderr != nil {
		errOut = s.Stderr
	}
	return in, out, errOut
}

func (s *Spec) isolation() Isolation {
	if s.Isolation == "" {
		return IsolationOS
	}
	return s.Isolation
}

// withDefaults returns a copy with every default filled in.
func (s Spec) withDefaults(rootless bool) Spec {
	if s.StateDir == "" {
		s.StateDir = DefaultStateDir()
	}
	s.Network = normPolicy(s.Network)
	if s.Hostname == "" {
		s.Hostname = "sandbox"
	}
	if rootless {
		s.UserNamespace = true
	}
	// As root, zero ids are filled in by Start with a per-sandbox id
	// (uid.go) once the sandbox's state entry exists; in a user namespace
	// that id is the host side of DefaultUID/DefaultGID.
	hasPath := false
	for _, e := range s.Env {
		if strings.HasPrefix(e, "PATH=") {
			hasPath = true
		}
	}
	if !hasPath {
		s.Env = append(append([]string(nil), s.Env...), "PATH="+DefaultPath)
	}
	return s
}

// workdir is the subject's working directory inside the sandbox.
func (s *Spec) workdir() string {
	if s.Dir != "" {
		return s.Dir
	}
	if s.Root == "" && !s.ScratchRoot {
		return "/"
	}
	return Workdir
}

// scratchTmpfs reports whether the scratch root is a tmpfs of the
// sandbox's own mount namespace (standardMounts) rather than a host
// directory.
func (s *Spec) scratchTmpfs() bool { return s.ScratchRoot && s.isolation() == IsolationOS }

// normPolicy maps the zero policy to an explicit deny.
func normPolicy(p netpolicy.Policy) netpolicy.Policy {
	if p.Mode == "" {
		p.Mode = netpolicy.Deny
	}
	return p
}

// minPids leaves room for the Go runtime threads of libcontainer's setup
// process (which becomes the reaper by execve, keeping its pid) next to a
// minimal subject.
const minPids = 16
