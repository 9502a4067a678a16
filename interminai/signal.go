package interminai

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ParseSignal reads a signal the way `kill --signal` and KILL's "signal"
// member give it: a name with or without "SIG", in any case ("SIGTERM",
// "term"), or a decimal number ("15"). Only the signals Linux names are
// accepted (1 to 31 here); anything else, "NOTASIGNAL", "0", "9999" or
// " 9", is an *Error with RuleSignal and the message "Invalid signal: X".
func ParseSignal(s string) (syscall.Signal, error) {
	sig, err := parseSignal(s)
	if err != nil {
		return 0, err
	}
	return sig, nil
}

func parseSignal(s string) (syscall.Signal, *Error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		// Digits only: strconv alone would also take "+9".
		if n, err := strconv.Atoi(s); err == nil && n > 0 && unix.SignalName(syscall.Signal(n)) != "" {
			return syscall.Signal(n), nil
		}
		return 0, invalidSignal(s)
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, invalidSignal(s)
}

func invalidSignal(s string) *Error {
	return &Error{Rule: RuleSignal, Offset: -1, msg: "Invalid signal: " + s}
}

// SignalName is the name KILL's reply gives in "signal_sent": "SIGTERM".
// It is "" for a signal ParseSignal would not accept.
func SignalName(sig syscall.Signal) string {
	return unix.SignalName(sig)
}

// ExitStatus is the exit code STATUS and WAIT report for a program that
// ended with ws: its own status when it exited, 128+signal when a signal
// killed it (the shell's convention, which interminai's clients and the
// CLI's exit code follow), and -1 when ws is neither (stopped, continued).
func ExitStatus(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return -1
}
