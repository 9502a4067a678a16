package sandbox

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
	"github.com/termverify/termverify-sandbox/netpolicy"

	// Device rules and nsenter's pre-Go-runtime namespace setup are
	// registered by import; libcontainer cannot start a container without.
	_ "github.com/opencontainers/cgroups/devices"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// Exit is the subject's real end as reported by our PID-1 init.
type Exit struct {
	// Code is the exit status when the subject exited, -1 when a signal
	// ended it.
	Code int `json:"code"`
	// Signal is the signal's name without "SIG" ("KILL", "ABRT"), or ""
	// when the subject exited.
	Signal string `json:"signal,omitempty"`
	// OOMKilled is true when the sandbox's memory cgroup recorded an OOM
	// kill and the subject died of SIGKILL.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// Killed is true when Kill (or Destroy) ended the sandbox before the
	// subject finished on its own.
	Killed bool `json:"killed,omitempty"`
	// InitLost is true when the init died without reporting the subject's
	// end (killed, or out of memory itself): Signal then names the init's
	// own fatal signal, the best evidence left.
	InitLost bool `json:"init_lost,omitempty"`
}

// ShellStatus is the exit status a shell would give: Code, or 128+signal.
func (e Exit) ShellStatus() int {
	if e.Signal == "" {
		return e.Code
	}
	return 128 + int(unix.SignalNum("SIG"+e.Signal))
}

// Sandbox is a started sandbox. Its methods are safe for concurrent use.
type Sandbox struct {
	spec    Spec
	id      string
	dir     string // our per-sandbox state dir
	started time.Time

	// run is the started init (backend.go); nil until the init runs.
	run backend

	liveW   *os.File // liveness: closing it ends the sandbox
	report  *bufio.Reader
	console *os.File // Spec.Terminal's pty master (console.go)
	// fwd is the allow-list's forwarder; Evidence reads its counts.
	fwd *netpolicy.Forwarder

	// root and rootfs are the opened mapped root and complete root, and
	// rootfsEntries the opened top-level entries of rootfs: what is
	// mounted and verified, by descriptor (hostpath.go). Nil when unused.
	root, rootfs  *hostDir
	rootfsEntries []*hostDir
	// binds are Spec.Binds, opened (binds.go).
	binds []openBind

	// ids is the sandbox's claim on its own host uid and gid (uid.go);
	// nil when Spec.UID and GID were the caller's, or there is none to
	// make (rootless, a user namespace).
	ids *idClaim
	// perRootID is the id derived from the mapped root (rootID), shared
	// by every sandbox of the same isolation on that directory; 0 when
	// not used.
	perRootID int
	// hostUID and hostGID are the subject's ids as the host sees them:
	// Spec.UID and GID without a user namespace, their mapping with one
	// (hostIDs).
	hostUID, hostGID int

	// cg says which cgroup directories a root sandbox could not make
	// (privilege.go); the zero value when all could.
	cg cgroupAccess
	// procs is one of the sandbox's cgroup directories, opened (O_PATH)
	// once the init was verified to be in it; nil where there is none
	// (Processes).
	procs *os.File

	applied  Applied
	mu       sync.Mutex // guards evidence, which Wait completes
	evidence Evidence

	killed    atomic.Bool
	destroyed atomic.Bool
	undo      cleanup // what Start acquired; Destroy runs it
	waitOnce  sync.Once
	waitDone  chan struct{}
	exit      Exit
	waitErr   error

	destroyOnce sync.Once
	destroyErr  error
}

// Start validates spec, builds the sandbox, checks every mechanism it
// claims, and starts the subject. On success the caller must call
// Destroy. On error Start has released everything it acquired, as
// exec.Cmd.Start does, and returns a nil *Sandbox; FailedID(err) names
// the sandbox it had made, if it got that far.
func Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	// By capabilities, not by euid (privilege.go).
	rootless := rootlessMode()
	s := spec.withDefaults(rootless)
	sb := &Sandbox{spec: s, started: time.Now(), waitDone: make(chan struct{})}
	sb.evidence.Milestones = []Milestone{}
	var c cleanup
	if err := sb.start(ctx, &c, rootless); err != nil {
		// The same teardown as Destroy's: a running init is killed and
		// reaped before anything it uses is undone.
		if rerr := sb.release(&c); rerr != nil {
			err = errors.Join(err, fmt.Errorf("release sandbox %s: %w", sb.id, rerr))
		}
		return nil, withID(err, sb.id)
	}
	sb.undo = c.release()
	return sb, nil
}

func (sb *Sandbox) mark(name string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.evidence.Milestones = append(sb.evidence.Milestones, Milestone{Name: name, Micros: time.Since(sb.started).Microseconds()})
}

