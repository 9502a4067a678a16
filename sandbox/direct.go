package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/receipts"
)

// directRunner is isolation none: the subject runs on the host, under our
// reaper in its own session, as a child subreaper. What it can guarantee:
//
//   - as root, a cgroup (memory/pids limits, and Kill empties it, so even
//     a daemon that escaped the reaper dies);
//   - otherwise the reaper, as subreaper, inherits every orphaned
//     descendant and SIGKILLs its children until none is left when the
//     subject ends, the supervisor dies or Kill is called.
//
// What it cannot: a descendant that another process adopts (e.g. via a
// second subreaper it sets up itself) or that escapes while the reaper is
// itself SIGKILLed survives without a cgroup; nothing is hidden from the
// subject (no filesystem or network isolation, no seccomp, same uid).
type directRunner struct {
	cmd     *exec.Cmd
	cg      cgroups.Manager // nil when not root
	waitErr error
	state   *os.ProcessState
	done    chan struct{}
}

func (sb *Sandbox) startDirect(c *cleanup) error {
	s := &sb.spec
	exe, err := os.Executable()
	if err != nil {
		return stepErr("direct", "executable", err)
	}
	liveR, liveW, err := os.Pipe()
	if err != nil {
		return stepErr("liveness pipe", "", err)
	}
	sb.liveW = liveW
	c.add(liveW.Close)
	reportR, reportW, err := os.Pipe()
	if err != nil {
		liveR.Close()
		return stepErr("report pipe", "", err)
	}
	sb.reportF, sb.report = reportR, bufio.NewReader(reportR)
	c.add(reportR.Close)
	goR, goW, err := os.Pipe()
	if err != nil {
		liveR.Close()
		reportW.Close()
		return stepErr("go pipe", "", err)
	}
	defer goW.Close()

	cmd := exec.Command(exe, append([]string{ReaperArg, reaperDirect, "--"}, s.Args...)...)
	cmd.Args[0] = "termverify-sandbox-reaper"
	cmd.Dir, cmd.Env = s.Root, s.Env
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	}
	if s.Stdout != nil {
		cmd.Stdout = s.Stdout
	}
	if s.Stderr != nil {
		cmd.Stderr = s.Stderr
	}
	cmd.ExtraFiles = []*os.File{liveR, reportW, goR}
	// Own session: no terminal signals from ours, and a process group the
	// kill can address. No Pdeathsig: it fires when the creating OS thread
	// exits, not the process; the liveness pipe covers supervisor death.
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	err = cmd.Start()
	liveR.Close()
	reportW.Close()
	goR.Close()
	if err != nil {
		return stepErr("start reaper", exe, err)
	}
	d := &directRunner{cmd: cmd, done: make(chan struct{})}
	sb.direct = d
	go func() {
		// Owned by the Sandbox: Wait and Destroy both wait on done.
		defer close(d.done)
		d.waitErr = cmd.Wait()
		d.state = cmd.ProcessState
	}()
	c.add(func() error { _ = d.kill(); <-d.done; return nil })
	sb.evidence.InitPID = cmd.Process.Pid
	sb.mark("reaper-started")

	if os.Geteuid() == 0 {
		if err := d.joinCgroup(sb.id, s.Limits, cmd.Process.Pid); err != nil {
			return stepErr("cgroup", sb.id, err)
		}
		c.add(d.cg.Destroy)
		sb.evidence.CgroupPaths = d.cg.GetPaths()
		sb.addMechanism("cgroup", true, "ok")
	} else {
		sb.addMechanism("cgroup", false, "not-root")
	}
	sb.applied.Filesystem = TierCheck{Tier: receipts.Delivered, Reason: "isolation-none"}
	sb.applied.Network = TierCheck{Tier: receipts.Delivered, Reason: "isolation-none"}
	if _, err := goW.Write([]byte{1}); err != nil {
		return stepErr("release reaper", "", err)
	}
	return sb.awaitSubject(nil)
}

// joinCgroup puts the parked reaper into a fresh cgroup (pids, memory,
// optionally cpu) under our own, before it forks the subject.
func (d *directRunner) joinCgroup(id string, l Limits, pid int) error {
	r := &cgroups.Resources{SkipDevices: true}
	if l.MemoryBytes > 0 {
		r.Memory, r.MemorySwap = l.MemoryBytes, l.MemoryBytes
	}
	if l.Pids > 0 {
		p := l.Pids
		r.PidsLimit = &p
	}
	if l.CPUs > 0 {
		r.CpuPeriod, r.CpuQuota = 100000, int64(l.CPUs*100000+0.999999)
	}
	m, err := manager.New(&cgroups.Cgroup{Path: cgroupParent + "/" + id, Resources: r})
	if err != nil {
		return err
	}
	d.cg = m
	if err := m.Apply(pid); err != nil {
		return err
	}
	return m.Set(r)
}

// kill ends the tree: the reaper's process group, then every process of
// the cgroup until it is empty.
func (d *directRunner) kill() error {
	if d.cmd.Process == nil {
		return nil
	}
	_ = unix.Kill(-d.cmd.Process.Pid, unix.SIGKILL)
	if d.cg == nil {
		return nil
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pids, err := d.cg.GetAllPids()
		if err != nil || len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("direct kill: cgroup not empty after 2s")
}

func (d *directRunner) wait() (*os.ProcessState, error) {
	<-d.done
	var ee *exec.ExitError
	if errors.As(d.waitErr, &ee) {
		return d.state, nil
	}
	if d.waitErr != nil {
		return d.state, fmt.Errorf("wait reaper: %w", d.waitErr)
	}
	return d.state, nil
}
