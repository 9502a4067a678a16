package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
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
	// input.clock_advanced and input.stop (the kinds control/v1 can carry).
	// Run appends input.stop when the script does not end with one.
	Inputs []transcript.Input

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
	// StderrLimit caps the bytes written to StderrPath; what the subject
	// writes beyond it is counted and dropped, and the evidence says how
	// much. Zero picks DefaultStderrLimit.
	StderrLimit int64

	// afterOutputsOpened, when set (tests only), runs once the output
	// destinations are open and before the subject starts: the point at
	// which a hostile subject or local user could swap their directories.
	afterOutputsOpened func()

	// Logf receives human-readable notes for the operator (what --isolation
	// auto downgraded, for instance). Nil discards them.
	Logf func(format string, args ...any)

	// startSandbox replaces sandbox.Start in this package's tests, so that
	// a start failure of any kind can be produced deterministically.
	startSandbox func(context.Context, sandbox.Spec) (*sandbox.Sandbox, error)
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

// prepare checks the request and fills its defaults. Every refusal here
// happens before a file is created or a process started.
func (r *Request) prepare() error {
	if !config.ValidIdentifier(r.RunID) || len(r.RunID) > transcript.MaxRunIDBytes {
		return usagef("run id %q: want [a-z0-9._-]+, at most %d bytes", r.RunID, transcript.MaxRunIDBytes)
	}
	if len(r.Args) == 0 || r.Args[0] == "" {
		return usagef("no subject command given")
	}
	if r.TranscriptPath == "" && r.Transcript == nil {
		return usagef("no transcript destination given")
	}
	switch r.Isolation {
	case "":
		r.Isolation = receipts.IsolationAuto
	case receipts.IsolationOS, receipts.IsolationAuto, receipts.IsolationNone:
	default:
		return usagef("isolation %q: want os, auto or none", r.Isolation)
	}
	for id, dir := range r.Roots {
		if !config.ValidIdentifier(id) {
			return usagef("root %s=%s: %q is not a root id ([a-z0-9._-]+)", id, dir, id)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return usagef("root %s=%s: %v", id, dir, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return usagef("root %s=%s: %v", id, dir, err)
		}
		if !fi.IsDir() {
			return usagef("root %s=%s: not a directory", id, dir)
		}
		r.Roots[id] = abs
	}
	r.Deadlines = r.Deadlines.withDefaults()
	switch {
	case r.StderrLimit < 0:
		return usagef("stderr limit %d: want a positive byte count, or 0 for the default %d", r.StderrLimit, DefaultStderrLimit)
	case r.StderrLimit == 0:
		r.StderrLimit = DefaultStderrLimit
	}
	r.Subject.Adapter = transcript.Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion}
	if r.Subject.Platform == nil {
		r.Subject.Platform = &transcript.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	}
	inputs, err := checkScript(r.Inputs)
	if err != nil {
		return &UsageError{Err: err}
	}
	r.Inputs = inputs
	if r.Logf == nil {
		r.Logf = func(string, ...any) {}
	}
	return nil
}

