package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// TestAutoNeverFallsBackAfterAFailedStart is the attack of issue #8 item
// 1: whoever can make the os start fail after namespaces were made (a
// rename race that fails verification) must not get the subject run
// without namespaces. With the namespace trial passing, an os start that
// fails for any reason fails the run, and no start without namespaces is
// ever attempted. Before the fix, every such failure but an exec error
// fell back to the direct runner - as root, no uid change.
func TestAutoNeverFallsBackAfterAFailedStart(t *testing.T) {
	needSandbox(t)
	if err := sandbox.NamespaceTrial(); err != nil {
		t.Skipf("namespaces unavailable here, auto falls back legitimately: %v", err)
	}
	failures := []struct {
		name string
		err  error
	}{
		{"verification", &sandbox.StepError{Step: "verify", Object: "workdir", Err: fmt.Errorf("%w: swapped", sandbox.ErrNotVerified)}},
		{"mount", &sandbox.StepError{Step: "start init", Object: "tvs-x", Err: fmt.Errorf("error mounting: invalid argument")}},
		{"no namespace after the trial", &sandbox.StepError{Step: "start init", Err: sandbox.ErrNoNamespace}},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			req := exampleRequest(t)
			req.Isolation = receipts.IsolationAuto
			var backends []sandbox.Isolation
			req.startSandbox = func(ctx context.Context, s sandbox.Spec) (*sandbox.Sandbox, error) {
				backends = append(backends, s.Isolation)
				if s.Isolation == sandbox.IsolationNone {
					return sandbox.Start(ctx, s)
				}
				return nil, tc.err
			}
			o := runCase(t, req)
			if len(backends) != 1 || backends[0] != sandbox.IsolationOS {
				t.Errorf("starts attempted: %v, want exactly one os start", backends)
			}
			if o.res.Outcome != transcript.KindRunFailed || o.errorCode() != transcript.CodeAdapterStartFailed {
				t.Errorf("outcome %s %s, want run.failed %s", o.res.Outcome, o.errorCode(), transcript.CodeAdapterStartFailed)
			}
			if got := o.detail("failure"); got != "sandbox-failed" {
				t.Errorf("failure detail %q, want sandbox-failed", got)
			}
		})
	}
}

// TestTrialMemo: a lasting answer (success, a refusal) is kept, a
// transient failure is asked again, and concurrent callers share one
// trial.
func TestTrialMemo(t *testing.T) {
	shortage := errors.New("namespace trial: failed for want of resources")
	refusal := fmt.Errorf("%w: EPERM", sandbox.ErrNoNamespace)
	cases := []struct {
		name    string
		results []error // what successive trials return
		calls   int
		want    []error // what successive memo calls return
		trials  int     // how many trials ran
	}{
		{"success kept", []error{nil}, 3, []error{nil, nil, nil}, 1},
		{"refusal kept", []error{refusal}, 3, []error{refusal, refusal, refusal}, 1},
		{"shortage retried", []error{shortage, shortage, nil}, 4, []error{shortage, shortage, nil, nil}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			memo := NewTrialMemo(func() error {
				err := c.results[min(n, len(c.results)-1)]
				n++
				return err
			})
			for i := range c.calls {
				if got := memo(); got != c.want[i] {
					t.Errorf("call %d: %v, want %v", i, got, c.want[i])
				}
			}
			if n != c.trials {
				t.Errorf("%d trials, want %d", n, c.trials)
			}
		})
	}
	var mu sync.Mutex
	n := 0
	memo := NewTrialMemo(func() error { mu.Lock(); n++; mu.Unlock(); return nil })
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { _ = memo() })
	}
	wg.Wait()
	if n != 1 {
		t.Errorf("%d trials for 16 concurrent callers, want 1", n)
	}
}

// TestOSUnavailable: the reason a failed os start gets is made of fixed
// words — the step, the verified mechanism — never a path or an id.
func TestOSUnavailable(t *testing.T) {
	notVerified := fmt.Errorf("%w: root is the host's", sandbox.ErrNotVerified)
	cases := []struct {
		err  error
		want string
	}{
		{&sandbox.StepError{Step: "verify", Object: "pivot-root", ID: "tvs-1", Err: notVerified}, "sandbox mechanism could not be verified: pivot-root"},
		{&sandbox.StepError{Step: "start init", Object: "tvs-0123", ID: "tvs-0123", Err: errors.New("EPERM")}, "sandbox step failed: start init"},
		{&sandbox.StepError{Step: "skeleton root", Object: "/run/x/tvs-1/root", Err: errors.New("ENOSPC")}, "sandbox step failed: skeleton root"},
		{&sandbox.ProcMaskedError{Masked: []string{"/proc/kcore"}, Err: errors.New("EPERM")}, "the host's masked /proc refuses a sandbox its procfs"},
		{notVerified, "sandbox mechanism could not be verified"},
		{errors.New("something else"), "sandbox could not be started"},
	}
	for _, c := range cases {
		if got := osUnavailable(c.err); got != c.want {
			t.Errorf("osUnavailable(%v) = %q, want %q", c.err, got, c.want)
		}
		if strings.Contains(osUnavailable(c.err), "tvs-") || strings.Contains(osUnavailable(c.err), "/run") {
			t.Errorf("osUnavailable(%v) names an id or a path", c.err)
		}
	}
}
