package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/netpolicy"
	"github.com/termverify/termverify-sandbox/ptyrecord"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// stdio is the subject's side of its three standard streams, handed to the
// sandbox; the caller closes them once the subject has its own copies.
type stdio struct{ in, out, errOut *os.File }

// launched is a subject that runs with its receipts settled.
type launched struct {
	outcome receipts.Outcome
}

// launch decides the receipts and starts the subject. The order is the
// honesty rule of PRODUCT.md §3: before each start the request is
// negotiated against what that backend can at best give, so that a run
// refused by policy (a non-UTC zone, --require, an unmapped root) starts
// nothing; after the start it is negotiated again against what the sandbox
// reports it applied and verified, so no receipt is stronger than what
// runs. It returns the started subject, or the ending it recorded. A
// returned sandbox (even with an ending) is the caller's to Destroy; a
// failed start has released its own.
func launch(ctx context.Context, req *plan, io stdio, rec *recorder, ev *evidence) (*launched, *sandbox.Sandbox, *ending) {
	backend := sandbox.IsolationOS
	assumed := receipts.Mechanism{Tier: receipts.OS}
	switch req.Isolation {
	case receipts.IsolationNone:
		backend, assumed = sandbox.IsolationNone, receipts.Mechanism{Tier: receipts.Delivered, Reason: "isolation none"}
	case receipts.IsolationAuto:
		// auto falls back only when namespaces cannot be made at all,
		// decided here, before anything is set up. A sandbox that fails
		// later (a failed verification, a mount gone wrong: possibly an
		// attack on a path) fails the run; it never turns into a run
		// without namespaces.
		trial := sandbox.NamespaceTrial
		if req.NamespaceTrial != nil {
			trial = req.NamespaceTrial
		}
		if err := trial(); err != nil {
			ev.StartErrors = append(ev.StartErrors, fmt.Sprintf("namespace trial: %v", err))
			if !errors.Is(err, sandbox.ErrNoNamespace) {
				// A shortage (a full pids cgroup, memory pressure), not a
				// refusal: another tenant could arrange one, so it is no
				// reason to run without namespaces.
				req.Logf("isolation auto: the namespace trial failed for want of resources (%v); not falling back", err)
				d := details{}.str("failure", FailureSandbox).str("phase", "spawn").str("during", "spawn").str("reason", "namespace trial: resources")
				return nil, nil, failedEnding(transcript.CodeAdapterStartFailed, "the sandbox could not be started: the namespace trial failed for want of resources", d)
			}
			req.Logf("isolation auto: the os tier is unavailable (%v); running without namespaces", err)
			backend, assumed = sandbox.IsolationNone, receipts.Mechanism{Tier: receipts.Delivered, Reason: osUnavailable(err)}
		}
	}
	out := receipts.Negotiate(negotiationRequest(req, backend, assumed, assumed, assumedTerminal(backend)))
	if out.Refusal != nil {
		return nil, nil, rec.refuse(out)
	}
	start := sandbox.Start
	if req.hooks.startSandbox != nil {
		start = req.hooks.startSandbox
	}
	box, err := start(ctx, buildSpec(req, backend, out, io))
	ev.noteStart(backend, box, err)
	if err == nil {
		a := box.Applied()
		if req.hooks.applied != nil {
			a = req.hooks.applied(box)
		}
		fs, nw := mechanisms(a.Filesystem, a.Network, req.Config.Network.Mode)
		term := req.adapter.terminal(box, a)
		real := receipts.Negotiate(negotiationRequest(req, backend, fs, nw, term))
		if real.Refusal != nil {
			return nil, box, rec.refuse(real)
		}
		for _, d := range real.Downgrades {
			req.Logf("downgraded %s", d)
		}
		warnUnenforced(req, a)
		ev.Downgrades = append(ev.Downgrades, real.Downgrades...)
		return &launched{outcome: real}, box, nil
	}
	if ctx.Err() == nil && !errors.Is(err, sandbox.ErrSubjectExec) {
		// The cause on the one stderr line, not only in --evidence.
		req.Logf("the %s sandbox could not be started: %v", backend, err)
	}
	switch {
	case ctx.Err() != nil:
		return nil, nil, spawnAborted(ctx, req.Deadlines)
	case errors.Is(err, sandbox.ErrSubjectExec):
		return nil, nil, spawnFailed(err)
	case backend == sandbox.IsolationNone:
		return nil, nil, spawnFailed(err)
	}
	// The os tier was not given. The reason word is what the receipt and
	// the operator see; the full error goes to evidence.
	reason := osUnavailable(err)
	if req.Isolation == receipts.IsolationOS {
		failed := receipts.Mechanism{Tier: receipts.None, Reason: reason}
		return nil, nil, rec.refuse(receipts.Negotiate(negotiationRequest(req, backend, failed, failed, failed)))
	}
	// auto, with namespaces available (the trial passed): whatever went
	// wrong was set up first, so running without namespaces now is the
	// downgrade an attacker would be aiming for. The run fails instead.
	req.Logf("isolation auto: the sandbox failed after namespaces were available (%v); not falling back", err)
	d := details{}.str("failure", FailureSandbox).str("phase", "spawn").str("during", "spawn").str("reason", reason)
	return nil, nil, failedEnding(transcript.CodeAdapterStartFailed, "the sandbox could not be started: "+reason, d)
}