func (sb *Sandbox) start(ctx context.Context, c *cleanup, rootless bool) error {
	s := &sb.spec
	id, err := newID()
	if err != nil {
		return stepErr("id", "", err)
	}
	sb.id = id
	sb.dir = filepath.Join(s.StateDir, id)
	if err := ensureStateDir(s.StateDir, true); err != nil { // statedir.go: ours alone, or refused
		return stepErr("state dir", s.StateDir, err)
	}
	if err := os.Mkdir(sb.dir, 0o711); err != nil {
		return stepErr("state dir", sb.dir, err)
	}
	c.add(func() error { return removeEntry(sb.dir) })
	if err := writeOwner(sb.dir); err != nil {
		return stepErr("owner record", sb.dir, err)
	}
	// A mapped root (not a scratch root) is opened first: its identity
	// gives the sandbox's id (uid.go, rootID).
	if s.Root != "" {
		if err := sb.openRoot(c); err != nil {
			return err
		}
	}
	// After the entry (a claim names it, and Sweep keeps a claim while
	// its entry exists), before anything is made for the subject's uid.
	// Isolation none has no user namespace: its subject's ids are host
	// ids, claimed whenever the supervisor is root (directIDs refuses a
	// root that cannot switch to them).
	idsRootless := rootless
	if s.isolation() == IsolationNone {
		idsRootless = os.Geteuid() != 0
	}
	if err := sb.claimIDs(c, idsRootless); err != nil {
		return err
	}
	sb.hostIDs(rootless)
	// An os sandbox's scratch root is a tmpfs mounted in its own mount
	// namespace (standardMounts): nothing of it is on a host filesystem,
	// and it dies with the namespace, after a crash too. Isolation none
	// has no mount namespace: its scratch root is a host directory.
	if s.ScratchRoot && !s.scratchTmpfs() {
		scratch, root, err := makeScratchRoot(sb.dir, id, s)
		if err != nil {
			return stepErr("scratch root", scratch, err)
		}
		c.add(func() error { return os.RemoveAll(scratch) })
		s.Root = root
	}
	// The mapped root and the complete root are hostile paths: opened
	// once here, and only these descriptors are mounted and verified.
	if s.Root != "" && sb.root == nil { // the scratch root
		if err := sb.openRoot(c); err != nil {
			return err
		}
	}
	if err := sb.openBinds(c); err != nil {
		return err
	}
	if s.RootFS != "" && s.isolation() == IsolationOS {
		if sb.rootfs, err = openHostPath(s.RootFS, true); err != nil {
			return stepErr("open rootfs", s.RootFS, err)
		}
		c.add(sb.rootfs.Close)
	}
	sb.evidence.ID, sb.evidence.StateDir, sb.evidence.HostRoot, sb.evidence.RootFS = id, sb.dir, s.Root, s.RootFS
	sb.mark("state")
	if s.isolation() == IsolationNone {
		return sb.startDirect(c)
	}
	return sb.startContainer(ctx, c, rootless)
}

// openRoot opens the mapped root once (hostpath.go); only that
// descriptor is used from then on.
func (sb *Sandbox) openRoot(c *cleanup) error {
	s := &sb.spec
	h, err := openHostPath(s.Root, true)
	if err != nil {
		return stepErr("open root", s.Root, err)
	}
	sb.root = h
	c.add(h.Close)
	s.hook(hookRootOpened, s.Root)
	return nil
}

// claimIDs gives the sandbox a host uid and gid of its own when Spec.UID
// or GID is zero, the supervisor is root and no user namespace is used
// (uid.go). The claim is released by Destroy after the sandbox's
// processes are gone: it is registered before anything that runs as it.
func (sb *Sandbox) claimIDs(c *cleanup, rootless bool) error {
	s := &sb.spec
	if !perSandboxIDs(s, rootless) {
		return nil
	}
	w, err := sandboxIDWindow()
	if err != nil {
		return stepErr("uid", "/proc/self/uid_map", err)
	}
	var id int
	if sb.root != nil {
		// Every sandbox of this isolation on this directory shares its
		// id: nothing to claim.
		id = rootID(sb.root.id, w, s.isolation())
		sb.perRootID = id
	} else {
		claim, err := claimID(s.StateDir, sb.id, w)
		if err != nil {
			return stepErr("uid", s.StateDir, err)
		}
		c.add(claim.release)
		sb.ids = claim
		id = claim.id
	}
	if s.UserNamespace && s.isolation() == IsolationOS {
		// The per-sandbox id is the host side of the subject's mapping
		// (containerConfig); inside, it is DefaultUID/DefaultGID.
		s.UID, s.GID = DefaultUID, DefaultGID
		sb.hostUID, sb.hostGID = id, id
		return nil
	}
	if s.UID == 0 {
		s.UID = id
	}
	if s.GID == 0 {
		s.GID = id
	}
	return nil
}