// checkScript refuses what control/v1 cannot carry or the transcript would
// refuse, and appends input.stop when missing.
func checkScript(in []transcript.Input) ([]transcript.Input, error) {
	out := make([]transcript.Input, 0, len(in)+1)
	for i, x := range in {
		if err := checkInput(x); err != nil {
			return nil, fmt.Errorf("input %d: %w", i+1, err)
		}
		if _, stop := x.(transcript.Stop); stop && i != len(in)-1 {
			return nil, fmt.Errorf("input %d: input.stop must be the last input", i+1)
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return append(out, transcript.Stop{}), nil
	}
	if _, stop := out[len(out)-1].(transcript.Stop); !stop {
		out = append(out, transcript.Stop{})
	}
	return out, nil
}

func checkInput(x transcript.Input) error {
	switch v := x.(type) {
	case transcript.Text, transcript.Stop:
		return nil
	case transcript.Key:
		if !transcript.ValidChord(v.Keys) {
			return fmt.Errorf("input.key %q is not one canonical termverify.key/v1 chord", v.Keys)
		}
	case transcript.Resize:
		if v.Columns <= 0 || v.Rows <= 0 {
			return errors.New("input.resize needs positive columns and rows")
		}
	case transcript.ClockAdvanced:
		if v.DeltaMS <= 0 {
			return errors.New("input.clock_advanced needs delta_ms > 0")
		}
	case transcript.Mouse, transcript.ClipboardSet:
		return fmt.Errorf("%T has no termverify.control/v1 message: a control subject cannot receive it", x)
	default:
		return fmt.Errorf("unknown input %T", x)
	}
	return nil
}

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

// SizeError is an input file refused by its size limit while it was read:
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
// duplicate members, no unknown members outside x-*).
func ParseRunFile(data []byte) (RunFile, error) {
	var rf RunFile
	v, _, err := canon.Decode(bytes.TrimSpace(data))
	if err != nil {
		return rf, err
	}
	if err := closedObject(&v, "request", []string{"run_id", "config", "subject"}, nil); err != nil {
		return rf, err
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
	if rf.Subject, err = decodeSubject(sv); err != nil {
		return rf, fmt.Errorf("subject: %w", err)
	}
	return rf, nil
}

func decodeSubject(v *canon.Value) (transcript.Subject, error) {
	var s transcript.Subject
	if err := closedObject(v, "subject", []string{"application", "fixture", "normalizer", "state_schema"},
		[]string{"format", "adapter", "platform"}); err != nil {
		return s, err
	}
	if f, ok := v.Get("format"); ok && (f.Kind != canon.String || f.Str != transcript.SubjectFormat) {
		return s, fmt.Errorf("format must be %s", transcript.SubjectFormat)
	}
	ident := func(obj *canon.Value, name string) (string, error) {
		x, ok := obj.Get(name)
		if !ok || x.Kind != canon.String || !config.ValidIdentifier(x.Str) {
			return "", fmt.Errorf("%s must be a string matching [a-z0-9._-]+", name)
		}
		return x.Str, nil
	}
	selector := func(name string) (transcript.Selector, error) {
		x, _ := v.Get(name)
		if err := closedObject(x, name, []string{"id", "version"}, nil); err != nil {
			return transcript.Selector{}, err
		}
		id, err := ident(x, "id")
		if err != nil {
			return transcript.Selector{}, fmt.Errorf("%s: %w", name, err)
		}
		ver, err := ident(x, "version")
		if err != nil {
			return transcript.Selector{}, fmt.Errorf("%s: %w", name, err)
		}
		return transcript.Selector{ID: id, Version: ver}, nil
	}
	app, _ := v.Get("application")
	if err := closedObject(app, "application", []string{"id", "version", "build"}, nil); err != nil {
		return s, err
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{{"id", &s.Application.ID}, {"version", &s.Application.Version}, {"build", &s.Application.Build}} {
		if *f.dst, err = ident(app, f.name); err != nil {
			return s, fmt.Errorf("application: %w", err)
		}
	}
	if s.Fixture, err = selector("fixture"); err != nil {
		return s, err
	}
	if s.Normalizer, err = selector("normalizer"); err != nil {
		return s, err
	}
	if s.StateSchema, err = selector("state_schema"); err != nil {
		return s, err
	}
	if _, ok := v.Get("adapter"); ok {
		a, err := selector("adapter")
		if err != nil {
			return s, err
		}
		if a.ID != receipts.AdapterID || a.Version != receipts.AdapterVersion {
			return s, fmt.Errorf("adapter %s %s: this tool is %s %s and records itself as the adapter; drop the member",
				a.ID, a.Version, receipts.AdapterID, receipts.AdapterVersion)
		}
	}
	if p, ok := v.Get("platform"); ok {
		if err := closedObject(p, "platform", []string{"os", "architecture"}, nil); err != nil {
			return s, err
		}
		osName, err := ident(p, "os")
		if err != nil {
			return s, fmt.Errorf("platform: %w", err)
		}
		arch, err := ident(p, "architecture")
		if err != nil {
			return s, fmt.Errorf("platform: %w", err)
		}
		s.Platform = &transcript.Platform{OS: osName, Architecture: arch}
	}
	return s, nil
}

// closedObject checks that v is an object with every required member and
// no member outside required, optional and x-*.
func closedObject(v *canon.Value, what string, required, optional []string) error {
	if v.Kind != canon.Object {
		return fmt.Errorf("%s must be an object", what)
	}
	if missing, unknown := v.CheckClosed(required, optional); missing != "" {
		return fmt.Errorf("%s: missing member %s", what, missing)
	} else if unknown != "" {
		return fmt.Errorf("%s: unknown member %s", what, canon.Quote(unknown))
	}
	return nil
}

// ScriptError names the input script line that was refused.
type ScriptError struct {
	Line int // 1-based
	Err  error
}

func (e *ScriptError) Error() string { return fmt.Sprintf("input script line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *ScriptError) Unwrap() error { return e.Err }

// MaxScriptBytes bounds an input script: every input is recorded in the
// transcript, which holds at most canon.MaxTranscriptBytes; one line is
// one record, at most canon.MaxLineBytes (LF excluded).
const MaxScriptBytes = canon.MaxTranscriptBytes

// ParseInputs reads an input script: JSONL, one input per line, each
// {"kind": K, "payload": P} where P is the transcript record's payload
// without at_ms, e.g. {"kind":"input.clock_advanced","payload":{"delta_ms":250}}.
// Blank lines are skipped. The first bad line is refused with a
// *ScriptError naming it; nothing is started. The limits are enforced
// while reading: a line over canon.MaxLineBytes is a *ScriptError as soon
// as its excess arrives, a script over MaxScriptBytes a *SizeError after
// MaxScriptBytes+1 bytes.
func ParseInputs(r io.Reader) ([]transcript.Input, error) {
	var out []transcript.Input
	lr := &io.LimitedReader{R: r, N: MaxScriptBytes + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	for line := 1; ; line++ {
		text, err := readLine(br, canon.MaxLineBytes)
		if lr.N <= 0 {
			return nil, fmt.Errorf("input script: %w", &SizeError{Limit: MaxScriptBytes})
		}
		if errors.Is(err, errLongLine) {
			return nil, &ScriptError{Line: line, Err: fmt.Errorf("longer than %d bytes, the limit of one transcript record", canon.MaxLineBytes)}
		}
		if len(bytes.TrimSpace(text)) > 0 {
			in, perr := parseScriptLine(bytes.TrimSpace(text))
			if perr == nil {
				perr = checkInput(in)
			}
			if perr != nil {
				return nil, &ScriptError{Line: line, Err: perr}
			}
			if len(out) > 0 {
				if _, stop := out[len(out)-1].(transcript.Stop); stop {
					return nil, &ScriptError{Line: line, Err: errors.New("no input may follow input.stop")}
				}
			}
			out = append(out, in)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("input script: %w", err)
		}
	}
}

var errLongLine = errors.New("line too long")

// readLine returns the next line with its LF, or errLongLine as soon as
// more than max bytes (LF excluded) arrive without one; io.EOF ends the
// last line.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		body := len(line) + len(frag)
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			body--
		}
		if body > max {
			return nil, errLongLine
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, frag...)
			continue
		}
		// A copy: frag is the Reader's buffer, and what is decoded from
		// the line may keep referring to its bytes.
		return append(line, frag...), err
	}
}

func parseScriptLine(text []byte) (transcript.Input, error) {
	v, _, err := canon.Decode(text)
	if err != nil {
		return nil, err
	}
	if err := closedObject(&v, "input", []string{"kind", "payload"}, nil); err != nil {
		return nil, err
	}
	k, _ := v.Get("kind")
	if k.Kind != canon.String {
		return nil, errors.New("kind must be a string")
	}
	p, _ := v.Get("payload")
	return decodeInput(k.Str, p, false)
}

// decodeInput reads an input payload; withAt admits (and ignores) the
// at_ms member of a transcript record, which the Writer recomputes.
func decodeInput(kind string, p *canon.Value, withAt bool) (transcript.Input, error) {
	opt := []string(nil)
	if withAt {
		opt = []string{"at_ms"}
	}
	str := func(name string) (string, error) {
		x, _ := p.Get(name)
		if x.Kind != canon.String {
			return "", fmt.Errorf("%s: %s must be a string", kind, name)
		}
		return x.Str, nil
	}
	integer := func(name string) (int64, error) {
		x, _ := p.Get(name)
		n, ok := x.Int()
		if !ok {
			return 0, fmt.Errorf("%s: %s must be an integer", kind, name)
		}
		return n, nil
	}
	switch kind {
	case transcript.KindInputText:
		if err := closedObject(p, kind+" payload", []string{"text"}, opt); err != nil {
			return nil, err
		}
		s, err := str("text")
		return transcript.Text{Text: s}, err
	case transcript.KindInputKey:
		if err := closedObject(p, kind+" payload", []string{"keys"}, opt); err != nil {
			return nil, err
		}
		x, _ := p.Get("keys")
		if x.Kind != canon.Array {
			return nil, errors.New("input.key: keys must be an array of strings")
		}
		keys := make([]string, len(x.Items))
		for i := range x.Items {
			if x.Items[i].Kind != canon.String {
				return nil, errors.New("input.key: keys must be an array of strings")
			}
			keys[i] = x.Items[i].Str
		}
		return transcript.Key{Keys: keys}, nil
	case transcript.KindInputResize:
		if err := closedObject(p, kind+" payload", []string{"columns", "rows"}, opt); err != nil {
			return nil, err
		}
		c, err := integer("columns")
		if err != nil {
			return nil, err
		}
		r, err := integer("rows")
		return transcript.Resize{Columns: c, Rows: r}, err
	case transcript.KindInputClock:
		if err := closedObject(p, kind+" payload", []string{"delta_ms"}, opt); err != nil {
			return nil, err
		}
		d, err := integer("delta_ms")
		return transcript.ClockAdvanced{DeltaMS: d}, err
	case transcript.KindInputStop:
		if err := closedObject(p, kind+" payload", nil, opt); err != nil {
			return nil, err
		}
		return transcript.Stop{}, nil
	case transcript.KindInputMouse, transcript.KindInputClipboard:
		return nil, fmt.Errorf("%s has no termverify.control/v1 message: a control subject cannot receive it", kind)
	}
	return nil, fmt.Errorf("kind %s is not an input (want input.text, input.key, input.resize, input.clock_advanced or input.stop)", canon.Quote(kind))
}

// InputsFromTranscriptFile reads the transcript at path, refusing it as
// soon as more than canon.MaxTranscriptBytes arrive, and returns its
// inputs as InputsFromTranscript does.
func InputsFromTranscriptFile(path string) ([]transcript.Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("inputs-from: %w", err)
	}
	defer f.Close()
	data, err := readAtMost(f, canon.MaxTranscriptBytes)
	if err != nil {
		return nil, fmt.Errorf("inputs-from %s: %w", path, err)
	}
	return InputsFromTranscript(data)
}

// ReadInputsFile opens the input script at path and parses it with
// ParseInputs; errors name the file.
func ReadInputsFile(path string) ([]transcript.Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("input script: %w", err)
	}
	defer f.Close()
	in, err := ParseInputs(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}

// InputsFromTranscript returns the inputs of an earlier (valid) transcript,
// in order, for --inputs-from: replaying them reproduces its manual clock.
func InputsFromTranscript(data []byte) ([]transcript.Input, error) {
	t, err := transcript.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("inputs-from: %w", err)
	}
	var out []transcript.Input
	for i := range t.Records {
		rec := &t.Records[i]
		switch rec.Kind {
		case transcript.KindInputText, transcript.KindInputKey, transcript.KindInputResize,
			transcript.KindInputClock, transcript.KindInputStop, transcript.KindInputMouse, transcript.KindInputClipboard:
			in, err := decodeInput(rec.Kind, rec.Payload(), true)
			if err != nil {
				return nil, fmt.Errorf("inputs-from: record %d: %w", rec.Seq, err)
			}
			out = append(out, in)
		}
	}
	return out, nil
}