// NewTrialMemo returns a namespace trial for Request.NamespaceTrial that
// runs trial (nil: sandbox.NamespaceTrial) once and then answers every later call with
// its result, when that result is lasting: success, or a refusal
// (sandbox.ErrNoNamespace: the kernel's or the host's lasting no). A
// transient failure (a resource shortage) is not kept: the next call
// tries again, as a run of its own would. Sharing it is safe in both
// directions: a kept success only means the os start is tried, and a run
// whose os start then fails fails (auto never falls back after the
// trial); a kept refusal is one the trial classified as lasting. A batch
// of 200 runs saves 199 trials (each a clone into five namespaces and a
// procfs mount). Safe for concurrent use.
func NewTrialMemo(trial func() error) func() error {
	if trial == nil {
		trial = sandbox.NamespaceTrial
	}
	var (
		mu   sync.Mutex
		done bool
		kept error
	)
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return kept
		}
		err := trial()
		if err == nil || errors.Is(err, sandbox.ErrNoNamespace) {
			done, kept = true, err
		}
		return err
	}
}

// warnUnenforced says on stderr which requested limits run without
// enforcement (best-effort; --limits enforce refuses instead). The
// evidence file has the same facts in its applied mechanisms.
func warnUnenforced(req *plan, a sandbox.Applied) {
	for _, m := range a.Unenforced() {
		req.Logf("limit not enforced: %s (%s); --limits enforce refuses such a run instead", m.Name, m.Reason)
	}
}

// osUnavailable names, deterministically, why a sandbox could not start.
func osUnavailable(err error) string {
	switch {
	case errors.Is(err, sandbox.ErrProcMasked):
		return "the host's masked /proc refuses a sandbox its procfs"
	case errors.Is(err, sandbox.ErrNoNamespace):
		return "namespaces unavailable on this host"
	case errors.Is(err, sandbox.ErrUnsupportedArch):
		return "no seccomp filter for this architecture"
	}
	// The step, so that the one line that ends a failed run says where
	// (the full error, with paths and ids, is on the line before it and
	// in the evidence). Only fixed words: a step name, and for a
	// verification the mechanism, never a path or an id, so that the
	// transcript stays the same from run to run.
	se, isStep := errors.AsType[*sandbox.StepError](err)
	switch {
	case errors.Is(err, sandbox.ErrNotVerified) && isStep && se.Step == "verify":
		return "sandbox mechanism could not be verified: " + se.Object
	case errors.Is(err, sandbox.ErrNotVerified):
		return "sandbox mechanism could not be verified"
	case isStep:
		return "sandbox step failed: " + se.Step
	}
	return "sandbox could not be started"
}

