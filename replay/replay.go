package replay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/termverify/termverify-sandbox/supervisor"
	"github.com/termverify/termverify-sandbox/transcript"
)

// NotRun says why src never ran, "" when it did: it ended
// run.unsupported, or run.failed with no observation of a running subject
// (the readiness observation never came). Upstream's rule: only an
// observation whose process is absent or running shows that the run
// reached execution. A source that never ran has nothing to replay.
func NotRun(src *transcript.Transcript) string {
	last := &src.Records[len(src.Records)-1]
	if u, ok := last.Refusal(); ok {
		return fmt.Sprintf("the source ended run.unsupported (%s, %s): %s", u.Constraint, u.Code, u.Message)
	}
	f, ok := last.Failure()
	if !ok {
		return ""
	}
	for i := range src.Records {
		if reachedExecution(&src.Records[i]) {
			return ""
		}
	}
	return fmt.Sprintf("the source ended run.failed (%s) before any observation of a running subject: %s", f.Code, f.Message)
}

// reachedExecution reports whether r is an observation of a running
// subject: its process member is absent or running.
func reachedExecution(r *transcript.Record) bool {
	o, ok := r.Observation()
	return ok && (o.Process == nil || !o.Process.Exited)
}

// Options are what a replay takes from its caller rather than from its
// source.
type Options struct {
	// RunID is the new run's id; "" keeps the source's. The subject reads
	// it in session.hello (the echo subject echoes it in its state), so
	// another id is another input.
	RunID string
	// Mode is the replay's run mode; it must be the one the source was
	// recorded in.
	Mode supervisor.Mode
}

// ModeError is a source recorded in a mode other than the replay's: a
// replay would diverge at every observation, having compared nothing
// useful.
type ModeError struct {
	Recorded supervisor.Mode // the source's mode
}

func (e *ModeError) Error() string {
	if e.Recorded == supervisor.ModePTY {
		return "the source was recorded in PTY mode (its terminal receipt names the sandbox's pty)"
	}
	return "the source was recorded over control/v1"
}

// InputsError is a source with inputs the replay's mode cannot carry:
// input.mouse and input.clipboard_set over control/v1.
type InputsError struct {
	// Inputs names each such kind once, with the seq of its first record:
	// "input.mouse (first at seq 9), ...".
	Inputs string
}

func (e *InputsError) Error() string {
	return "the source has inputs a control/v1 subject cannot receive: " + e.Inputs
}

// Request is the supervisor request that replays src: src's run id
// (unless o.RunID), config and replay subject, with the subject's
// adapter and platform unset (they are the recorder's and the host's, and
// recorded anew: whether they match is reported, not enforced), and src's
// inputs exactly as recorded, Replay set so that none is added. It refuses
// a source recorded in the other mode (*ModeError) or one with inputs the
// mode cannot carry (*InputsError). It does not check NotRun, which the
// caller reports. The caller adds what a run needs beyond its source:
// roots, isolation, limits, deadlines, the subject's argv and the paths.
func Request(src *transcript.Transcript, o Options) (supervisor.Request, error) {
	var req supervisor.Request
	if recorded := modeOf(src); recorded != o.Mode {
		return req, &ModeError{Recorded: recorded}
	}
	kinds := o.Mode.InputKinds()
	if bad := unsendable(src, kinds); bad != "" {
		return req, &InputsError{Inputs: bad}
	}
	req.RunID = o.RunID
	if req.RunID == "" {
		req.RunID = src.RunID
	}
	req.Config = src.Config()
	subj, err := src.Subject()
	if err != nil {
		return req, fmt.Errorf("the source's subject: %w", err)
	}
	subj.Adapter, subj.Platform = transcript.Selector{}, nil
	req.Subject = subj
	if req.Inputs, err = src.Inputs(kinds...); err != nil {
		return req, fmt.Errorf("the source's inputs: %w", err)
	}
	req.PTY, req.Replay = o.Mode == supervisor.ModePTY, true
	return req, nil
}

// modeOf is the mode src was recorded in.
func modeOf(src *transcript.Transcript) supervisor.Mode {
	if src.PTYMode() {
		return supervisor.ModePTY
	}
	return supervisor.ModeControl
}

// unsendable names the source's inputs whose kinds are not among kinds,
// each kind once with its first seq; "" when there are none.
func unsendable(t *transcript.Transcript, kinds []string) string {
	var found []string
	seen := map[string]bool{}
	for i := range t.Records {
		r := &t.Records[i]
		if !strings.HasPrefix(r.Kind, "input.") || slices.Contains(kinds, r.Kind) || seen[r.Kind] {
			continue
		}
		seen[r.Kind] = true
		found = append(found, fmt.Sprintf("%s (first at seq %d)", r.Kind, r.Seq))
	}
	return strings.Join(found, ", ")
}
