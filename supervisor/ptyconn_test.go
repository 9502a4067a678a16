package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/quiesce"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// hostProc is a program on a host pseudoterminal as a ptyProc, so that
// the conn's timing between epochs can be driven by the test.
type hostProc struct {
	cmd  *exec.Cmd
	once sync.Once
	exit sandbox.Exit
}

func (p *hostProc) Signal(sig unix.Signal) error { return p.cmd.Process.Signal(syscall.Signal(sig)) }
func (p *hostProc) Kill() error                  { return unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL) }
func (p *hostProc) Wait() (sandbox.Exit, error) {
	p.once.Do(func() {
		_ = p.cmd.Wait()
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.exit = sandbox.Exit{Code: -1, Signal: unix.SignalName(ws.Signal())[3:]}
		} else {
			p.exit = sandbox.Exit{Code: p.cmd.ProcessState.ExitCode()}
		}
	})
	return p.exit, nil
}

// TestPTYOutputWhileIdle: output a background job writes while no epoch
// is open is read by the next epoch, which says so in a diagnostic.
func TestPTYOutputWhileIdle(t *testing.T) {
	// The input after the idle output: text, or a resize to the size the
	// terminal has, which closes its epoch at once — but not before the
	// output its diagnostic speaks of is read, or the diagnostic would
	// name output the observation does not hold.
	t.Run("text", func(t *testing.T) { outputWhileIdle(t, input.Text{Text: "z"}, "z") })
	t.Run("same-size resize", func(t *testing.T) { outputWhileIdle(t, input.Resize{Columns: 40, Rows: 8}, "") })
}

func outputWhileIdle(t *testing.T, idle input.Input, echo string) {
	master, slave := ptytest.Open(t, 40, 8)
	// The background job writes once the test says the first epoch is
	// over (the file), so its line comes while no epoch is open.
	flag := filepath.Join(t.TempDir(), "go")
	cmd := exec.Command("/bin/sh", "-c", `read x; (while [ ! -e "$0" ]; do sleep 0.05; done; echo BG) & read y`, flag)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = ptytest.Env(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &hostProc{cmd: cmd}
	t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
	// The conn owns its slave: a second descriptor of the same one.
	fd, err := unix.Dup(int(slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(fd), "pty-slave")
	tasks := func() ([]int, error) { return quiesce.ProcessTree(cmd.Process.Pid) }
	c, err := newTerminalConn(p, master, peer, tasks, config.Terminal{Columns: 40, Rows: 8}, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	next := func() said {
		t.Helper()
		m, _, err := c.next(ctx)
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		return m
	}
	if next().kind != control.KindSessionReady {
		t.Fatal("the first message is not the readiness observation")
	}
	if err := c.deliver(ctx, input.Key{Keys: []string{"Enter"}}, 0); err != nil {
		t.Fatal(err)
	}
	if m := next(); m.kind != control.KindObservation || strings.Contains(jsonText(&m.obs.Events[0].Data), "BG") {
		t.Fatalf("the first epoch: %#v", m)
	}
	// Idle: the background job writes now.
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pending, err := c.drv.Pending(); err != nil || pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background job never wrote")
		}
	}
	if err := c.deliver(ctx, idle, 0); err != nil {
		t.Fatal(err)
	}
	d := next()
	if d.kind != control.KindDiagnostic || d.diag.Code != DiagOutputIdle {
		t.Fatalf("want the %s diagnostic first, got %#v", DiagOutputIdle, d)
	}
	m := next()
	if m.kind != control.KindObservation {
		t.Fatal("no observation after the diagnostic")
	}
	o := m.obs
	if len(o.Events) == 0 {
		t.Fatal("the epoch has no output: the idle output was not read")
	}
	if got := jsonText(&o.Events[0].Data); !strings.Contains(got, "BG") || !strings.Contains(got, echo) {
		t.Errorf("the epoch's output %s lacks the background job's line or the echo %q", got, echo)
	}
}
