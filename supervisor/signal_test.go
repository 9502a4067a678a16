package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// childEnv makes the test binary a supervisor process (see TestMain): it
// runs the example with a hanging subject into the transcript path named
// by the variable's value, so a test can signal a real supervisor.
const childEnv = "TV_SUPERVISOR_TEST_CHILD"

func supervisorChild() int {
	path := os.Getenv(childEnv)
	rf, err := ReadRunFile("../examples/request.json")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	req := Request{
		RunID: rf.RunID, Config: rf.Config, Subject: rf.Subject,
		Args:           []string{"./echo-subject", "hang", os.Getenv("TV_MARKER")},
		Roots:          map[string]string{"app": os.Getenv("TV_ROOT")},
		StateDir:       os.Getenv("TV_STATE"),
		Inputs:         []input.Input{input.Text{Text: "hi"}},
		Deadlines:      Deadlines{Epoch: time.Minute},
		TranscriptPath: path,
	}
	ctx, stop := InterruptContext(context.Background())
	defer stop()
	res, err := Run(ctx, req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if !res.Succeeded() {
		return 1
	}
	return 0
}

// startChild starts a supervisor child and waits until its subject runs
// the hanging epoch.
func startChild(t *testing.T, marker string) (*exec.Cmd, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "transcript.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+out, "TV_MARKER="+marker, "TV_ROOT="+env.root, "TV_STATE="+env.stateDir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for len(sandboxtest.PidsMatching(marker)) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the subject never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Let the handshake finish and the first input go out.
	time.Sleep(300 * time.Millisecond)
	return cmd, out
}

func waitGone(marker string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := sandboxtest.PidsMatching(marker)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSIGTERM: on SIGTERM (and SIGHUP, a closed terminal) the supervisor
// kills the subject, records run.failed naming the signal in a valid
// transcript, and exits.
func TestSIGTERM(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	for _, tc := range []struct {
		sig  unix.Signal
		name string
	}{{unix.SIGTERM, "TERM"}, {unix.SIGHUP, "HUP"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			marker := "tv-sig" + strings.ToLower(tc.name) + "-" + fmt.Sprint(os.Getpid())
			cmd, out := startChild(t, marker)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("supervisor exit: %v", err)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := transcript.Parse(data)
			if err != nil {
				t.Fatalf("transcript does not validate: %v", err)
			}
			o := outcome{tr: tr, data: data}
			if tr.Terminal() != transcript.KindRunFailed || o.detail("failure") != FailureInterrupted || o.detail("signal") != tc.name {
				t.Errorf("terminal %s", jsonText(o.terminal()))
			}
			if pids := waitGone(marker, 5*time.Second); len(pids) > 0 {
				t.Errorf("subject survived: %v", pids)
			}
		})
	}
}

// TestSIGKILL: nothing survives a SIGKILLed supervisor (the sandbox's init
// sees its liveness pipe close), no partial file stands in for the
// transcript, and the next run's sweep removes the dead run's state.
func TestSIGKILL(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	marker := "tv-sigkill-" + fmt.Sprint(os.Getpid())
	cmd, out := startChild(t, marker)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if pids := waitGone(marker, 5*time.Second); len(pids) > 0 {
		t.Errorf("subject survived: %v", pids)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
		t.Errorf("files left where the transcript would be: %v", ents)
	}
	if _, err := sandbox.Sweep(env.stateDir); err != nil {
		t.Errorf("sweep: %v", err)
	}
}
