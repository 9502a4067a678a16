package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/netpolicy"
)

// container is isolation os: libcontainer's init, in new namespaces,
// runs our reaper as the sandbox's PID 1 (the package doc). Its process
// is the host's handle on that init.
type container struct {
	process *libcontainer.Process
}

func (ct *container) signal(sig unix.Signal) error { return ct.process.Signal(sig) }

// kill SIGKILLs the init; the kernel then kills every process of its PID
// namespace, setsid daemons included.
func (ct *container) kill() error {
	if err := ct.process.Signal(unix.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (ct *container) wait() (*os.ProcessState, error) { return ct.process.Wait() }

// cgroupPaths are the container's cgroup directories that exist, by
// controller (evidence, limits verification and Wait's statistics).
func cgroupPaths(ct *libcontainer.Container) map[string]string {
	paths := map[string]string{}
	if st, err := ct.State(); err == nil {
		for k, v := range st.CgroupPaths {
			if _, err := os.Stat(v); err == nil {
				paths[k] = v
			}
		}
	}
	return paths
}

// startContainer builds and starts the os backend (the package doc's
// steps 3 to 7) and checks every mechanism before the subject runs.
func (sb *Sandbox) startContainer(ctx context.Context, c *cleanup, rootless bool) error {
	s := &sb.spec
	plan, err := netpolicy.Resolve(ctx, s.Network)
	if err != nil {
		return stepErr("resolve network", string(s.Network.Mode), err)
	}
	sb.mark("resolved")
	args, err := sandboxReaperArgs(s.Args)
	if err != nil {
		return stepErr("seccomp", "", err) // fail before anything runs
	}
	pins := &pinner{dir: filepath.Join(sb.dir, pinDir)}
	c.add(func() error { return unpin(sb.dir) })
	pin := func(h *hostDir) (string, error) { return pins.source(h, rootless) }
	root, err := pins.skeletonIn(sb.dir, rootless, s.UserNamespace)
	if err != nil {
		return stepErr("skeleton root", pins.dir, err)
	}
	owner, err := sb.bindIDMapping(rootless)
	if err != nil {
		return err
	}
	mounts, held, err := buildSkeleton(root, s, plan.HostsFile(), sb.root, sb.rootfs, sb.binds, owner, pin)
	for _, h := range held {
		c.add(h.Close)
	}
	if err != nil {
		return stepErr("skeleton root", root, err)
	}
	sb.rootfsEntries = held
	if s.UserNamespace && !rootless {
		// Container root is host userNSBase: it must own the skeleton to
		// create mountpoints in it.
		if err := chownTree(root, userNSBase, userNSBase); err != nil {
			return stepErr("skeleton root", root, err)
		}
	}
	if !rootless {
		// A read-only or undelegated cgroupfs (normal in containers) must
		// not stop the namespaces: the cgroup becomes best-effort, and
		// verifyCgroups says which limits are not in force and why.
		sb.cg = probeCgroupAccess(sb.id)
		sb.evidence.CgroupError = sb.cg.detail
	}
	cfg := containerConfig(s, sb.id, root, mounts, sb.id, rootless, sb.cg, sb.hostUID, sb.hostGID)
	con, err := newConsole(c, s, cfg, rootless) // nil without Spec.Terminal
	if err != nil {
		return err
	}
	ct, err := libcontainer.Create(filepath.Join(sb.dir, "lc"), sb.id, cfg)
	if err != nil {
		return stepErr("create container", sb.id, err)
	}
	c.add(ct.Destroy)
	sb.mark("created")

	liveR, reportW, err := sb.reaperPipes(c)
	if err != nil {
		return err
	}

	uid, gid := s.UID, s.GID
	p := &libcontainer.Process{
		// /proc/self/exe of libcontainer's init is its sealed copy of this
		// binary, reachable in any root: statically linked (make build), the
		// reaper needs nothing from the sandbox's filesystem; a dynamically
		// linked build needs the loader and libc there.
		Args:       append([]string{"/proc/self/exe"}, args...),
		Env:        s.Env,
		Cwd:        s.workdir(),
		UID:        uid,
		GID:        gid,
		ExtraFiles: []*os.File{liveR, reportW},
		Init:       true,
	}
	p.Stdin, p.Stdout, p.Stderr = s.stdio()
	s.hook(hookBeforeContainerRun, "")
	con.attach(p)
	err = ct.Start(p)
	// The child has its own copies now; ours would keep EOF from coming.
	liveR.Close()
	reportW.Close()
	// The init has bound what it needs from its own copy of the pins (or
	// failed): the host's are no longer needed, and the sooner they go,
	// the less a SIGKILL of ours can leave mounted.
	if uerr := unpin(sb.dir); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return stepErr("start init", sb.id, explainProcMount(err)) // procmask.go
	}
	// From here on the init runs: Destroy (or Start's release on
	// failure) kills and reaps it before it undoes anything else.
	sb.run = &container{process: p}
	if sb.console, err = con.receive(c); err != nil {
		return err
	}
	if con != nil {
		ok, reason := con.checkSize(sb.console)
		sb.addMechanism(MechanismTerminalSize, ok, reason)
	}
	pid, err := p.Pid()
	if err != nil {
		return stepErr("start init", sb.id, err)
	}
	sb.evidence.InitPID = pid
	sb.mark("init-ready")

	// The forwarders listen inside the namespace before the subject runs,
	// so its first connect already finds them.
	fwd, err := plan.Start(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return stepErr("network policy", string(s.Network.Mode), err)
	}
	c.add(fwd.Close)
	sb.fwd = fwd
	sb.mark("network")

	// Create/start split: libcontainer's init is parked on its exec fifo
	// with every namespace, mount and credential in place, so what we
	// claim is checked now, before any subject code runs.
	sb.evidence.CgroupPaths = cgroupPaths(ct)
	if err := sb.verify(pid, rootless, plan); err != nil {
		return err
	}
	sb.mark("verified")
	if err := ct.Exec(); err != nil {
		return stepErr("release init", sb.id, err)
	}
	sb.mark("released")
	return sb.awaitSubject(func(reaperEvent) error { return sb.verifyCredentials(pid, rootless) })
}
