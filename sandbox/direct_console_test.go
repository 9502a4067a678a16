package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
)

// TestDirectConsole: Spec.Terminal under isolation none gives the subject
// a host pty made for it alone (the master's own peer, never the
// caller's terminal), sized as asked and checked, owned by the subject's
// uid, as stdin, stdout, stderr and controlling terminal, with the
// subject as its foreground process group: typed text echoes, ^C
// reaches the subject as SIGINT. Processes lists the direct cgroup;
// ConsolePeer opens the slave through the master; ResizeConsole resizes
// it; after Destroy no process of ours holds the pty.
func TestDirectConsole(t *testing.T) {
	f := directFixture(t)
	spec := f.spec("/bin/sh", "-c", `tty; test -t 0 && test -t 1 && test -t 2 && echo all-terminals
stat -c "owner %u" "$(tty)"
echo "size $(stty size)"
read -r s < /proc/$$/stat; set -- ${s#*) }
echo "pid $$ pgrp $3 session $4 tpgid $6"
echo ready; read line; echo "got $line"; echo "resized $(stty size)"
echo again; read line; echo "not interrupted"`)
	spec.Isolation = IsolationNone
	spec.Terminal = &TerminalSize{Rows: 33, Cols: 101}
	sb, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	m := sb.Console()
	if m == nil {
		t.Fatal("no console with Spec.Terminal set")
	}
	if !slices.Contains(sb.Applied().Mechanisms, MechanismCheck{Name: MechanismTerminalSize, Applied: true, Reason: "ok"}) {
		t.Errorf("no verified %s mechanism: %+v", MechanismTerminalSize, sb.Applied().Mechanisms)
	}
	var ptn uint32
	sc, _ := m.SyscallConn()
	_ = sc.Control(func(fd uintptr) { ptn, err = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN) })
	if err != nil {
		t.Fatalf("the console is not a pty master: %v", err)
	}
	peer, err := sb.ConsolePeer()
	if err != nil {
		t.Fatalf("ConsolePeer: %v", err)
	}
	if n, err := unix.IoctlGetUint32(int(peer.Fd()), unix.TIOCGPTN); err == nil || !errors.Is(err, unix.ENOTTY) && !errors.Is(err, unix.EINVAL) {
		// TIOCGPTN is a master's ioctl; the peer is the slave.
		t.Errorf("ConsolePeer answered TIOCGPTN (%d, %v): not the slave", n, err)
	}
	timer := time.AfterFunc(60*time.Second, func() { _ = sb.Kill() })
	defer timer.Stop()

	shown := readConsole(m)
	shown.await(t, "ready")
	pids, ok, err := sb.Processes()
	if !ok || err != nil || !slices.Contains(pids, sb.Evidence().SubjectPID) || !slices.Contains(pids, sb.Evidence().InitPID) {
		t.Errorf("Processes = %v, %v, %v; want the direct cgroup's listing with the reaper %d and the subject %d",
			pids, ok, err, sb.Evidence().InitPID, sb.Evidence().SubjectPID)
	}
	if err := sb.ResizeConsole(TerminalSize{Rows: 40, Cols: 120}); err != nil {
		t.Errorf("ResizeConsole: %v", err)
	}
	if _, err := m.Write([]byte("hello\n")); err != nil {
		t.Fatalf("write to the console: %v", err)
	}
	shown.await(t, "again")
	// ^C: the terminal's line discipline sends SIGINT to its foreground
	// process group, which must be the subject's.
	if _, err := m.Write([]byte{0x03}); err != nil {
		t.Fatalf("write ^C: %v", err)
	}
	ex, err := sb.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	peer.Close()
	if err := <-shown.done; !errors.Is(err, os.ErrClosed) && !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("console read ended with %v, want EIO", err)
	}
	out := shown.String()
	if ex.Signal != "INT" {
		t.Errorf("exit %+v, want SIGINT from ^C; the console showed %q", ex, out)
	}
	owner := "owner " + strconv.Itoa(sb.Evidence().UID)
	for _, want := range []string{fmt.Sprintf("/dev/pts/%d\r\n", ptn), "all-terminals", owner, "size 33 101", "hello\r\ngot hello", "resized 40 120", "\r\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the console showed %q, want it to contain %q", out, want)
		}
	}
	if strings.Contains(out, "not interrupted") {
		t.Errorf("^C did not reach the subject: %q", out)
	}
	// The shell leads its own process group, the terminal's foreground
	// one, in the reaper's session.
	var pid, pgrp, session, tpgid int
	if i := strings.Index(out, "pid "); i < 0 {
		t.Errorf("no process line: %q", out)
	} else if _, err := fmt.Sscanf(out[i:], "pid %d pgrp %d session %d tpgid %d", &pid, &pgrp, &session, &tpgid); err != nil {
		t.Errorf("process line: %v in %q", err, out[i:])
	} else if pgrp != pid || tpgid != pgrp || session != sb.Evidence().InitPID {
		t.Errorf("pid %d pgrp %d session %d tpgid %d: want the subject's own group, in the foreground, in the reaper's (%d) session",
			pid, pgrp, session, tpgid, sb.Evidence().InitPID)
	}
	if err := sb.Destroy(); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	// Nothing holds the pty any more: the kernel has released it.
	name := fmt.Sprintf("/dev/pts/%d", ptn)
	deadline := time.Now().Add(2 * time.Second)
	for holders := ptytest.Holders(ptn); len(holders) > 0; holders = ptytest.Holders(ptn) {
		if time.Now().After(deadline) {
			t.Errorf("%s still open after Destroy: %v", name, holders)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkDirectConsoleWithoutCgroup: a subject on isolation none's
// terminal leads a process group of its own, not the reaper's. Where no
// cgroup could be made, a subject that kills its reaper (same uid) and
// ignores the hangup that follows must still end with the sandbox:
// Kill's last resort, the process group, covers the subject's group too.
// Called where the cgroupfs is read-only (TestReadOnlyCgroupfs).
func checkDirectConsoleWithoutCgroup(t *testing.T, marker string) {
	t.Run("none terminal, reaper killed", func(t *testing.T) {
		f := directFixture(t)
		spec := f.isoSpec(IsolationNone, "/bin/sh", "-c", `trap "" HUP; sleep `+marker+` & read x; kill -9 $PPID; wait`)
		spec.Terminal = &TerminalSize{Rows: 24, Cols: 80}
		sb, err := Start(context.Background(), spec)
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		timer := time.AfterFunc(20*time.Second, func() { _ = sb.Kill() })
		defer timer.Stop()
		// Once it runs (Start has read the reaper's "started").
		if _, err := sb.Console().Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
		ex, _ := sb.Wait()
		if !ex.InitLost {
			t.Errorf("exit %+v, want the reaper lost", ex)
		}
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
		if pids := waitGone(marker, 2*time.Second); len(pids) > 0 {
			t.Errorf("the subject's group survived the sandbox: %v", pids)
		}
	})
}
