package term

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/netpolicy"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// Isolation is what `term start --isolation` asks for.
type Isolation string

// The isolations term starts under. There is no "none" to ask for: term
// runs a program without the sandbox only when auto finds the os tier
// unavailable, and says so.
const (
	// IsolationOS (the default): the os-tier sandbox, or no start.
	IsolationOS Isolation = "os"
	// IsolationAuto: the os-tier sandbox where namespaces can be made;
	// where they cannot (the namespace trial's lasting refusal), the
	// program runs on the host (sandbox.IsolationNone) on a host pty,
	// and STATUS, RECEIPTS and start's stderr say so.
	IsolationAuto Isolation = "auto"
)

// ParseIsolation reads --isolation.
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(s) {
	case IsolationOS, IsolationAuto:
		return Isolation(s), nil
	case "none":
		return "", errors.New(`--isolation none: term runs a program without the sandbox only when --isolation auto finds the os tier unavailable; want os or auto`)
	}
	return "", fmt.Errorf("--isolation %q: want os or auto", s)
}

// ErrOSUnavailable: the os tier cannot be had on this host (namespaces
// cannot be made), and --isolation os was asked for.
var ErrOSUnavailable = errors.New("the os tier is unavailable on this host")

// osUnavailable is the fixed words of why namespaces cannot be made, as
// `run --isolation auto` says them (supervisor's osUnavailable).
func osUnavailable(err error) string {
	if errors.Is(err, sandbox.ErrProcMasked) {
		return "the host's masked /proc refuses a sandbox its procfs"
	}
	return "namespaces unavailable on this host"
}

// decideIsolation is the backend for cfg: os, unless cfg asks for auto
// and the namespace trial is refused for good, when it is none with the
// reason. A trial that failed for want of resources (a full pids cgroup:
// something another tenant could arrange) is no reason to run without
// the sandbox: the start fails instead, as `run`'s does.
// The reason is fixed words (what STATUS and RECEIPTS say); cause is the
// trial's error, with the details, for start's stderr.
func (cfg Config) decideIsolation() (iso sandbox.Isolation, reason string, cause, err error) {
	if cfg.Isolation != IsolationAuto {
		return sandbox.IsolationOS, "", nil, nil
	}
	terr := sandbox.NamespaceTrial()
	switch {
	case terr == nil:
		return sandbox.IsolationOS, "", nil, nil
	case !errors.Is(terr, sandbox.ErrNoNamespace):
		return "", "", nil, fmt.Errorf("isolation auto: the namespace trial failed, not with a refusal that would justify running without the sandbox: %w", terr)
	}
	return sandbox.IsolationNone, osUnavailable(terr), terr, nil
}

// explainOS turns a failed os start into ErrOSUnavailable when the
// namespace trial says the os tier cannot be had here at all, naming
// --isolation auto; any other failure is returned as it is.
func explainOS(err error) error {
	terr := sandbox.NamespaceTrial()
	if terr == nil || !errors.Is(terr, sandbox.ErrNoNamespace) {
		return err
	}
	return fmt.Errorf("%w: %s (%v); --isolation auto runs the program without the sandbox, saying so", ErrOSUnavailable, osUnavailable(terr), terr)
}

// directSpec is the os spec s turned into isolation none's, for a
// downgraded start: the program runs on the host, in the working
// directory, on a host pty of the same size (sandbox.Spec.Terminal under
// isolation none), with no network policy it could be held to. What
// cannot be had without namespaces is refused rather than pretended: an
// allow-list. The binds, masks and idmapping have no meaning without a
// mount namespace: the program reaches what its uid may reach.
//
// Who it runs as: never root. Started by root for a user (SUDO_UID,
// SUDO_GID: Config.Owner), as that user, so its files are the user's as
// they are under the os tier; started by root for no one, as the
// sandbox's own unprivileged uid (its files are that uid's, and a
// directory only root may enter cannot be the working directory: the
// start says so); started by anyone else, as the caller.
func (cfg Config) directSpec(s sandbox.Spec, dir string) (sandbox.Spec, error) {
	if s.Network.Mode == netpolicy.AllowList {
		return sandbox.Spec{}, errors.New("--allow needs a network namespace, which this host cannot make: an allow-list cannot be honestly delivered without one (drop --allow, or run where the os tier is available)")
	}
	d := sandbox.Spec{
		Isolation: sandbox.IsolationNone,
		Args:      s.Args,
		Env:       directEnviron(s.Env, cfg.Env, dir),
		Root:      dir,
		Network:   netpolicy.Policy{Mode: netpolicy.Deny},
		Limits:    s.Limits,
		Terminal:  s.Terminal,
		StateDir:  s.StateDir,
	}
	if o := s.BindOwner; o != nil && os.Geteuid() == 0 && o.UID > 0 && o.GID > 0 {
		d.UID, d.GID = o.UID, o.GID
	}
	return d, d.Validate()
}

// directEnviron is a downgraded program's environment: the os one, less
// HOME=/tmp (the host's /tmp is shared: a dotfile another user planted
// there would be the program's), with the caller's HOME, and the
// variables that deliver the filesystem root and the network mode to a
// program that cooperates (the receipts' spawn-env delivery).
func directEnviron(env, caller []string, dir string) []string {
	out := make([]string, 0, len(env)+3)
	for _, e := range env {
		if strings.HasPrefix(e, "HOME=") {
			continue
		}
		out = append(out, e)
	}
	if home := envValue(caller, "HOME"); home != "" {
		out = append(out, "HOME="+home)
	}
	return append(out, receipts.EnvFSRoot+"="+dir, receipts.EnvNetwork+"=deny")
}

// DowngradeWarning is what `term start` says on stderr when auto ran the
// program without the sandbox (Config.OnDowngrade's reason and cause).
func DowngradeWarning(reason string, cause error) string {
	return fmt.Sprintf("--isolation auto: the os tier is unavailable (%s: %v): the program runs WITHOUT the sandbox, on the host, with what its uid may reach of the filesystem and the network; term status and term receipts say so", reason, cause)
}

// downgradedReceipts are the filesystem, network and terminal receipts
// of a program that auto ran under isolation none: delivered, with the
// reason, never os. The terminal is a real kernel pty of the requested
// size (checked), but one of the host's devpts, not a sandbox's own:
// delivered, as a value handed over, not a confinement. a is what the
// sandbox reports applied.
func (d *Daemon) downgradedReceipts(c receipts.Constraint, a sandbox.Applied) interminai.ReceiptData {
	why := "not enforced: isolation auto ran the program without the sandbox: " + d.downgrade
	switch c {
	case receipts.Filesystem:
		return interminai.ReceiptData{Constraint: string(c), Status: string(receipts.Applied), Tier: string(receipts.Delivered),
			Mechanism: "spawn-env " + receipts.EnvFSRoot + "=" + d.dir, Reason: why}
	case receipts.Network:
		return interminai.ReceiptData{Constraint: string(c), Status: string(receipts.Applied), Tier: string(receipts.Delivered),
			Mechanism: "spawn-env " + receipts.EnvNetwork + "=deny", Reason: why}
	}
	if m, ok := a.Mechanism(sandbox.MechanismTerminalSize); !ok || !m.Applied {
		return unsupported(c, "the terminal's size was not verified")
	}
	return interminai.ReceiptData{Constraint: string(c), Status: string(receipts.Applied), Tier: string(receipts.Delivered),
		Mechanism: "host-pty", Reason: "a host pseudoterminal of the requested size, not a sandbox's own devpts: " + d.downgrade}
}
