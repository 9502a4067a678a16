package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
	"github.com/termverify/termverify-sandbox/netpolicy"
)

// ProbeResult says what this host's sandboxes can confine now and why,
// from mechanisms that were actually tried. It names no tier: what that
// is worth per constraint is the negotiation's (supervisor.Probe).
type ProbeResult struct {
	Rootless bool `json:"rootless"`
	// RootlessReason says why the rootless path is taken (privilege.go:
	// "not root", "root without CAP_NET_ADMIN"); "" when it is not.
	RootlessReason string `json:"rootless_reason,omitempty"`
	// Filesystem and Network are what a sandbox here confines, denying
	// the network; AllowList is the network with an allow-list's
	// forwarders. Each is the trial sandbox's Applied when it started,
	// else not confined with the first failure as its reason.
	Filesystem Confinement      `json:"filesystem"`
	Network    Confinement      `json:"network"`
	AllowList  Confinement      `json:"network_allow_list"`
	Mechanisms []MechanismProbe `json:"mechanisms"`
	Applied    *Applied         `json:"applied,omitempty"` // from the trial sandbox, when it started
	// FilesystemFix, NetworkFix and AllowListFix say what would confine
	// each when it is not (the fix table's words, probefix below); ""
	// when it is.
	FilesystemFix string `json:"filesystem_fix,omitempty"`
	NetworkFix    string `json:"network_fix,omitempty"`
	AllowListFix  string `json:"network_allow_list_fix,omitempty"`
}

