package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// TestAutoNeverFallsBackAfterAFailedStart is the downgrade attack on
// --isolation auto: whoever can make the os start fail after namespaces
// were made (a rename race that fails verification) must not get the
// subject run without namespaces. With the namespace trial passing, an os
// start that fails for any reason fails the run, and no start without
// namespaces is ever attempted; a fallback there would run the subject
// under the direct runner, with fewer guarantees than asked for.
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
			req.hooks.startSandbox = func(ctx context.Context, s sandbox.Spec) (*sandbox.Sandbox, error) {
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

// TestTerminalMechanism is the step from what the sandbox applied for a
// PTY to the terminal's mechanism: os only with a terminal of the
// sandbox's own whose size check passed.
func TestTerminalMechanism(t *testing.T) {
	size := func(ok bool, reason string) sandbox.Applied {
		return sandbox.Applied{Mechanisms: []sandbox.MechanismCheck{
			{Name: "pid-namespace", Applied: true, Reason: "ok"},
			{Name: sandbox.MechanismTerminalSize, Applied: ok, Reason: reason},
		}}
	}
	cases := []struct {
		name    string
		console bool
		applied sandbox.Applied
		want    receipts.Tier
	}{
		{"size checked", true, size(true, "ok"), receipts.OS},
		{"size check failed", true, size(false, "24x80-is-1x1"), receipts.None},
		{"size not checked", true, sandbox.Applied{Mechanisms: []sandbox.MechanismCheck{{Name: "pid-namespace", Applied: true, Reason: "ok"}}}, receipts.None},
		{"no terminal", false, size(true, "ok"), receipts.None},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := terminalMechanism(tc.console, tc.applied)
			if m.Tier != tc.want {
				t.Fatalf("tier %q, want %q (%+v)", m.Tier, tc.want, m)
			}
			if m.Tier == receipts.OS && m.Word != receipts.MechanismPTY {
				t.Errorf("os terminal with mechanism %q, want %q", m.Word, receipts.MechanismPTY)
			}
			if m.Tier != receipts.OS && m.Reason == "" {
				t.Errorf("no reason for a terminal below os: %+v", m)
			}
		})
	}
}

// TestReceiptsFromWhatTheSandboxApplied starts real sandboxes whose
// report of what they applied says one mechanism is not in force, and
// checks the receipts the transcript records: never os for what was not
// applied; delivered where that is honest under --isolation auto; a
// refusal where it is not (--isolation os, an allow-list, a PTY).
func TestReceiptsFromWhatTheSandboxApplied(t *testing.T) {
	needSandbox(t)
	unconfined := sandbox.Confinement{Reason: "test-unapplied"}
	cases := []struct {
		name      string
		isolation receipts.Isolation
		allowList bool
		pty       bool
		edit      func(*sandbox.Applied) bool    // reports whether it found what it unapplies
		want      map[receipts.Constraint]string // tierOf
		refusal   string                         // run.unsupported's code; "" for a run that goes on
	}{
		{"auto, network unconfined: delivered", receipts.IsolationAuto, false, false,
			func(a *sandbox.Applied) bool { a.Network = unconfined; return true },
			map[receipts.Constraint]string{receipts.Filesystem: "os", receipts.Network: "delivered"}, ""},
		{"auto, filesystem unconfined: delivered", receipts.IsolationAuto, false, false,
			func(a *sandbox.Applied) bool { a.Filesystem = unconfined; return true },
			map[receipts.Constraint]string{receipts.Filesystem: "delivered", receipts.Network: "os"}, ""},
		{"os, filesystem unconfined: refused", receipts.IsolationOS, false, false,
			func(a *sandbox.Applied) bool { a.Filesystem = unconfined; return true },
			map[receipts.Constraint]string{receipts.Filesystem: "unsupported"}, receipts.CodeNotEnforced},
		{"auto, allow-list unconfined: refused", receipts.IsolationAuto, true, false,
			func(a *sandbox.Applied) bool { a.Network = unconfined; return true },
			map[receipts.Constraint]string{receipts.Filesystem: "os", receipts.Network: "unsupported"}, receipts.CodeUnsupported},
		{"os, allow-list unconfined: refused", receipts.IsolationOS, true, false,
			func(a *sandbox.Applied) bool { a.Network = unconfined; return true },
			map[receipts.Constraint]string{receipts.Filesystem: "os", receipts.Network: "unsupported"}, receipts.CodeNotEnforced},
		{"pty, terminal size unapplied: refused", receipts.IsolationOS, false, true,
			func(a *sandbox.Applied) bool {
				for i := range a.Mechanisms {
					if a.Mechanisms[i].Name == sandbox.MechanismTerminalSize {
						a.Mechanisms[i].Applied, a.Mechanisms[i].Reason = false, "test-unapplied"
						return true
					}
				}
				return false
			},
			map[receipts.Constraint]string{receipts.Terminal: "unsupported"}, receipts.CodeNotEnforced},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := exampleRequest(t)
			if tc.pty {
				req = ptyRequest(t, ptyRoot(t, nil), ptyRun{cols: 80, rows: 24, argv: []string{"/bin/sh", "-c", "sleep 5"}})
			}
			req.Isolation = tc.isolation
			if tc.allowList {
				req.Config.Network = config.Network{Mode: config.NetworkAllowList,
					Allowed: []config.HostPort{{Host: "127.0.0.1", Port: 9}}}
			}
			edited := false
			req.hooks.applied = func(box *sandbox.Sandbox) sandbox.Applied {
				a := box.Applied()
				a.Mechanisms = slices.Clone(a.Mechanisms)
				edited = tc.edit(&a)
				return a
			}
			o := runCase(t, req)
			if !edited {
				t.Fatal("the sandbox's Applied was never consulted, or lacks the mechanism to unapply")
			}
			for c, want := range tc.want {
				if got := o.tierOf(c); got != want {
					t.Errorf("%s receipt %q, want %q", c, got, want)
				}
			}
			switch {
			case tc.refusal == "" && o.res.Outcome != transcript.KindRunFinished:
				t.Errorf("outcome %s, want run.finished", o.res.Outcome)
			case tc.refusal != "":
				if o.res.Outcome != transcript.KindRunUnsupported {
					t.Fatalf("outcome %s, want run.unsupported %s", o.res.Outcome, tc.refusal)
				}
				if code, _ := o.terminal().Get("code"); code == nil || code.Str != tc.refusal {
					t.Errorf("refusal code %s, want %s", jsonText(code), tc.refusal)
				}
			}
		})
	}
}
