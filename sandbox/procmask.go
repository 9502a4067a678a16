package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// A nested sandbox mounts a fresh procfs at its /proc. Container runtimes
// mask paths of theirs (/proc/kcore, /proc/keys, ... over-mounted with
// /dev/null or an empty tmpfs; /proc/sys and others bound read-only over
// themselves). In a mount namespace owned by a user namespace that is not
// the initial one, the kernel refuses (EPERM) a new proc mount unless a
// proc mount with nothing locked over it is already visible
// (fs/namespace.c: mount_too_revealing), because the new mount would
// reveal what the masks hide. So the rootless path (always in a user
// namespace of its own) fails there at the proc mount, as does a root one
// inside a user-namespaced container. The outer /proc is never bound into
// the sandbox instead: that would show the host's processes.
//
// Nothing is refused before the start on the strength of mountinfo
// alone: it cannot show which mounts are locked, nor whether another,
// unmasked proc mount makes the new one allowed, so a guess could refuse
// a start the kernel would allow. The start's own failure at the proc
// mount, with masks in mountinfo, is the evidence.

// ErrProcMasked is matched (errors.Is) by the start error of a sandbox
// whose fresh procfs the kernel refused because the host's /proc has
// masked paths.
var ErrProcMasked = errors.New("a fresh procfs cannot be mounted in a nested sandbox")

// procMaskFix is what makes a fresh procfs mountable again.
const procMaskFix = "run the outer container with --security-opt unmask=/proc/* (podman), --security-opt systempaths=unconfined (Docker) or systemPaths: unmasked (Kubernetes procMount: Unmasked)"

// ProcMaskedError is a start that failed at the sandbox's proc mount
// while the host's /proc has masked paths.
type ProcMaskedError struct {
	Masked []string // mount points under /proc, from mountinfo
	Err    error    // libcontainer's start error
}

// maxMaskedShown bounds the paths a message lists (a runtime masks ~20).
const maxMaskedShown = 5

func (e *ProcMaskedError) Error() string {
	shown := e.Masked
	more := ""
	if len(shown) > maxMaskedShown {
		more = fmt.Sprintf(" and %d more", len(shown)-maxMaskedShown)
		shown = shown[:maxMaskedShown]
	}
	return fmt.Sprintf("the host's /proc has masked paths (%s%s); %v; %s (mounting proc failed: %v)",
		strings.Join(shown, ", "), more, ErrProcMasked, procMaskFix, e.Err)
}

func (e *ProcMaskedError) Is(target error) bool { return target == ErrProcMasked }
func (e *ProcMaskedError) Unwrap() error        { return e.Err }

// procMountFailed reports whether a libcontainer start error is the
// refusal of the sandbox's proc mount (rootfs.go's proc entry; the init's
// error comes back as text, so the text is what can be matched).
func procMountFailed(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, `mounting "proc" to rootfs at "/proc"`) &&
		strings.Contains(s, "operation not permitted")
}

// explainProcMount returns err, or, when it is the refusal of the proc
// mount and this mount namespace has masks under /proc, a
// ProcMaskedError naming them and the fix.
func explainProcMount(err error) error {
	if !procMountFailed(err) {
		return err
	}
	return withProcMasks(err)
}

// withProcMasks returns a refused proc mount's err as a ProcMaskedError
// naming the masks when this mount namespace has some, else err.
func withProcMasks(err error) error {
	info, rerr := ownMountinfo()
	if rerr != nil {
		return err
	}
	masked := procMasks(info)
	if len(masked) == 0 {
		return err
	}
	return &ProcMaskedError{Masked: masked, Err: err}
}

// ownMountinfo reads the mountinfo of this thread's mount namespace
// (libcontainer parks locked threads in other ones).
func ownMountinfo() ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return os.ReadFile("/proc/thread-self/mountinfo")
}

// harmlessUnderProc are mount points under /proc the kernel never counts
// as masks: their directories are permanently empty (register_sysctl_mount_point),
// so mounting over them hides nothing.
var harmlessUnderProc = map[string]bool{
	"/proc/sys/fs/binfmt_misc": true,
}

// procMasks lists, sorted and once each, the mount points strictly under
// /proc in a mountinfo text (proc(5)): what a runtime's masked and
// read-only paths look like there.
func procMasks(mountinfo []byte) []string {
	seen := map[string]bool{}
	for line := range strings.Lines(string(mountinfo)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if !strings.HasPrefix(mp, "/proc/") || harmlessUnderProc[mp] {
			continue
		}
		seen[mp] = true
	}
	out := make([]string, 0, len(seen))
	for mp := range seen {
		out = append(out, mp)
	}
	sort.Strings(out)
	return out
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
