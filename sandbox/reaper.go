package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opencontainers/runc/libcontainer"

	// The reaper (PID 1 of every sandbox) is C run from an ELF constructor
	// of this package: linking it is what makes a binary able to be one.
	"github.com/termverify/termverify-sandbox/internal/reaper"
)

// InitArg is argv[1] of libcontainer's own container-setup process.
const InitArg = "init"

// LibcontainerInit runs libcontainer's container-setup code; it never
// returns. Linking this package already dispatches it (init below); a
// binary's own dispatch is the fallback.
func LibcontainerInit() {
	libcontainer.Init()
}

// init hands libcontainer's container-setup process (argv[1] == InitArg,
// started by libcontainer with its init pipe in the environment) to
// libcontainer as early as Go allows. Packages are initialized in
// dependency order, so libcontainer and everything it needs are ready
// here, and nothing that only the command line needs has run yet: no
// cobra command tree, text/template, or regexp compiled at package level
// by packages above this one, whose cost every start would pay. The setup
// process runs once per sandbox, on the start's critical path. The
// environment check keeps an unrelated "init" argument to a binary that
// links this package out.
func init() {
	if len(os.Args) >= 2 && os.Args[1] == InitArg && os.Getenv(initPipeEnv) != "" {
		LibcontainerInit()
	}
}

// initPipeEnv is set by libcontainer (container_linux.go, newParentProcess)
// in the environment of every container-setup process it starts.
const initPipeEnv = "_LIBCONTAINER_INITPIPE"

// sandboxReaperArgs is the argv (from argv[1]) of the sandbox's PID-1
// reaper running the subject argv, with the seccomp filter it installs
// (socket(AF_UNIX) refused, seccomp.go).
func sandboxReaperArgs(subject []string) ([]string, error) {
	prog, err := buildFilter(false)
	if err != nil {
		return nil, err
	}
	return reaper.Args(reaper.ModeSandbox, prog, nil, 0, nil, subject), nil
}

// directReaperArgs is the argv (from argv[1]) of isolation none's reaper
// running the subject argv: the seccomp filter of a sandbox, except that
// socket(AF_UNIX) is allowed (a host subject shares the host's network
// and filesystem anyway), and the ids it switches to before it parks
// (nil: it keeps the caller's).
// fileBytes is the RLIMIT_FSIZE it sets on itself first (0: none);
// cgroupDirs its descriptors of the v1 cgroup directories it moves
// itself into (nil: none). terminal: its stdin is a host pty opened for
// the subject (console_direct.go), which it makes the subject's
// controlling terminal (reaper.ModeDirectTerminal).
func directReaperArgs(subject []string, ids *reaper.IDs, fileBytes int64, cgroupDirs []int, terminal bool) ([]string, error) {
	prog, err := buildFilter(true)
	if err != nil {
		return nil, err
	}
	mode := reaper.ModeDirect
	if terminal {
		mode = reaper.ModeDirectTerminal
	}
	return reaper.Args(mode, prog, ids, fileBytes, cgroupDirs, subject), nil
}

// reaperEvent is one parsed report line.
type reaperEvent struct {
	word string
	args []string
	line string
}

func readEvent(r *bufio.Reader) (reaperEvent, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && line == "" {
			return reaperEvent{}, io.EOF
		}
		if line == "" {
			return reaperEvent{}, err
		}
	}
	line = strings.TrimSuffix(line, "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return reaperEvent{}, fmt.Errorf("reaper report: empty line")
	}
	return reaperEvent{word: f[0], args: f[1:], line: line}, nil
}
