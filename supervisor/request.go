package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Default deadlines. They are host abort policy, never evidence: a
// deadline expiry ends the run with run.failed and no exit record.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultEpochTimeout     = 10 * time.Second
	DefaultRunTimeout       = 5 * time.Minute
)

// DefaultStderrLimit is the default cap of the --stderr file.
const DefaultStderrLimit = 16 << 20

// Deadlines bound the run. Handshake bounds everything from session.hello
// to the subject's reply; Epoch bounds one whole epoch (writing the input,
// every diagnostic, the closing message) and also the stop drain; Run
// bounds the whole run, sandbox start and teardown included. Zero picks
// the default.
type Deadlines struct {
	Handshake, Epoch, Run time.Duration
}

func (d Deadlines) withDefaults() Deadlines {
	if d.Handshake <= 0 {
		d.Handshake = DefaultHandshakeTimeout
	}
	if d.Epoch <= 0 {
		d.Epoch = DefaultEpochTimeout
	}
	if d.Run <= 0 {
		d.Run = DefaultRunTimeout
	}
	return d
}

// Request is one run: what to run, with which configuration and inputs,
// under which policy, and where to write the evidence.
type Request struct {
	RunID   string
	Config  config.Config
	Subject transcript.Subject // replay selectors; Adapter is set by Run
	// Inputs are the input script: input.text, input.key, input.resize,
	// input.clock_advanced and input.stop (the kinds control/v1 can
	// carry), and in PTY mode also input.mouse and input.clipboard_set
	// (Mode.InputKinds). Run appends input.stop when the script does not end
	// with one.
	Inputs []input.Input

	// PTY runs the subject as an unmodified terminal program on a
	// pseudoterminal of the sandbox's own (run --pty, docs/PTY.md)
	// instead of over control/v1. It needs the os backend: elsewhere the
	// terminal receipt is refused (run.unsupported).
	PTY bool
	// ReadyMarker (PTY mode only) closes an epoch when the program prints
	// upstream's readiness marker, <<termverify.ready:TOKEN>>, given to it
	// in TERMVERIFY_READY_MARKER, instead of by quiesce. The token is
	// random per run (input echo cannot forge it) and the marker is taken
	// out of the output (transcripts never hold it); input text holding
	// the marker's prefix is refused before anything starts, as upstream
	// refuses it.
	ReadyMarker bool

	Args   []string          // the subject's argv, resolved inside the sandbox
	Roots  map[string]string // root_id → host directory (--root ID=DIR)
	RootFS string            // optional complete root (--rootfs)

	Isolation receipts.Isolation                    // "" means auto
	Require   map[receipts.Constraint]receipts.Tier // minimum tier per constraint
	Limits    sandbox.Limits                        // cgroup limits; zero fields mean no limit
	StateDir  string                                // sandbox state; "" is sandbox.DefaultStateDir()
	Deadlines Deadlines

	// TranscriptPath is where the transcript goes: written to an unnamed
	// temporary file in the same directory, fsynced, and linked into place
	// only when complete. Its directory (and EvidencePath's) is opened
	// once before the run, refused if any component is a symbolic link,
	// and the file is linked relative to that descriptor. When it is empty, Transcript receives the
	// records as they are written (the CLI's "-").
	TranscriptPath string
	Transcript     io.Writer
	// EvidencePath, if set, receives the volatile host facts (JSON).
	EvidencePath string
	// StderrPath, if set, receives the subject's stderr, written by the
	// supervisor from a pipe (the subject never holds the file); it must be
	// a regular file or absent, reached without a symbolic link. Otherwise
	// stderr is discarded as upstream does. Either way its head and tail
	// go into the evidence file when EvidencePath is set.
	StderrPath string
	// OutputDir, when set, is the directory TranscriptPath, EvidencePath
	// and StderrPath are files of, opened once by the caller (batch's
	// --out, for all its entries): each path must be OutputDir's path
	// joined with one name, and the file is made relative to the
	// descriptor instead of resolving the directory again.
	OutputDir *safeout.Dir
	// StderrLimit caps the bytes written to StderrPath; what the subject
	// writes beyond it is counted and dropped, and the evidence says how
	// much. Zero picks DefaultStderrLimit.
	StderrLimit int64

	// Logf receives human-readable notes for the operator (what --isolation
	// auto downgraded, for instance). Nil discards them.
	Logf func(format string, args ...any)

	// Replay marks Inputs as a recorded script replayed as is (the replay
	// command): no input.stop is appended, and when the inputs run out
	// with the run still open, the run ends run.failed with the code
	// CodeReplayNotTerminated instead of a stop being invented.
	Replay bool

	// NamespaceTrial, when set, replaces sandbox.NamespaceTrial for
	// --isolation auto: a batch shares one memo of it across its runs
	// (NewTrialMemo), since the trial tests lasting properties of the
	// host. Nil runs the trial for this run.
	NamespaceTrial func() error

	hooks hooks // this package's test seams (plan.go)
}

