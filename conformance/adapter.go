package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Scenario is one adapter or PTY case, ready to run: paths are absolute.
type Scenario struct {
	Request, Inputs string
	Subject         []string
	PTY             bool
	Root            string // the directory mapped as the request's root "app"
	Handshake       time.Duration
	Epoch           time.Duration
}

// An Adapter runs a scenario and writes its transcript to out. An error
// means no transcript was written (a usage or host error); a run that
// failed is a transcript that says so.
type Adapter interface {
	Run(ctx context.Context, sc Scenario, out string) error
}

// CommandAdapter is an adapter's command line, with run's flags appended
// (docs/CONFORMANCE.md):
//
//	ARGV... --request R --inputs I --root app=DIR --transcript OUT
//	        --handshake-timeout Dms --epoch-timeout Dms [--pty] -- SUBJECT...
//
// Exit status 0 or 1 both mean a transcript was written; anything else
// means none was. Our own adapter is `termverify-sandbox run`.
type CommandAdapter struct {
	Argv []string
}

// Run runs the command for sc.
func (a CommandAdapter) Run(ctx context.Context, sc Scenario, out string) error {
	if len(a.Argv) == 0 {
		return errors.New("adapter: empty command")
	}
	args := append([]string{}, a.Argv[1:]...)
	args = append(args, "--request", sc.Request, "--inputs", sc.Inputs, "--root", "app="+sc.Root,
		"--transcript", out,
		"--handshake-timeout", strconv.FormatInt(sc.Handshake.Milliseconds(), 10)+"ms",
		"--epoch-timeout", strconv.FormatInt(sc.Epoch.Milliseconds(), 10)+"ms")
	if sc.PTY {
		args = append(args, "--pty")
	}
	args = append(append(args, "--"), sc.Subject...)
	cmd := outsideCommand(ctx, a.Argv[0], args...)
	var stderr bytes.Buffer
	cmd.Stderr = &limited{w: &stderr, n: 16 << 10}
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == 1 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("adapter %s: %w: %s", a.Argv[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// ignores are the only parts of a transcript a scenario's comparison
// leaves out, besides run_id (never compared) and x- members at any
// depth (dropped in differ): the adapter's identity.
var ignores = []string{"run.started:payload.subject.adapter"}

// differ compares a scenario's transcript with its golden one and
// returns "" when they match, else where they first differ.
func differ(golden, got []byte) (string, error) {
	var igs []compare.Ignore
	for _, s := range ignores {
		ig, err := compare.ParseIgnore(s)
		if err != nil {
			return "", err
		}
		igs = append(igs, ig)
	}
	g, err := transcript.Parse(golden)
	if err != nil {
		return "", fmt.Errorf("golden transcript: %w", err)
	}
	t, err := transcript.Parse(got)
	if err != nil {
		return "invalid transcript: " + err.Error(), nil
	}
	v := compare.Transcripts(g, t, igs...)
	for _, d := range v.Divergences {
		if d.LeftKind == "" || d.RightKind == "" {
			if d.LeftKind == "" {
				return fmt.Sprintf("seq %d: only in the result: %s", d.Seq, d.RightKind), nil
			}
			return fmt.Sprintf("seq %d: only in the golden: %s", d.Seq, d.LeftKind), nil
		}
		for _, diff := range d.Differences {
			if underExtension(diff.Path) {
				continue
			}
			return fmt.Sprintf("seq %d (%s): %s: golden %s, got %s", d.Seq, d.RightKind, diff.Path, short(diff.Left), short(diff.Right)), nil
		}
	}
	return "", nil
}

// underExtension reports whether a difference path lies in an x- member.
func underExtension(path string) bool {
	for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' }) {
		if strings.HasPrefix(seg, "x-") || strings.HasPrefix(seg, `"x-`) {
			return true
		}
	}
	return false
}

func short(p *string) string {
	if p == nil {
		return "absent"
	}
	s := *p
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
