package transcript

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// TerminalReserve is the room, in bytes (LF included), the Writer keeps
// for the terminal record from the first record on. A terminal record
// longer than this is refused with a *BudgetError (LimitTerminalBytes); the
// run.failed that FailBudget writes is always far smaller (with a run id
// of at most MaxRunIDBytes it is under 600 bytes).
const TerminalReserve = 16 << 10

// MaxRunIDBytes bounds the run id a Writer accepts, so that the terminal
// record's size is bounded. Parse accepts any length.
const MaxRunIDBytes = 256

// Writer writes one transcript record by record. It assigns seq and ids
// (record-0000, record-0001, ...), stamps at_ms from the manual clock it
// keeps, emits RFC 8785 lines, and checks every record with the same
// validator Parse uses before writing it: a record that would make the
// transcript invalid is refused with an *Error (Rule says why), one that
// would break a v1 limit with a *BudgetError, and in both cases nothing is
// written and the Writer's state is unchanged.
//
// Room for the terminal record is kept at all times (one record and
// TerminalReserve bytes), so after any refusal the caller can still end
// the transcript: Fail or FailBudget are accepted at any point after a
// successful Start, except right after an Unsupported result, where only
// EndUnsupported is valid.
//
// Each accepted record reaches the underlying io.Writer in a single Write
// call; the Writer does not buffer. An error from the io.Writer is sticky:
// every later call returns it. A Writer is not safe for concurrent use.
type Writer struct {
	out     io.Writer
	runID   string
	cfg     config.Config
	v       validator
	seq     int
	bytes   int
	started bool
	ended   bool
	closed  bool
	err     error // sticky: bad run id, or an io error
	buf     []byte
	// The trees of the body records being written: dead once written
	// (the validator keeps nothing of them), so each is built where the
	// last one was.
	arena canon.Arena
}

// NewWriter returns a Writer of the run runID to w. The run id must match
// [a-z0-9._-]+ and be at most MaxRunIDBytes long; otherwise every method
// returns an error. The caller must end the transcript with a terminal
// record and then call Close.
func NewWriter(w io.Writer, runID string) *Writer {
	wr := &Writer{out: w, runID: runID}
	if !config.ValidIdentifier(runID) || len(runID) > MaxRunIDBytes {
		wr.err = &Error{Record: 0, Line: 1, Kind: KindRunStarted, Rule: RuleRunID,
			Err: detail("run id must match [a-z0-9._-]+ and be at most %d bytes", MaxRunIDBytes)}
	}
	return wr
}

// Records returns how many records were written.
func (w *Writer) Records() int { return w.seq }

// Bytes returns how many bytes were written.
func (w *Writer) Bytes() int { return w.bytes }

// Now returns the manual clock: clock.initial_ms, advanced by every
// ClockAdvanced input. Every record is stamped with it.
func (w *Writer) Now() int64 { return w.v.now }

// Room reports whether n more body records, of bytes bytes in all (LF
// included), are within the budgets of the transcript as a whole: the
// record count and the transcript's bytes, with room for the terminal
// record kept. Each record must still pass validation and the per-record
// limits when it is written.
func (w *Writer) Room(n, bytes int) bool {
	return w.seq+n+1 <= canon.MaxRecords && w.bytes+bytes+TerminalReserve <= canon.MaxTranscriptBytes
}

// Ended reports whether a terminal record was written.
func (w *Writer) Ended() bool { return w.ended }

// Start writes run.started. It must be the first call. If it is refused
// (an invalid config or subject, or a config too large for the limits)
// nothing can be recorded: a transcript must begin with run.started.
func (w *Writer) Start(cfg config.Config, subj Subject) error {
	w.cfg = cfg
	return w.emit(KindRunStarted, canon.ObjectValue(
		canon.M("config", cfg.Value()),
		canon.M("subject", subj.Value()),
	))
}