// hostIDs fills in the subject's host ids where claimIDs did not: the
// caller's own rootless; with a root supervisor's user namespace and
// ids the caller chose, userNSBase+id (the whole container range is then
// mapped, as the caller's ids may be any of it); otherwise Spec.UID and
// GID themselves.
func (sb *Sandbox) hostIDs(rootless bool) {
	s := &sb.spec
	switch {
	case sb.hostUID != 0:
	case os.Geteuid() != 0 || (rootless && s.isolation() == IsolationOS):
		sb.hostUID, sb.hostGID = os.Geteuid(), os.Getegid()
	case s.UserNamespace && s.isolation() == IsolationOS:
		sb.hostUID, sb.hostGID = userNSBase+s.UID, userNSBase+s.GID
	default:
		sb.hostUID, sb.hostGID = s.UID, s.GID
	}
}

// uidReason is the unprivileged-uid mechanism's reason for a host uid
// that is not the caller's: a fixed word for a per-sandbox id, so that
// nothing derived from Applied varies with the random draw.
func (sb *Sandbox) uidReason(uid int) string {
	if sb.ids != nil && uid == sb.ids.id {
		return "uid-per-sandbox"
	}
	if sb.perRootID != 0 && uid == sb.perRootID {
		return "uid-per-root"
	}
	return "uid-" + strconv.Itoa(uid)
}

// awaitSubject reads the reaper's report up to "started" (or its failure).
// onFilter, if set, runs when the reaper says its seccomp filter is in
// place; its error fails the start.
func (sb *Sandbox) awaitSubject(onFilter func(ev reaperEvent) error) error {
	for {
		ev, err := readEvent(sb.report)
		if err != nil {
			return stepErr("start subject", sb.spec.Args[0], fmt.Errorf("init ended before starting the subject: %w", err))
		}
		switch ev.word {
		case reaper.ReportSeccomp:
			if onFilter != nil {
				if err := onFilter(ev); err != nil {
					return err
				}
			}
		case reaper.ReportStarted:
			sb.evidence.SubjectPID, _ = strconv.Atoi(firstArg(ev))
			sb.mark("subject-started")
			return nil
		case reaper.ReportExecErr:
			code, _ := strconv.Atoi(firstArg(ev))
			msg := ""
			if len(ev.line) > len(ev.word)+len(firstArg(ev))+2 {
				msg = ev.line[len(ev.word)+len(firstArg(ev))+2:]
			}
			return &ExecError{Path: sb.spec.Args[0], Code: code, Msg: msg}
		case reaper.ReportError:
			return stepErr("init", "", errors.New(ev.line))
		default:
			return stepErr("init", "", fmt.Errorf("unexpected report %q", ev.line))
		}
	}
}

func firstArg(ev reaperEvent) string {
	if len(ev.args) == 0 {
		return ""
	}
	return ev.args[0]
}

// ID is the sandbox's id: the name of its state directory and cgroup.
func (sb *Sandbox) ID() string { return sb.id }

// Applied returns what was applied and verified at Start.
func (sb *Sandbox) Applied() Applied { return sb.applied }

// Evidence returns the volatile host facts for an evidence file. After
// Wait returns it also holds the peak memory and OOM count.
func (sb *Sandbox) Evidence() Evidence {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	e := sb.evidence
	e.Milestones = append([]Milestone(nil), e.Milestones...)
	if sb.fwd != nil {
		e.Forwarders = sb.fwd.Stats()
	}
	return e
}

// Signal sends sig to the subject through the init, which forwards the
// catchable signals listed in the package doc. SIGKILL is Kill. After
// Destroy it returns ErrDestroyed.
func (sb *Sandbox) Signal(sig unix.Signal) error {
	if sig == unix.SIGKILL {
		return sb.Kill()
	}
	if sb.destroyed.Load() {
		return ErrDestroyed
	}
	return sb.run.signal(sig)
}

// Kill ends the whole sandbox at once: the init dies by SIGKILL and with
// it, by the kernel's hand, every process of its PID namespace, setsid
// daemons included. Wait then reports Killed. Kill is idempotent.
func (sb *Sandbox) Kill() error {
	if sb.destroyed.Load() {
		return nil
	}
	sb.killed.Store(true)
	if err := sb.run.kill(); err != nil {
		return fmt.Errorf("kill sandbox %s: %w", sb.id, err)
	}
	return nil
}

