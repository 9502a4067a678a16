package sandbox

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
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
	cg      cgroups.Manager   // nil when not root
	cgPaths map[string]string // a copy: the manager's own map changes in Destroy
	killMu  sync.Mutex        // a Kill in progress finishes before Destroy removes the cgroup
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
	liveR, reportW, err := sb.reaperPipes(c)
	if err != nil {
		return err
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		liveR.Close()
		reportW.Close()
		return stepErr("go pipe", "", err)
	}
	defer goW.Close()

	cmd := exec.Command(exe, reaper.Args(reaper.ModeDirect, nil, s.Args)...)
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
	c.add(func() error { _ = d.kill(nil); <-d.done; return nil })
	sb.evidence.InitPID = cmd.Process.Pid
	sb.mark("reaper-started")

	if os.Geteuid() == 0 {
		if err := d.joinCgroup(sb.id, s.Limits, cmd.Process.Pid); err != nil {
			return stepErr("cgroup", sb.id, err)
		}
		c.add(d.cg.Destroy)
		d.cgPaths = maps.Clone(d.cg.GetPaths())
		sb.evidence.CgroupPaths = maps.Clone(d.cgPaths)
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

// kill ends the tree. The reaper goes first, by liveness EOF: as child
// subreaper it has adopted every orphaned descendant (setsid daemons
// included) and SIGKILLs them until none is left before it exits. Then
// every process still in the cgroup (root only) is killed until it is
// empty, and finally the reaper's process group, should the reaper
// itself have hung.
func (d *directRunner) kill(liveW *os.File) error {
	if d.cmd.Process == nil {
		return nil
	}
	d.killMu.Lock()
	defer d.killMu.Unlock()
	if liveW != nil {
		_ = liveW.Close()
		select {
		case <-d.done:
		case <-time.After(time.Second):
		}
	}
	var err error
	if d.cgPaths != nil {
		err = emptyCgroup(d.cgPaths, 2*time.Second)
	}
	_ = unix.Kill(-d.cmd.Process.Pid, unix.SIGKILL)
	return err
}

// emptyCgroup SIGKILLs the processes listed in cgroup.procs of every
// hierarchy in paths until all are empty or timeout passes. (The fs
// manager's GetAllPids reads the devices hierarchy, which a runner
// without device rules never joins.)
func emptyCgroup(paths map[string]string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := 0
		for _, dir := range paths {
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					left++
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("direct kill: %d processes left in the cgroup after %v", left, timeout)
		}
		// Killed processes leave cgroup.procs only once reaped; poll.
		time.Sleep(2 * time.Millisecond)
	}
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