// Applied writes an applied capability result for the next constraint
// (they come in receipts.Constraints() order). The effective value is the
// configured one, as the protocol requires. d is required for the
// delivered tier and forbidden otherwise.
//
// ext adds uninterpreted x- members (for example "x-mechanism" naming the
// OS mechanism of an os-tier receipt); a member not named x-... is refused.
func (w *Writer) Applied(c receipts.Constraint, tier receipts.Tier, d *receipts.Delivery, ext ...canon.Member) error {
	if err := checkExtensions(ext); err != nil {
		return err
	}
	eff, _ := w.cfg.Member(string(c))
	m := []canon.Member{
		canon.M("constraint", canon.StringValue(string(c))),
		canon.M("status", canon.StringValue(string(receipts.Applied))),
		canon.M("effective", eff),
		canon.M("tier", canon.StringValue(string(tier))),
	}
	if d != nil {
		m = append(m, canon.M("delivery", deliveryValue(d)))
	}
	m = append(m, ext...)
	return w.emit(KindCapability, canon.ObjectValue(m...))
}

// checkExtensions refuses extension members whose names are not x-...:
// the payload member sets are closed, and only x- members are free.
func checkExtensions(ext []canon.Member) error {
	for _, m := range ext {
		if !config.IsExtension(m.Key) {
			return fmt.Errorf("transcript: extension member %s must start with x-", canon.Quote(m.Key))
		}
	}
	return nil
}

// Unsupported writes an unsupported capability result for the next
// constraint. The only record allowed after it is EndUnsupported.
func (w *Writer) Unsupported(c receipts.Constraint, reason string) error {
	return w.emit(KindCapability, canon.ObjectValue(
		canon.M("constraint", canon.StringValue(string(c))),
		canon.M("status", canon.StringValue(string(receipts.Unsupported))),
		canon.M("reason", canon.StringValue(reason)),
	))
}

// Diagnostic writes a diagnostic stamped with the current manual time.
// Diagnostics are allowed before readiness and while an epoch is open.
func (w *Writer) Diagnostic(d Diagnostic) error {
	p := errorShape(d.Code, d.Message, d.Details)
	p.Members = append(p.Members, at(w.v.now))
	return w.emit(KindDiagnostic, p)
}

// Observe writes an observation stamped with the current manual time: the
// readiness observation first, then one closing each input's epoch. An
// observation with an exited process must be the last body record.
func (w *Writer) Observe(o Observation) error {
	w.arena.Reset()
	return w.emit(KindObservation, o.payload(w.v.now, &w.arena))
}

// Input writes an input, opening an epoch. It is stamped with the
// current manual time; a ClockAdvanced input is stamped with the advanced
// time, which becomes current.
func (w *Writer) Input(in input.Input) error {
	if in == nil {
		return &Error{Record: w.seq, Line: w.seq + 1, Rule: RuleWriterValue, Err: errors.New("nil input")}
	}
	w.arena.Reset()
	return w.emit(in.Kind(), in.Payload(w.v.now, &w.arena))
}

// Finish writes run.finished with the subject's exit. An exited-process
// observation, if one was written, must report the same exit.
//
// ext adds uninterpreted x- members, for example the subject's differing
// exit claim when no epoch was open to carry an exit-record-mismatch
// diagnostic.
func (w *Writer) Finish(exit Exit, ext ...canon.Member) error {
	if err := checkExtensions(ext); err != nil {
		return err
	}
	return w.emit(KindRunFinished, canon.ObjectValue(append([]canon.Member{canon.M("exit", exit.Value())}, ext...)...))
}

// Fail writes run.failed. Refused only right after Unsupported, or when
// the record is larger than TerminalReserve (then use FailBudget).
func (w *Writer) Fail(f Failure) error {
	return w.emit(KindRunFailed, canon.ObjectValue(canon.M("error", errorShape(f.Code, f.Message, f.Details))))
}

// EndUnsupported writes run.unsupported for the constraint of the
// preceding Unsupported result, with a non-empty code (normally
// receipts.CodeUnsupported or receipts.CodeNotEnforced).
func (w *Writer) EndUnsupported(code, message string) error {
	return w.emit(KindRunUnsupported, canon.ObjectValue(
		canon.M("constraint", canon.StringValue(string(w.v.pending))),
		canon.M("code", canon.StringValue(code)),
		canon.M("message", canon.StringValue(message)),
	))
}

// FailBudget ends the transcript with a small run.failed naming the limit
// of cause (a *BudgetError; any other error is named "unknown"):
// code adapter-start-failed before readiness, adapter-runtime-failed
// after, details {"failure":"transcript-budget","limit":...}. The room
// for it was kept from the start, so it fits whatever was written.
func (w *Writer) FailBudget(cause error) error {
	limit := "unknown"
	if be, ok := errors.AsType[*BudgetError](cause); ok {
		limit = string(be.Limit)
	}
	code := CodeAdapterStartFailed
	if w.v.phase.ready() {
		code = CodeAdapterRuntimeFailed
	}
	details := canon.ObjectValue(
		canon.M("failure", canon.StringValue("transcript-budget")),
		canon.M("limit", canon.StringValue(limit)),
	)
	return w.Fail(Failure{Code: code, Message: "the transcript reached a v1 limit", Details: &details})
}

