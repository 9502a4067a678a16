package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
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
	// Filesystem and Network are what a sandbox here confines, denying
	// the network; AllowList is the network with an allow-list's
	// forwarders. Each is the trial sandbox's Applied when it started,
	// else not confined with the first failure as its reason.
	Filesystem Confinement      `json:"filesystem"`
	Network    Confinement      `json:"network"`
	AllowList  Confinement      `json:"network_allow_list"`
	Mechanisms []MechanismProbe `json:"mechanisms"`
	Applied    *Applied         `json:"applied,omitempty"` // from the trial sandbox, when it started
}

// MechanismProbe is one mechanism tried on its own.
type MechanismProbe struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"` // "ok" or the errno name and context
}

// Probe tries each mechanism: namespaces by cloning a child into them,
// then a complete trial sandbox (pivot_root, mounts, seccomp, cgroups,
// an allow-list forwarder on 127.0.0.1) whose Applied says what is
// confined. stateDir "" means DefaultStateDir(). Nothing it starts
// outlives it.
func Probe(ctx context.Context, stateDir string) ProbeResult {
	// The same choice Start makes (privilege.go): by capabilities.
	rootless := rootlessMode()
	res := ProbeResult{Rootless: rootless}
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
		if err := tryClone(m.flags, rootlessMode()); err != nil {
			p.OK, p.Detail = false, errnoWord(err)
		}
		nsOK[m.name] = p
		res.Mechanisms = append(res.Mechanisms, p)
	}

	together := MechanismProbe{Name: "namespaces", OK: true, Detail: "ok"}
	if err := NamespaceTrial(); err != nil {
		together.OK, together.Detail = false, errnoWord(err)
	}
	res.Mechanisms = append(res.Mechanisms, together)

	trial, trialErr := trialSandbox(ctx, stateDir, true)
	allowErr := trialErr
	res.AllowList = Confinement{Reason: detail(allowErr)}
	if allowErr == nil {
		res.AllowList = trial.Network
	} else if rootless && errors.Is(allowErr, netpolicy.ErrNeedPrivilege) {
		res.AllowList.Reason += " (setns into the sandbox needs CAP_SYS_ADMIN in our own user namespace)"
	}
	if errors.Is(trialErr, netpolicy.ErrNeedPrivilege) {
		// The allow-list alone failed: is the rest available?
		trial, trialErr = trialSandbox(ctx, stateDir, false)
	}
	res.Mechanisms = append(res.Mechanisms, MechanismProbe{Name: "trial-sandbox", OK: trialErr == nil, Detail: detail(trialErr)})
	res.Filesystem = Confinement{Reason: firstFailure(nsOK, trialErr, "mount-namespace", "pid-namespace")}
	res.Network = Confinement{Reason: firstFailure(nsOK, trialErr, "network-namespace")}
	if trial != nil {
		res.Applied = trial
		for _, m := range trial.Mechanisms {
			switch m.Name {
			case "pivot-root", "seccomp", "no-new-privs", "capabilities-dropped", "unprivileged-uid",
				"cgroup-memory", "cgroup-pids":
				res.Mechanisms = append(res.Mechanisms, MechanismProbe{Name: m.Name, OK: m.Applied, Detail: m.Reason})
			}
		}
		if trial.Filesystem.Confined {
			res.Filesystem = trial.Filesystem
		}
		if trial.Network.Confined {
			// Denied, not allow-listed: the trial may have had forwarders.
			res.Network = Confinement{Confined: true, Checks: slices.DeleteFunc(slices.Clone(trial.Network.Checks),
				func(c string) bool { return c == "allow-list-forwarders" })}
		}
	}
	return res
}

// detail is a probe's word for err: "ok" for none.
func detail(err error) string {
	if err == nil {
		return "ok"
	}
	return errnoWord(err)
}

// firstFailure names the first failed namespace among names, else the
// trial sandbox's error.
func firstFailure(ns map[string]MechanismProbe, trialErr error, names ...string) string {
	for _, n := range names {
		if p := ns[n]; !p.OK {
			return n + " " + p.Detail
		}
	}
	if trialErr != nil {
		return errnoWord(trialErr)
	}
	return "not verified"
}

// sandboxNamespaces are the namespaces every os-tier sandbox is made of
// (a user namespace is added when rootless).
const sandboxNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// NamespaceTrial clones one short-lived child into every namespace a
// sandbox needs at once (plus a user namespace when not root) and reports
// whether the kernel and our privileges allow that. It is the only
// evidence on which `run --isolation auto` may fall back to isolation
// none: libcontainer's start errors are untyped, and a start that failed
// after anything was set up (a mount, a verification) is never a reason
// to run with less. probe reports the same trial as "namespaces".
// The error wraps ErrNoNamespace only for a lasting refusal (EPERM,
// EINVAL, ENOSYS, ENOSPC/EUSERS from the namespace limits); a transient
// one (EAGAIN, ENOMEM: a full pids cgroup, memory pressure) is retried a
// few times and then returned without ErrNoNamespace, so that a caller
// fails instead of falling back because of a moment's shortage that a
// co-tenant could arrange.
func NamespaceTrial() error {
	var err error
	for try := 0; try < 3; try++ {
		if try > 0 {
			time.Sleep(time.Duration(try) * 20 * time.Millisecond)
		}
		if err = tryClone(sandboxNamespaces, rootlessMode()); err == nil {
			return nil
		}
		if !transient(err) {
			return fmt.Errorf("%w: clone into mount, pid, network, ipc and uts namespaces: %w", ErrNoNamespace, err)
		}
	}
	return fmt.Errorf("namespace trial: clone into mount, pid, network, ipc and uts namespaces failed %d times for want of resources: %w", 3, err)
}

// transient reports whether err is a shortage rather than a refusal.
func transient(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EINTR)
}

// tryClone starts our own binary in reaper noop mode inside a new
// namespace of the given kind (plus a user namespace when rootless, as
// the sandbox would use) and waits for it. userNS adds a user namespace
// mapping our own ids, as a sandbox without CAP_SYS_ADMIN needs.
func tryClone(flags uintptr, userNS bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, reaper.Arg, reaper.ModeNoop)
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
