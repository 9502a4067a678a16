package sandbox

import (
	"errors"
	"fmt"
)

// Sentinels callers branch on. Each is wrapped with the operation and object.
var (
	// ErrInvalidSpec: Validate rejected the Spec (see *SpecError).
	ErrInvalidSpec = errors.New("invalid sandbox spec")
	// ErrNoNamespace: the kernel or the host's privileges refused a
	// namespace the sandbox needs (probe downgrades the tier on it).
	ErrNoNamespace = errors.New("namespace unavailable")
	// ErrNotVerified: a mechanism was set up but its check failed, so no os
	// tier may be claimed for it; the sandbox is not started.
	ErrNotVerified = errors.New("sandbox mechanism not verified")
	// ErrSubjectExec: the subject could not be executed inside the sandbox
	// (see *ExecError for the shell-style status).
	ErrSubjectExec = errors.New("subject not executable")
	// ErrDestroyed: Signal was called on a sandbox after Destroy.
	ErrDestroyed = errors.New("sandbox destroyed")
	// ErrSymlinkPath: a host path the sandbox maps (the root, a --rootfs
	// entry) is or passes through a symbolic link, which a subject or a
	// local user could redirect; it is refused, never followed.
	ErrSymlinkPath = errors.New("symbolic link in a mapped host path")
	// ErrCannotDropRoot: isolation none as root cannot switch the subject
	// to an unprivileged uid (no CAP_SETUID or CAP_SETGID), so it refuses
	// rather than run the subject as root.
	ErrCannotDropRoot = errors.New("isolation none needs CAP_SETUID and CAP_SETGID to drop root; run with them, or not as root")
	// ErrNoIDRange: the supervisor is root in a user namespace that maps
	// no range of ids besides its own (a rootless container without
	// subordinate ids), so a sandbox cannot be given an unprivileged uid
	// of its own; it refuses rather than run the subject as root.
	ErrNoIDRange = errors.New("this user namespace maps no range of ids for a per-sandbox uid: give the container subordinate ids (rootless Podman: /etc/subuid and /etc/subgid entries for the user; see docs/CONTAINERS.md)")
	// ErrLimitNotEnforced: Limits.Enforce is set and a requested limit
	// could not be applied and verified; the subject was not started.
	ErrLimitNotEnforced = errors.New("resource limit not enforced")
	// ErrUnsupportedArch: no seccomp filter is built for this architecture.
	ErrUnsupportedArch = errors.New("seccomp filter not available for this architecture")
)

// ExecError reports that the init could not execute the subject. Code is
// what a shell would exit with: 127 for "not found", 126 for "found but not
// executable".
type ExecError struct {
	Path string // Args[0] as given
	Code int
	Msg  string // the init's diagnosis, e.g. "exec: no such file or directory"
	ID   string // the sandbox Start made and released (see FailedID)
}

func (e *ExecError) Error() string {
	return fmt.Sprintf("exec %s in sandbox: %s (status %d)", e.Path, e.Msg, e.Code)
}

// Is makes errors.Is(err, ErrSubjectExec) true.
func (e *ExecError) Is(target error) bool { return target == ErrSubjectExec }

// StepError names the start step that failed and the object it worked on.
type StepError struct {
	Step   string // "state dir", "skeleton root", "create container", "start init", "verify", ...
	Object string // a path, an id, a mechanism name
	// ID is the sandbox Start had made before the step failed (and has
	// released since): the name of its state entry and cgroups. It is ""
	// when the step came before the id (see FailedID).
	ID  string
	Err error
}

func (e *StepError) Error() string {
	if e.Object == "" {
		return fmt.Sprintf("sandbox %s: %v", e.Step, e.Err)
	}
	return fmt.Sprintf("sandbox %s %s: %v", e.Step, e.Object, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

func stepErr(step, object string, err error) error {
	if err == nil {
		return nil
	}
	return &StepError{Step: step, Object: object, Err: err}
}

// FailedID returns the id of the sandbox that a failed Start had made
// before it failed, "" when it failed before making one (or err is not
// Start's). Start has released that sandbox; the id is what an evidence
// file records and what a test checks for leaked state and cgroups.
func FailedID(err error) string {
	if se, ok := errors.AsType[*StepError](err); ok {
		return se.ID
	}
	if ee, ok := errors.AsType[*ExecError](err); ok {
		return ee.ID
	}
	return ""
}

// withID puts the id of a sandbox that failed to start into err, which
// Start's steps return as a *StepError or an *ExecError.
func withID(err error, id string) error {
	if se, ok := errors.AsType[*StepError](err); ok {
		se.ID = id
	}
	if ee, ok := errors.AsType[*ExecError](err); ok {
		ee.ID = id
	}
	return err
}