// MechanismProbe is one mechanism tried on its own.
type MechanismProbe struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`        // "ok" or the errno name and context
	Fix    string `json:"fix,omitempty"` // when not OK: what makes it available (probeFixes)
}

// Probe tries each mechanism: namespaces by cloning a child into them,
// then a complete trial sandbox (pivot_root, mounts, seccomp, cgroups,
// an allow-list forwarder on 127.0.0.1) whose Applied says what is
// confined. stateDir "" means DefaultStateDir(). Nothing it starts
// outlives it.
func Probe(ctx context.Context, stateDir string) ProbeResult {
	// The same choice Start makes (privilege.go): by capabilities.
	why := rootlessReason()
	rootless := why != ""
	res := ProbeResult{Rootless: rootless, RootlessReason: why}
	facts := hostFixFacts(rootless)
	nsOK := map[string]MechanismProbe{}
	for _, m := range []struct {
		name  string
		flags uintptr
	}{
		{"user-namespace", unix.CLONE_NEWUSER},
		{"mount-namespace", unix.CLONE_NEWNS},
		{"pid-namespace", unix.CLONE_NEWPID},
		{"network-namespace", unix.CLONE_NEWNET},
		{"ipc-namespace", unix.CLONE_NEWIPC},
		{"uts-namespace", unix.CLONE_NEWUTS},
	} {
		p := MechanismProbe{Name: m.name, OK: true, Detail: "ok"}
		if err := tryClone(m.flags, rootless, nil); err != nil {
			p.OK, p.Detail = false, errnoWord(err)
			p.Fix = fixFor(m.name, fixWord(err), facts)
		}
		nsOK[m.name] = p
		res.Mechanisms = append(res.Mechanisms, p)
	}

	together := MechanismProbe{Name: "namespaces", OK: true, Detail: "ok"}
	if err := NamespaceTrial(); err != nil {
		together.OK, together.Detail = false, detail(err)
		together.Fix = fixFor(together.Name, fixWord(err), facts)
	}
	res.Mechanisms = append(res.Mechanisms, together)

	trial, trialErr := trialSandbox(ctx, stateDir, true)
	allowErr := trialErr
	res.AllowList = Confinement{Reason: detail(allowErr)}
	if allowErr == nil {
		res.AllowList = trial.Network
	} else {
		if rootless && errors.Is(allowErr, netpolicy.ErrNeedPrivilege) {
			res.AllowList.Reason += " (setns into the sandbox needs CAP_SYS_ADMIN in our own user namespace)"
		}
		// The allow-list's own refusal, else the trial's failure.
		mech := "trial-sandbox"
		if errors.Is(allowErr, netpolicy.ErrNeedPrivilege) {
			mech = "allow-list"
		}
		res.AllowListFix = fixFor(mech, fixWord(allowErr), facts)
	}
	if errors.Is(trialErr, netpolicy.ErrNeedPrivilege) {
		// The allow-list alone failed: is the rest available?
		trial, trialErr = trialSandbox(ctx, stateDir, false)
	}
	trialProbe := MechanismProbe{Name: "trial-sandbox", OK: trialErr == nil, Detail: detail(trialErr)}
	if trialErr != nil {
		trialProbe.Fix = fixFor(trialProbe.Name, fixWord(trialErr), facts)
	}
	res.Mechanisms = append(res.Mechanisms, trialProbe)
	var fsFailed, nwFailed MechanismProbe
	fsFailed, res.Filesystem = firstFailure(nsOK, trialProbe, "mount-namespace", "pid-namespace")
	nwFailed, res.Network = firstFailure(nsOK, trialProbe, "network-namespace")
	res.FilesystemFix, res.NetworkFix = fsFailed.Fix, nwFailed.Fix
	if trial != nil {
		res.Applied = trial
		for _, m := range trial.Mechanisms {
			switch m.Name {
			case "pivot-root", "seccomp", "no-new-privs", "capabilities-dropped", "unprivileged-uid",
				"cgroup-memory", "cgroup-pids":
				p := MechanismProbe{Name: m.Name, OK: m.Applied, Detail: m.Reason}
				if !p.OK {
					p.Fix = fixFor(p.Name, p.Detail, facts)
				}
				res.Mechanisms = append(res.Mechanisms, p)
			}
		}
		if trial.Filesystem.Confined {
			res.Filesystem, res.FilesystemFix = trial.Filesystem, ""
		}
		if trial.Network.Confined {
			res.NetworkFix = ""
			// Denied, not allow-listed: the trial may have had forwarders.
			res.Network = Confinement{Confined: true, Checks: slices.DeleteFunc(slices.Clone(trial.Network.Checks),
				func(c string) bool { return c == "allow-list-forwarders" })}
		}
	}
	return res
}

// detail is a probe's word for err: "ok" for none; for a start that
// failed, its word and the step it failed at ("ENOENT at start init").
func detail(err error) string {
	if err == nil {
		return "ok"
	}
	w := errnoWord(err)
	switch fw := fixWord(err); fw {
	case "proc-masked", "hostname-refused":
		w = fw
	}
	if se, ok := errors.AsType[*StepError](err); ok && w != err.Error() {
		w += " at " + se.Step
	}
	return w
}

// firstFailure is the first failed namespace among names, else the
// trial sandbox when it failed, and the constraint's Confinement saying
// so (not confined).
func firstFailure(ns map[string]MechanismProbe, trial MechanismProbe, names ...string) (MechanismProbe, Confinement) {
	for _, n := range names {
		if p := ns[n]; !p.OK {
			return p, Confinement{Reason: n + " " + p.Detail}
		}
	}
	if !trial.OK {
		return trial, Confinement{Reason: trial.Detail}
	}
	return MechanismProbe{}, Confinement{Reason: "not verified"}
}

// sandboxNamespaces are the namespaces every os-tier sandbox is made of
// (a user namespace is added when rootless).
const sandboxNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// NamespaceTrial clones one short-lived child into every namespace a
// sandbox needs at once (plus a user namespace when rootless) and has it
// mount a fresh procfs in its new mount namespace, as every sandbox does.
// It reports whether the kernel and our privileges allow that. It is the
// only evidence on which `run --isolation auto` may fall back to
// isolation none: libcontainer's start errors are untyped, and a start
// that failed after anything was set up (a mount, a verification) is
// never a reason to run with less. probe reports the same trial as
// "namespaces".
//
// The proc mount is part of the trial because it is the one step of a
// nested sandbox that the kernel refuses for good on a host whose /proc
// has masked paths (procmask.go): a container runtime's default. Without
// it the trial passed there, and every `--isolation auto` run in a
// default Podman or Docker container failed instead of running with
// isolation none and saying so.
//
// The error wraps ErrNoNamespace only for a lasting refusal: the clone,
// or the child's proc mount or sethostname, failing with EPERM, EACCES,
// EINVAL, ENOSYS, or ENOSPC/EUSERS from the namespace limits (and
// ErrProcMasked too when the proc mount was refused under masks). Every
// other failure — a shortage (EAGAIN, ENOMEM: a full pids cgroup, memory
// pressure), a child killed by a signal, EMFILE, an unexpected exit — is
// tried again a few times and then returned without ErrNoNamespace, so
// that the caller fails instead of running without namespaces because of
// something a co-tenant could arrange (an allow-list, not a deny-list:
// what is not known to be the kernel's lasting no is not one).
func NamespaceTrial() error {
	var err error
	rootless := rootlessMode()
	for try := 0; try < 3; try++ {
		if try > 0 {
			time.Sleep(time.Duration(try) * 20 * time.Millisecond)
		}
		if err = procTrial(rootless); err == nil {
			return nil
		}
		if lastingRefusal(err) {
			return fmt.Errorf("%w: %w", ErrNoNamespace, err)
		}
	}
	return fmt.Errorf("namespace trial: failed %d times, not with a refusal that would justify running without namespaces: %w", 3, err)
}

// lastingRefusal reports whether a trial's error is the kernel's (or a
// security policy's) lasting no: one of the refusal errnos, from the
// clone or from the child's report, never a signal or a resource error.
func lastingRefusal(err error) bool {
	for _, e := range []unix.Errno{unix.EPERM, unix.EACCES, unix.EINVAL, unix.ENOSYS, unix.ENOSPC, unix.EUSERS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// procTrial is one try of NamespaceTrial: the clone, then the proc mount
// in the child. A refused mount under masks is a ProcMaskedError.
func procTrial(rootless bool) error {
	var stderr strings.Builder
	err := tryClone(sandboxNamespaces, rootless, &stderr, reaper.ModeProcTrial)
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("clone into mount, pid, network, ipc and uts namespaces: %w", err)
	}
	step, num, _ := strings.Cut(strings.TrimSpace(stderr.String()), " ")
	n, perr := strconv.Atoi(num)
	if ee.ExitCode() != 3 || perr != nil {
		return fmt.Errorf("namespace trial child: %v (%q)", err, stderr.String())
	}
	errno := unix.Errno(n)
	switch step {
	case "proc":
		mountErr := fmt.Errorf("mounting a fresh procfs in the new namespaces: %w", errno)
		if errno == unix.EPERM {
			return withProcMasks(mountErr)
		}
		return mountErr
	case "hostname":
		// A container's default seccomp profile allows sethostname only
		// to CAP_SYS_ADMIN in the initial user namespace.
		return &hostnameRefusedError{errno}
	}
	return fmt.Errorf("namespace trial child: step %q: %w", step, errno)
}

// hostnameRefusedError is the namespace trial's sethostname refused:
// in a container, its seccomp profile (Podman's and Docker's default
// allow sethostname only with CAP_SYS_ADMIN in the initial user
// namespace), which a sandbox on the rootless path never has.
type hostnameRefusedError struct{ errno unix.Errno }

func (e *hostnameRefusedError) Error() string {
	return "setting the hostname in the new UTS namespace: " + e.errno.Error() + " (a seccomp profile that allows sethostname only with CAP_SYS_ADMIN)"
}
func (e *hostnameRefusedError) Unwrap() error { return e.errno }

// tryClone starts our own binary as a reaper (argv after Arg: reaperArgs,
// by default noop mode) inside new namespaces of the given kinds and waits
// for it; its stderr goes to stderr when not nil. userNS adds a user
// namespace mapping our own ids, as a sandbox without CAP_SYS_ADMIN needs.
func tryClone(flags uintptr, userNS bool, stderr io.Writer, reaperArgs ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if len(reaperArgs) == 0 {
		reaperArgs = []string{reaper.ModeNoop}
	}
	cmd := exec.Command(exe, append([]string{reaper.Arg}, reaperArgs...)...)
	cmd.Stderr = stderr
	attr := &syscall.SysProcAttr{Cloneflags: flags}
	if userNS || flags&unix.CLONE_NEWUSER != 0 {
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	cmd.SysProcAttr = attr
	return cmd.Run()
}

// trialSandbox starts and destroys a complete sandbox whose subject is our
// reaper in noop mode, with small limits and (withAllow) an allow-list
// forwarder for 127.0.0.1:9 that is never dialed.
func trialSandbox(ctx context.Context, stateDir string, withAllow bool) (*Applied, error) {
	spec := Spec{
		Args:        []string{"/proc/self/exe", reaper.Arg, reaper.ModeNoop},
		ScratchRoot: true, // goes with the trial's state, even after a crash
		StateDir:    stateDir,
		Limits:      Limits{MemoryBytes: 64 << 20, Pids: 64},
	}
	if withAllow {
		spec.Network = netpolicy.Policy{Mode: netpolicy.AllowList, Allowed: []netpolicy.HostPort{{Host: "127.0.0.1", Port: 9}}}
	}
	sb, err := Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer sb.Destroy()
	ex, err := sb.Wait()
	if err != nil {
		return nil, err
	}
	if ex.ShellStatus() != 0 {
		return nil, fmt.Errorf("trial subject exited %d", ex.ShellStatus())
	}
	a := sb.Applied()
	return &a, sb.Destroy()
}

// errnoWord renders an error as its errno name when it has one (EPERM),
// else its text.
func errnoWord(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// The fix table: what probe says would make an unavailable mechanism
// available, keyed by the mechanism (or its family: every namespace,
// every cgroup limit), the error (an errno name, or a reason word of
// Applied or of fixWord) and the context the host is in. It is the one
// place those words are made; probe_test.go checks each row and that
// every word the probe can produce finds a row of its own.

// containersDoc is where the per-environment recipes are.
const containersDoc = "see docs/CONTAINERS.md"

// Contexts a row applies in.
const (
	ctxAny      = "*"
	ctxRoot     = "root"     // root with every rootfulCaps capability: the privileged path
	ctxRootless = "rootless" // not root, or root without one of them: the sandbox needs a user namespace
	// ctxUserNSOff: a sysctl disables user namespaces, and this one needs
	// one (the user-namespace probe, or any namespace when rootless).
	ctxUserNSOff = "userns-off"
)

type probeFix struct {
	mech, err, ctx string
	// fix may name {sysctl} (the disabling setting, "user.max_user_namespaces=0")
	// and {enable} (the setting that enables them).
	fix string
}

const (
	fixNamespaceRoot = "run the container with --privileged, or with --cap-add SYS_ADMIN,NET_ADMIN,SYS_PTRACE and a seccomp profile that allows unshare and mount; " + containersDoc
	fixLimitsOff     = "limits not enforced"
	fixBestEffort    = ", or pass --limits best-effort to run without them (the default; --limits enforce refuses)"
	fixProcMasked    = "the host's /proc has masked paths, so a fresh procfs cannot be mounted in a nested sandbox (`run --isolation auto` runs without namespaces here): " + procMaskFix
	fixFallback      = "no known fix for this error: `run --evidence` records the failing step in full; " + containersDoc
)

// probeFixes is matched in order: the first row whose mechanism, error
// and context match wins ("*" matches any).
var probeFixes = []probeFix{
	{"namespace", "EPERM", ctxUserNSOff, "user namespaces are disabled by the sysctl {sysctl}: enable them on the host (sysctl -w {enable}), or run as root with CAP_SYS_ADMIN, which needs none"},
	{"namespace", "ENOSPC", ctxUserNSOff, "user namespaces are disabled by the sysctl {sysctl}: enable them on the host (sysctl -w {enable}), or run as root with CAP_SYS_ADMIN, which needs none"},
	{"namespace", "EACCES", ctxUserNSOff, "user namespaces are restricted by the sysctl {sysctl}: set {enable} on the host, or run as root with CAP_SYS_ADMIN, which needs none"},
	{"namespace", "EPERM", ctxRoot, fixNamespaceRoot},
	{"namespace", "EPERM", ctxRootless, "without CAP_SYS_ADMIN the sandbox needs a user namespace, and it was refused: allow unshare and clone with CLONE_NEWUSER in the container's seccomp profile (root in a container also needs CAP_SETFCAP to map uid 0), or " + fixNamespaceRoot},
	{"namespace", "ENOSPC", ctxAny, "a namespace limit is reached (user.max_<kind>_namespaces, or user namespaces nested 32 deep): raise that sysctl, or end other sandboxes"},
	{"namespace", "EUSERS", ctxAny, "user namespaces are nested 32 deep, the kernel's limit: run fewer levels of containers"},
	{"namespace", "EINVAL", ctxAny, "the kernel lacks this namespace kind (CONFIG_<kind>_NS) or refuses the combination: use a kernel built with it; until then `run --isolation auto` falls back to isolation none"},
	{"namespace", "ENOSYS", ctxAny, "a seccomp profile answers clone and unshare with ENOSYS: use one that allows them with namespace flags; " + containersDoc},
	{"namespace", "EACCES", ctxAny, "a security module refuses the namespace (AppArmor, SELinux): in a container add --security-opt apparmor=unconfined, on Ubuntu set kernel.apparmor_restrict_unprivileged_userns=0 or give the binary an AppArmor profile that allows userns"},
	{"namespace", "EAGAIN", ctxAny, "a shortage, not a refusal (a full pids cgroup, RLIMIT_NPROC): raise the container's --pids-limit or ulimit nproc, or try again"},
	{"namespace", "ENOMEM", ctxAny, "a shortage, not a refusal (memory, or a namespace count): free memory or try again"},

	{"namespace", "proc-masked", ctxAny, fixProcMasked},
	{"namespace", "hostname-refused", ctxAny, "the container's seccomp profile refuses sethostname to a process without CAP_SYS_ADMIN (`run --isolation auto` runs without namespaces here): run the container with --security-opt seccomp=unconfined or a profile that allows sethostname, or " + fixNamespaceRoot},
	{"trial-sandbox", "proc-masked", ctxAny, fixProcMasked},
	{"trial-sandbox", "EPERM", ctxRoot, "a mount, pivot_root or seccomp step was refused: " + fixNamespaceRoot + " (and --security-opt apparmor=unconfined)"},
	{"trial-sandbox", "EPERM", ctxRootless, "a mount in the sandbox's user namespace was refused (a masked /proc or /sys, or a security module): run the outer container with --security-opt unmask=ALL (podman) or systempaths=unconfined (Docker), or " + fixNamespaceRoot},
	{"trial-sandbox", "EACCES", ctxAny, "a security module or a path's permissions refused a step: run the container with --security-opt apparmor=unconfined (or label=disable for SELinux), and give the state directory to this user; " + containersDoc},
	{"trial-sandbox", "EROFS", ctxAny, "the state directory is on a read-only file system: pass --state-dir on a writable one (a tmpfs is enough)"},
	{"trial-sandbox", "ENOSPC", ctxAny, "no space (or no inodes) for the sandbox's state: free space where --state-dir points, or point it elsewhere"},
	{"trial-sandbox", "ENOENT", ctxAny, "a path the start needs is missing here (the step is named): `run --evidence` records which; " + containersDoc},

	{"allow-list", "need-privilege", ctxAny, "the forwarders setns into the sandbox's network namespace, which needs CAP_SYS_ADMIN in our own user namespace: run as root with CAP_SYS_ADMIN (in a container: " + fixNamespaceRoot + "), or use --network deny"},

	{"cgroup", "cgroup-read-only", ctxAny, fixLimitsOff + " (the cgroupfs is read-only): mount a writable cgroupfs (--privileged, or a writable, delegated /sys/fs/cgroup: cgroup v2 with --cgroupns=private)" + fixBestEffort},
	{"cgroup", "cgroup-not-writable", ctxAny, fixLimitsOff + " (the cgroup cannot be written by us): delegate a writable cgroup subtree to this user (cgroup v2, systemd Delegate=yes) or run as root with a writable cgroupfs" + fixBestEffort},
	{"cgroup", "rootless-not-delegated", ctxAny, fixLimitsOff + " (cgroup v1 delegates nothing to an unprivileged user): run as root with CAP_SYS_ADMIN and a writable cgroupfs, or on a cgroup v2 host with a delegated subtree" + fixBestEffort},
	{"cgroup", "no-controller", ctxAny, fixLimitsOff + " (the controller is not mounted, v1, or not enabled in the parent's cgroup.subtree_control, v2): mount or enable it" + fixBestEffort},
	{"cgroup", "no-cgroup", ctxAny, fixLimitsOff + " (no cgroup hierarchy is usable here): mount a writable cgroupfs at /sys/fs/cgroup" + fixBestEffort},
	{"cgroup", "init-not-in-cgroup", ctxAny, fixLimitsOff + " (the cgroup was made but does not hold the sandbox: a nested cgroup namespace moved it): run the container with --cgroupns=private and a writable cgroupfs" + fixBestEffort},
	{"cgroup", "limit-mismatch", ctxAny, fixLimitsOff + " (the cgroup holds another value than was set: a co-tenant, or a parent's limit): give the sandboxes a cgroup subtree of their own" + fixBestEffort},
	{"cgroup", "not-requested", ctxAny, "no limit was asked for: pass --memory, --pids or --cpus"},

	{"unprivileged-uid", "uid-0-in-userns-is-host-root", ctxAny, "root here lacks a capability of the privileged path (CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_SETUID, CAP_SETGID: probe's mechanisms line names which), so the subject runs as host uid 0 (with no capability): " + fixNamespaceRoot + ", so that each sandbox gets a uid of its own, or run as a non-root user"},

	{"*", "*", ctxAny, fixFallback},
}

// fixFacts is what the table's contexts are decided from.
type fixFacts struct {
	rootless bool
	// userNSOff is the sysctl setting that disables (or restricts) user
	// namespaces ("kernel.unprivileged_userns_clone=0"), "" for none;
	// userNSOn the one that enables them.
	userNSOff, userNSOn string
}

// hostFixFacts reads the facts for this host.
func hostFixFacts(rootless bool) fixFacts {
	f := fixFacts{rootless: rootless}
	for _, s := range []struct{ path, name, off, on string }{
		{"/proc/sys/kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone", "0", "1"},
		{"/proc/sys/user/max_user_namespaces", "user.max_user_namespaces", "0", "15000"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "kernel.apparmor_restrict_unprivileged_userns", "1", "0"},
	} {
		b, err := os.ReadFile(s.path)
		if err == nil && strings.TrimSpace(string(b)) == s.off {
			f.userNSOff, f.userNSOn = s.name+"="+s.off, s.name+"="+s.on
			break
		}
	}
	return f
}

// fixFamily is the table's mechanism for a probe's mechanism name.
func fixFamily(mech string) string {
	switch {
	case mech == "namespaces" || strings.HasSuffix(mech, "-namespace"):
		return "namespace"
	case strings.HasPrefix(mech, "cgroup-"):
		return "cgroup"
	}
	return mech
}

// fixFor is the table's fix for mechanism mech failing with word.
func fixFor(mech, word string, f fixFacts) string {
	fam := fixFamily(mech)
	for _, r := range probeFixes {
		if (r.mech != fam && r.mech != "*") || (r.err != word && r.err != "*") || !f.matches(r.ctx, mech) {
			continue
		}
		return strings.NewReplacer("{sysctl}", f.userNSOff, "{enable}", f.userNSOn).Replace(r.fix)
	}
	return fixFallback
}

func (f fixFacts) matches(ctx, mech string) bool {
	switch ctx {
	case ctxAny:
		return true
	case ctxRoot:
		return !f.rootless
	case ctxRootless:
		return f.rootless
	case ctxUserNSOff:
		return f.userNSOff != "" && (f.rootless || mech == "user-namespace")
	}
	return false
}

// fixWord is the table's error word for err: "proc-masked" and
// "need-privilege" for the sandbox's own refusals, else the errno name,
// found in the chain or (for libcontainer's init, whose errors come back
// as text) at the end of the text; "" when there is none.
func fixWord(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrProcMasked):
		return "proc-masked"
	case errors.As(err, new(*hostnameRefusedError)):
		return "hostname-refused"
	case errors.Is(err, netpolicy.ErrNeedPrivilege):
		return "need-privilege"
	}
	if errno, ok := errors.AsType[unix.Errno](err); ok {
		return unix.ErrnoName(errno)
	}
	text := err.Error()
	for _, e := range []unix.Errno{unix.EPERM, unix.EACCES, unix.ENOENT, unix.EROFS, unix.ENOSPC, unix.EINVAL, unix.ENOSYS, unix.EAGAIN, unix.ENOMEM, unix.EUSERS} {
		if strings.HasSuffix(text, e.Error()) {
			return unix.ErrnoName(e)
		}
	}
	return ""
}
