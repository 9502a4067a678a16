package sandbox

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/netpolicy"
)

func TestSpecValidate(t *testing.T) {
	dir := t.TempDir()
	ok := Spec{Args: []string{"/bin/true"}, Root: dir}
	cases := []struct {
		name  string
		mod   func(*Spec)
		field string // "" means valid
	}{
		{"minimal", func(*Spec) {}, ""},
		{"rootfs only", func(s *Spec) { s.Root, s.RootFS = "", dir }, ""},
		{"no args", func(s *Spec) { s.Args = nil }, "Args"},
		{"empty argv0", func(s *Spec) { s.Args = []string{""} }, "Args"},
		{"bad env", func(s *Spec) { s.Env = []string{"NOEQUALS"} }, "Env"},
		{"no root", func(s *Spec) { s.Root = "" }, "Root"},
		{"scratch root", func(s *Spec) { s.Root, s.ScratchRoot = "", true }, ""},
		{"scratch root, isolation none", func(s *Spec) { s.Root, s.ScratchRoot, s.Isolation = "", true, IsolationNone }, ""},
		{"scratch root with root", func(s *Spec) { s.ScratchRoot = true }, "ScratchRoot"},
		{"relative root", func(s *Spec) { s.Root = "rel" }, "Root"},
		{"missing root", func(s *Spec) { s.Root = dir + "/missing" }, "Root"},
		{"unknown isolation", func(s *Spec) { s.Isolation = "vm" }, "Isolation"},
		{"rootfs without namespaces", func(s *Spec) { s.Isolation, s.RootFS = IsolationNone, dir }, "RootFS"},
		{"allow-list without namespaces", func(s *Spec) {
			s.Isolation = IsolationNone
			s.Network = netpolicy.Policy{Mode: netpolicy.AllowList, Allowed: []netpolicy.HostPort{{Host: "127.0.0.1", Port: 80}}}
		}, "Network"},
		{"deny with entries", func(s *Spec) {
			s.Network = netpolicy.Policy{Mode: netpolicy.Deny, Allowed: []netpolicy.HostPort{{Host: "127.0.0.1", Port: 80}}}
		}, "Network"},
		{"tiny memory", func(s *Spec) { s.Limits.MemoryBytes = 1024 }, "Limits.MemoryBytes"},
		{"tiny pids", func(s *Spec) { s.Limits.Pids = 3 }, "Limits.Pids"},
		{"negative cpu", func(s *Spec) { s.Limits.CPUs = -1 }, "Limits"},
		{"relative state dir", func(s *Spec) { s.StateDir = "state" }, "StateDir"},
		{"bad hostname", func(s *Spec) { s.Hostname = "a/b" }, "Hostname"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.mod(&s)
			err := s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			se, isSpec := errors.AsType[*SpecError](err)
			if !isSpec || se.Field != tc.field || !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("err %v, want a *SpecError on %s", err, tc.field)
			}
		})
	}
}

func TestExitShellStatus(t *testing.T) {
	for _, tc := range []struct {
		e    Exit
		want int
	}{
		{Exit{Code: 0}, 0}, {Exit{Code: 3}, 3}, {Exit{Code: -1, Signal: "KILL"}, 137},
		{Exit{Code: -1, Signal: "ABRT"}, 134}, {Exit{Code: -1, Signal: "TERM"}, 143},
	} {
		if got := tc.e.ShellStatus(); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.e, got, tc.want)
		}
	}
}

// TestLastingRefusal: only the kernel's (or a security policy's)
// refusal errnos mean "no namespaces here" (which lets --isolation auto
// fall back); a shortage, a killed trial child, too many open files or
// anything unknown fails the run instead.
func TestLastingRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "fork/exec", Path: "/x", Err: unix.EPERM}, true},
		{unix.EINVAL, true},
		{unix.ENOSPC, true},
		{unix.EUSERS, true},
		{&hostnameRefusedError{unix.EPERM}, true},
		{&ProcMaskedError{Masked: []string{"/proc/kcore"}, Err: fmt.Errorf("mounting: %w", unix.EPERM)}, true},
		{&os.SyscallError{Syscall: "fork/exec", Err: unix.EAGAIN}, false},
		{fmt.Errorf("start: %w", unix.ENOMEM), false},
		{fmt.Errorf("clone: open /dev/null: %w", unix.EMFILE), false},
		{errors.New(`namespace trial child: signal: killed ("")`), false},
		{errors.New("other"), false},
	} {
		if got := lastingRefusal(tc.err); got != tc.want {
			t.Errorf("lastingRefusal(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
