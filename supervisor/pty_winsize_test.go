package supervisor

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// TestPTYProgramSetsSizeAtStart is the attack of a program that sets its
// own terminal's size the moment it starts, before the supervisor drives
// the terminal: the size must stay the program's (it reads it back with
// `stty size`) and the change must be recorded as a terminal-size-changed
// diagnostic, never silently put back to the requested size.
//
// "hooked" makes the old failure deterministic: the supervisor waits,
// after the sandbox released the program and before it drives the
// terminal, until the kernel has the program's size. The loop runs the
// real race, unhooked, a few times.
func TestPTYProgramSetsSizeAtStart(t *testing.T) {
	needSandbox(t)
	const script = `stty cols 50 rows 10; read x; stty size; read y`
	enter := `{"kind":"input.key","payload":{"keys":["Enter"]}}`
	check := func(t *testing.T, req Request) {
		t.Helper()
		o := runCase(t, req)
		if o.res.Outcome != transcript.KindRunFinished {
			t.Fatalf("outcome %s\n%.3000s", o.res.Outcome, o.data)
		}
		obs := observationPayloads(o)
		if len(obs) < 2 {
			t.Fatalf("%d observations\n%s", len(obs), o.data)
		}
		// The program's own view of its size, after the first input.
		if lines := strings.Join(frameLines(t, obs[1]), "\n"); !strings.Contains(lines, "10 50") {
			t.Errorf("the program reads a size other than the one it set (10 50): its screen\n%s", lines)
		}
		var said []string
		for i := range o.tr.Records {
			r := &o.tr.Records[i]
			if r.Kind != transcript.KindDiagnostic {
				continue
			}
			p := r.Payload()
			if c, _ := p.Get("code"); c.Str != DiagSizeChanged {
				continue
			}
			d, _ := p.Get("details")
			said = append(said, jsonText(d))
		}
		if want := `{"columns":50,"rows":10}`; len(said) != 1 || said[0] != want {
			t.Errorf("terminal-size-changed diagnostics %q, want one with %s\n%.3000s", said, want, o.data)
		}
	}
	t.Run("hooked", func(t *testing.T) {
		req := shRequest(t, script, enter)
		req.hooks.beforeTerminalDriven = func(box *sandbox.Sandbox) {
			if !waitKernelSize(box, 50, 10, 10*time.Second) {
				t.Errorf("the program did not set its size within 10 s")
			}
		}
		check(t, req)
	})
	for range 3 {
		t.Run("race", func(t *testing.T) {
			check(t, shRequest(t, script, enter))
		})
	}
}

// waitKernelSize waits until the sandbox's terminal has the size cols ×
// rows, as TIOCGWINSZ on its master reads it, or until limit passes.
func waitKernelSize(box *sandbox.Sandbox, cols, rows uint16, limit time.Duration) bool {
	master := box.Console()
	if master == nil {
		return false
	}
	sc, err := master.SyscallConn()
	if err != nil {
		return false
	}
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		var ws *unix.Winsize
		var werr error
		if err := sc.Control(func(fd uintptr) { ws, werr = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) }); err != nil || werr != nil {
			return false
		}
		if ws.Col == cols && ws.Row == rows {
			return true
		}
	}
	return false
}