func negotiationRequest(req *plan, backend sandbox.Isolation, fs, nw, term receipts.Mechanism) receipts.Request {
	c := req.Config
	root, mapped := req.Roots[c.Filesystem.RootID]
	if backend == sandbox.IsolationOS {
		root = sandbox.Workdir
	}
	return receipts.Request{
		Seed: c.Seed, ClockInitialMS: c.Clock.InitialMS, Locale: c.Locale, Timezone: c.Timezone,
		TerminalCaps: len(c.Terminal.Capabilities),
		RootID:       c.Filesystem.RootID, RootMapped: mapped, RootDir: root,
		NetworkMode: c.Network.Mode, Isolation: req.Isolation, Require: req.Require,
		Filesystem: fs, Network: nw, PTY: req.adapter.mode() == ModePTY, Terminal: term,
	}
}

// mechanisms turns what the sandbox confines into negotiation input
// (ptyrecord.Mechanisms, which the term daemon's recorded sessions share).
func mechanisms(fs, nw sandbox.Confinement, mode string) (fsm, nwm receipts.Mechanism) {
	return ptyrecord.Mechanisms(fs, nw, mode)
}

// buildSpec is the sandbox for a backend. The environment is exactly the
// delivered variables (upstream's names, so an upstream subject runs
// unchanged) plus PATH; nothing of the supervisor's own environment leaks
// in. With the os tier the filesystem and network receipts carry no
// delivery, but TERMVERIFY_FS_ROOT and TERMVERIFY_NETWORK are still set
// for cooperative subjects that read them. The adapter adds its part
// (a PTY subject's terminal and its variables).
func buildSpec(req *plan, backend sandbox.Isolation, out receipts.Outcome, io stdio) sandbox.Spec {
	env := maps.Clone(out.Env)
	if backend == sandbox.IsolationOS {
		env[receipts.EnvFSRoot] = sandbox.Workdir
		env[receipts.EnvNetwork] = req.Config.Network.Mode
	}
	spec := sandbox.Spec{
		Isolation: backend,
		Args:      req.Args,
		Root:      req.Roots[req.Config.Filesystem.RootID],
		RootFS:    req.RootFS,
		Network:   networkPolicy(req.Config.Network),
		Limits:    req.Limits,
		Stdin:     io.in, Stdout: io.out, Stderr: io.errOut,
		StateDir: req.StateDir,
	}
	req.adapter.sandboxSpec(req, env, &spec)
	spec.Env = receipts.EnvList(env)
	return spec
}

func networkPolicy(n config.Network) netpolicy.Policy {
	p := netpolicy.Policy{Mode: netpolicy.Mode(n.Mode)}
	for _, hp := range n.Allowed {
		p.Allowed = append(p.Allowed, netpolicy.HostPort{Host: hp.Host, Port: int(hp.Port)})
	}
	return p
}

// spawnFailed is the taxonomy's spawn-failed: the child could not be
// started. The detail names the shell-style status, not host paths.
func spawnFailed(err error) *ending {
	d := details{}.str("failure", FailureSpawn).str("phase", "spawn").str("during", "spawn")
	msg := "the subject could not be started"
	if ee, ok := errors.AsType[*sandbox.ExecError](err); ok {
		d = d.num("status", int64(ee.Code))
		msg = fmt.Sprintf("the subject could not be started: %s", ee.Msg)
	}
	return failedEnding(transcript.CodeAdapterStartFailed, msg, d)
}

// spawnAborted is the run deadline or a signal arriving while the sandbox
// was being built: the handshake never began.
func spawnAborted(ctx context.Context, lim Deadlines) *ending {
	return abortEnding(context.Cause(ctx), phaseSpawn, "spawn", 0, lim)
}