// Close marks the Writer closed. It returns ErrNoTerminal if no terminal
// record was written (the output is then not a valid transcript), or the
// sticky error. It does not close the underlying io.Writer.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if !w.ended {
		return ErrNoTerminal
	}
	return nil
}

// recordID is record-0000, record-0001, ... (at least four digits).
func recordID(seq int) string {
	var b [32]byte
	id := append(b[:0], "record-"...)
	for n := 1000; n > 1 && seq < n; n /= 10 {
		id = append(id, '0')
	}
	return string(strconv.AppendInt(id, int64(seq), 10))
}

// emit validates, measures and writes one record.
func (w *Writer) emit(kind string, payload canon.Value) error {
	switch {
	case w.closed:
		return ErrClosed
	case w.err != nil:
		return w.err
	}
	bad := func(rule string, cause error) error {
		return &Error{Record: w.seq, Line: w.seq + 1, Kind: kind, Rule: rule, Err: cause}
	}
	switch {
	case w.ended:
		return bad(RuleWriterState, errors.New("the transcript already has its terminal record"))
	case !w.started && kind != KindRunStarted:
		return bad(RuleWriterState, errors.New("run.started must be written first"))
	case w.started && kind == KindRunStarted:
		return bad(RuleStartedOnce, errors.New("run.started may appear only once"))
	}
	names, _ := payloadMembers(kind)
	if err := checkPayloadMembers(kind, names, &payload); err != nil {
		return bad(RulePayloadMembers, err)
	}
	next := w.v
	if err := next.feed(w.seq, kind, &payload); err != nil {
		return err
	}
	envelope := [...]canon.Member{
		canon.M("id", canon.StringValue(recordID(w.seq))),
		canon.M("kind", canon.StringValue(kind)),
		canon.M("payload", payload),
		canon.M("protocol", canon.StringValue(Protocol)),
		canon.M("run_id", canon.StringValue(w.runID)),
		canon.M("seq", canon.IntValue(int64(w.seq))),
	}
	rec := canon.Value{Kind: canon.Object, Members: envelope[:]}
	if err := canon.Measure(&rec).Check(); err != nil {
		return &BudgetError{Limit: LimitValues, Detail: err.Error(), Err: err}
	}
	line, err := canon.Append(w.buf[:0], &rec)
	if err != nil {
		// A caller-supplied value (state, event data, details, a string)
		// that has no canonical form: bad UTF-8, a non-finite number, ...
		return bad(RuleWriterValue, err)
	}
	line = append(line, '\n')
	w.buf = line[:0]
	terminal := isTerminal(kind)
	switch {
	case len(line)-1 > canon.MaxLineBytes:
		return &BudgetError{Limit: LimitLineBytes, Detail: fmt.Sprintf("a %d-byte line exceeds %d", len(line)-1, canon.MaxLineBytes)}
	case terminal && len(line) > TerminalReserve:
		return &BudgetError{Limit: LimitTerminalBytes, Detail: fmt.Sprintf("a %d-byte terminal record exceeds the %d-byte reserve", len(line), TerminalReserve)}
	case !terminal && w.seq+2 > canon.MaxRecords:
		return &BudgetError{Limit: LimitRecords, Detail: fmt.Sprintf("record %d would leave no room for the terminal record within %d", w.seq, canon.MaxRecords)}
	case !terminal && w.bytes+len(line)+TerminalReserve > canon.MaxTranscriptBytes:
		return &BudgetError{Limit: LimitTranscriptBytes, Detail: fmt.Sprintf("%d more bytes would leave less than the %d-byte terminal reserve within %d", len(line), TerminalReserve, canon.MaxTranscriptBytes)}
	}
	if _, err := w.out.Write(line); err != nil {
		w.err = fmt.Errorf("write record %d: %w", w.seq, err)
		return w.err
	}
	w.v = next
	w.seq++
	w.bytes += len(line)
	w.started = true
	w.ended = terminal
	return nil
}