// Wait blocks until the subject has ended and the sandbox's init is gone,
// and returns the subject's real exit. It may be called more than once
// (and concurrently); every call returns the same result.
func (sb *Sandbox) Wait() (Exit, error) {
	sb.waitOnce.Do(func() {
		defer close(sb.waitDone)
		sb.exit, sb.waitErr = sb.wait()
	})
	<-sb.waitDone
	return sb.exit, sb.waitErr
}

func (sb *Sandbox) wait() (Exit, error) {
	var ex Exit
	reported := false
	for !reported {
		ev, err := readEvent(sb.report)
		if err != nil {
			break // EOF: the init is gone without a word
		}
		switch ev.word {
		case reaper.ReportExited:
			ex.Code, _ = strconv.Atoi(firstArg(ev))
			reported = true
		case reaper.ReportSignaled:
			n, _ := strconv.Atoi(firstArg(ev))
			ex.Code, ex.Signal = -1, signalName(unix.Signal(n))
			reported = true
		}
	}
	if d, ok := sb.run.(*directRunner); ok && reported {
		d.subjectEnded()
	}
	st, err := sb.run.wait()
	sb.mark("exited")
	if !reported {
		ex.InitLost = true
		ex.Code = -1
		if st != nil {
			// os.ProcessState carries a syscall.WaitStatus; x/sys/unix's
			// type of the same name never matches it.
			if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				ex.Signal = signalName(unix.Signal(ws.Signal()))
			} else if ok {
				ex.Code = ws.ExitStatus()
			}
		}
		if ex.Signal == "" && ex.Code == -1 {
			ex.Signal = "KILL"
		}
	}
	ex.Killed = sb.killed.Load()
	// Cgroup counters are read before Destroy removes the cgroup.
	sb.collectStats()
	if ex.Signal == "KILL" && sb.evidence.OOMKills > 0 {
		ex.OOMKilled = true
	}
	if err != nil {
		var ee interface{ ExitCode() int }
		if errors.As(err, &ee) {
			err = nil // a non-zero init status is not a Wait failure
		}
	}
	if err != nil {
		return ex, fmt.Errorf("wait sandbox %s: %w", sb.id, err)
	}
	return ex, nil
}

func signalName(s unix.Signal) string {
	n := unix.SignalName(s)
	if n == "" {
		return strconv.Itoa(int(s))
	}
	return n[3:]
}

// Destroy kills whatever still runs and removes every trace of the
// sandbox: processes, cgroups, libcontainer state, the skeleton root and
// the state directory, and closes the network forwarders. It is
// idempotent, and a no-op on nil (what a failed Start returns).
func (sb *Sandbox) Destroy() error {
	if sb == nil {
		return nil
	}
	sb.destroyOnce.Do(func() {
		if err := sb.release(&sb.undo); err != nil {
			sb.destroyErr = fmt.Errorf("destroy sandbox %s: %w", sb.id, err)
		}
		// From now on the init's pid (and a direct runner's process
		// group) may name someone else's: Signal and Kill touch nothing.
		sb.destroyed.Store(true)
	})
	return sb.destroyErr
}

// release is the teardown of Destroy and of a failed Start: the init, if
// it runs, is killed and reaped first (a direct runner's cgroup can only
// be removed once empty, a container only once its init is gone), then
// c's undos run, newest first.
func (sb *Sandbox) release(c *cleanup) error {
	var errs []error
	if sb.liveW != nil {
		// Closing liveness alone ends the init; Kill makes it immediate.
		_ = sb.liveW.Close()
	}
	if sb.run != nil {
		_ = sb.Kill()
		if _, err := sb.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.procs != nil {
		_ = sb.procs.Close()
	}
	if err := c.run(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func newID() (string, error) {
	var b [8]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		return "", err
	}
	return "tvs-" + hex.EncodeToString(b[:]), nil
}

func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// reaperPipes opens the two pipes every reaper gets: liveness (the
// supervisor keeps the write end; EOF tells the reaper its supervisor died)
// and report (the reaper writes the subject's exit). It keeps our ends on
// sb and registers their cleanup; the caller hands liveR and reportW to the
// reaper and closes them once it has started.
func (sb *Sandbox) reaperPipes(c *cleanup) (liveR, reportW *os.File, err error) {
	liveR, liveW, err := os.Pipe()
	if err != nil {
		return nil, nil, stepErr("liveness pipe", "", err)
	}
	sb.liveW = liveW
	c.add(liveW.Close)
	reportR, reportW, err := os.Pipe()
	if err != nil {
		liveR.Close()
		return nil, nil, stepErr("report pipe", "", err)
	}
	sb.report = bufio.NewReader(reportR)
	c.add(reportR.Close)
	return liveR, reportW, nil
}