// UsageError is a request that cannot be run as given: nothing was started
// and no transcript was written.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// checkScript refuses what control/v1 cannot carry or the transcript would
// refuse, and appends input.stop when missing.
// Without addStop (a replay) nothing is appended.
func checkScript(in []input.Input, addStop bool, kinds []string) ([]input.Input, error) {
	out := make([]input.Input, 0, len(in)+1)
	var check input.Checker
	for i, x := range in {
		if err := check.Check(x, kinds...); err != nil {
			return nil, fmt.Errorf("input %d: %w", i+1, err)
		}
		if _, stop := x.(input.Stop); stop && i != len(in)-1 {
			return nil, fmt.Errorf("input %d: input.stop must be the last input", i+1)
		}
		out = append(out, x)
	}
	if !addStop {
		return out, nil
	}
	if len(out) == 0 {
		return append(out, input.Stop{}), nil
	}
	if _, stop := out[len(out)-1].(input.Stop); !stop {
		out = append(out, input.Stop{})
	}
	return out, nil
}

// CodeReplayNotTerminated is the error code of a replay whose recorded
// inputs ran out while the run was still open (Request.Replay).
const CodeReplayNotTerminated = "replay-not-terminated"

// RunFile is a parsed request file: {"run_id", "config", "subject"}.
type RunFile struct {
	RunID   string
	Config  config.Config
	Subject transcript.Subject
}

// ReadRunFile reads a request file. subject holds the replay selectors
// without adapter (this tool's own id and version fill it); a subject
// naming another adapter is refused; platform, when absent, is filled from
// the host by Run.
func ReadRunFile(path string) (RunFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return RunFile{}, fmt.Errorf("request file: %w", err)
	}
	defer f.Close()
	return readRunFile(f, path)
}

// MaxRequestBytes bounds a request file: its config and subject are
// recorded in one transcript record (run.started) and sent in one control
// message (session.hello), and each is one line of at most
// canon.MaxLineBytes. Whitespace counts too.
const MaxRequestBytes = canon.MaxLineBytes

// readRunFile reads and parses a request file from r, refusing it as soon
// as more than MaxRequestBytes arrive; name is for messages.
func readRunFile(r io.Reader, name string) (RunFile, error) {
	data, err := readAtMost(r, MaxRequestBytes)
	if err != nil {
		return RunFile{}, fmt.Errorf("request file %s: %w", name, err)
	}
	rf, err := ParseRunFile(data)
	if err != nil {
		return RunFile{}, fmt.Errorf("request file %s: %w", name, err)
	}
	return rf, nil
}

// SizeError is a request file refused by its size limit while it was read:
// at most Limit+1 bytes of it were read.
type SizeError struct {
	Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("larger than the limit of %d bytes (refused after reading %d)", e.Limit, e.Limit+1)
}

// readAtMost reads r to its end, or fails with a *SizeError as soon as
// more than limit bytes arrive: an oversized input is never read whole.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	// Size the buffer once when the reader is a file that says its size.
	if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			buf.Grow(int(min(fi.Size(), limit)) + 1)
		}
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, &SizeError{Limit: limit}
	}
	return buf.Bytes(), nil
}

// ParseRunFile parses the bytes of a request file (JSON, strict: no
// duplicate members, no unknown members outside x-*). The config is
// config.Decode's, the subject transcript.DecodeSubject's; a subject that
// names an adapter other than this tool is refused.
func ParseRunFile(data []byte) (RunFile, error) {
	var rf RunFile
	v, _, err := canon.Decode(bytes.TrimSpace(data))
	if err != nil {
		return rf, err
	}
	if missing, unknown := v.CheckClosed([]string{"run_id", "config", "subject"}, nil); missing != "" {
		return rf, fmt.Errorf("request: missing member %s", missing)
	} else if unknown != "" {
		return rf, fmt.Errorf("request: unknown member %s", canon.Quote(unknown))
	}
	id, _ := v.Get("run_id")
	if id.Kind != canon.String || !config.ValidIdentifier(id.Str) {
		return rf, errors.New("run_id must be a string matching [a-z0-9._-]+")
	}
	rf.RunID = id.Str
	cv, _ := v.Get("config")
	if rf.Config, err = config.Decode(cv); err != nil {
		return rf, err
	}
	sv, _ := v.Get("subject")
	if rf.Subject, err = transcript.DecodeSubject(sv); err != nil {
		return rf, err
	}
	// The adapter is recorded, not requested: Run names this tool.
	if a := rf.Subject.Adapter; a != (transcript.Selector{}) && (a.ID != receipts.AdapterID || a.Version != receipts.AdapterVersion) {
		return rf, fmt.Errorf("subject adapter %s %s: this tool is %s %s and records itself as the adapter; drop the member",
			a.ID, a.Version, receipts.AdapterID, receipts.AdapterVersion)
	}
	return rf, nil
}

// ParseInputs reads an input script with input.ReadScript (JSONL, one
// {"kind", "payload"} input per line, limits enforced while reading),
// admitting only the kinds the mode carries (Mode.InputKinds). The first
// bad line is refused with an *input.Error naming it; nothing is started.
func ParseInputs(r io.Reader, m Mode) ([]input.Input, error) {
	in, err := input.ReadScript(r, m.InputKinds()...)
	if err != nil {
		return nil, fmt.Errorf("input script: %w", err)
	}
	return in, nil
}

// ReadInputsFile opens the input script at path and parses it with
// ParseInputs; errors name the file.
func ReadInputsFile(path string, m Mode) ([]input.Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("input script: %w", err)
	}
	defer f.Close()
	in, err := ParseInputs(f, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}
