package interminai

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

func TestParseSignal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want syscall.Signal // 0: refused with RuleSignal
	}{
		{"SIGTERM", syscall.SIGTERM},
		{"TERM", syscall.SIGTERM},
		{"term", syscall.SIGTERM},
		{"SigInt", syscall.SIGINT},
		{"15", syscall.SIGTERM},
		{"9", syscall.SIGKILL},
		{"09", syscall.SIGKILL},
		{"SIGKILL", syscall.SIGKILL},
		{"HUP", syscall.SIGHUP},
		{"SIGQUIT", syscall.SIGQUIT},
		{"SIGUSR1", syscall.SIGUSR1},
		{"12", syscall.SIGUSR2},
		{"SIGWINCH", syscall.SIGWINCH},
		{"31", syscall.SIGSYS},
		{"NOTASIGNAL", 0},
		{"9999", 0},
		{"0", 0},
		{"32", 0},
		{"", 0},
		{"SIG", 0},
		{"+9", 0},
		{"-9", 0},
		{" 9", 0},
		{"9 ", 0},
		{"SIGSIGTERM", 0},
		{"SIG15", 0},
		{"99999999999999999999", 0},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSignal(tc.in)
			if tc.want == 0 {
				e, ok := errors.AsType[*Error](err)
				if !ok || e.Rule != RuleSignal {
					t.Fatalf("ParseSignal(%q) = %v, %v; want rule %s", tc.in, got, err, RuleSignal)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSignal(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestSignalTable holds the seed's "Signal Mapping" table: each name
// parses to its number and the number back to the name.
func TestSignalTable(t *testing.T) {
	for name, num := range map[string]int{
		"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGKILL": 9, "SIGTERM": 15, "SIGUSR1": 10, "SIGUSR2": 12,
	} {
		if sig, err := ParseSignal(name); err != nil || int(sig) != num {
			t.Errorf("ParseSignal(%s) = %d, %v; want %d", name, sig, err, num)
		}
		if got := SignalName(syscall.Signal(num)); got != name {
			t.Errorf("SignalName(%d) = %q, want %q", num, got, name)
		}
	}
}

// TestExitStatus runs real programs: one that exits with a status, and
// ones a signal kills, whose code is 128+signal.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         int
	}{
		{"exit 0", "exit 0", 0},
		{"exit 3", "exit 3", 3},
		{"SIGTERM", "kill -TERM $$", 128 + 15},
		{"SIGKILL", "kill -KILL $$", 128 + 9},
		{"SIGINT", "kill -INT $$", 128 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			_ = cmd.Run() // a non-zero status is the point
			if cmd.ProcessState == nil {
				t.Fatal("the shell did not run")
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if got := ExitStatus(ws); got != tc.want {
				t.Fatalf("ExitStatus(%v) = %d, want %d", ws, got, tc.want)
			}
		})
	}
}
