package supervisor

import (
	"github.com/termverify/termverify-sandbox/control"
	"github.com/termverify/termverify-sandbox/input"
)

// Sending first (docs/SUPERVISOR.md, "Sending first: the epoch pipeline").
// The plain order of an epoch is: record the held observation, record the
// input, send it. Everything between the reply and the next send is on
// the subject's round trip, so an epoch sends its input first when that
// cannot leave an input the transcript does not record, and records the
// two while the subject works. The transcript is the same either way.

// ahead is the next input's wire line, encoded while the subject works on
// the current one, so that the next epoch can send it at once.
type ahead struct {
	enc  control.Encoder
	ok   bool // line and err are the next input's
	line []byte
	err  error
}

// encode encodes next, unless its line depends on the manual clock
// (input.clock carries the time after it is recorded) or there is none.
// Nothing is sent or recorded here.
func (a *ahead) encode(next input.Input) {
	a.ok = false
	if _, clock := next.(input.ClockAdvanced); next == nil || clock {
		return
	}
	a.ok = true
	// The Encoder's error names the message kind already.
	a.line, a.err = a.enc.Append(a.line[:0], controlInput(next, 0))
}

// size returns the wire size of a line encoded ahead that can be sent.
func (a *ahead) size() (int, bool) { return len(a.line), a.ok && a.err == nil }

// take returns in's line: the one encoded ahead when there is one, else
// in encoded now, with the manual clock at now.
func (a *ahead) take(in input.Input, now int64) ([]byte, error) {
	if a.ok {
		a.ok = false
		return a.line, a.err
	}
	return control.Encode(controlInput(in, now))
}

// Bounds on record sizes for sending an input before the records that
// precede it are written. An observation record is at most 7 times its
// wire line plus a constant: at_ms, the record envelope and the run id,
// null focus and mode, a bounds object per region (20% of a region's wire
// bytes at most), and canonical numbers (a 4-byte literal such as 1e15
// spells out to 16 bytes; one that would spell out as an integer beyond
// 2^53 is refused by Parse); strings and whitespace only shrink. An input
// record has the payload of its wire line plus at_ms. TestRecordBounds,
// TestRecordBoundsRandom and FuzzRecordBound check both bounds.
const (
	maxSentFirstLine = 64 << 10 // longer lines take the plain order
	recordOverhead   = 512
)

func observationBound(wireBytes int, runID string) int {
	return 7*wireBytes + recordOverhead + len(runID)
}

func inputBound(wireBytes int, runID string) int { return 2*wireBytes + recordOverhead + len(runID) }

// sendFirst reports whether the current input may be sent before the held
// observation and the input itself are recorded: the input is prepared
// (so not a clock input, whose line carries the time the Writer
// computes), both wire lines are short (so neither record can break a
// per-record limit: a record's line, values and strings grow by a bounded
// factor over its wire line's), and both records fit the transcript's
// remaining budget whatever their exact size (a Parse-valid observation,
// and an input of the checked script, are otherwise always accepted by
// the Writer). Then no input can ever reach the subject that the
// transcript does not record. The caller adds the idle check.
func (s *session) sendFirst() bool {
	if s.wire == nil {
		return false
	}
	in, ok := s.wire.prepared()
	if !ok || !s.holding || s.heldBytes > maxSentFirstLine || in > maxSentFirstLine {
		return false
	}
	return s.rec.room(2, observationBound(s.heldBytes, s.runID)+inputBound(in, s.runID))
}

// sentUnrecorded marks a Writer refusal that came after the input was
// sent, which sendFirst exists to rule out: if it ever happens, the
// failure says so rather than leave an input the subject saw unrecorded
// and unmentioned.
func sentUnrecorded(err error, sent bool) error {
	if !sent {
		return err
	}
	return &sentUnrecordedError{err}
}

type sentUnrecordedError struct{ err error }

func (e *sentUnrecordedError) Error() string {
	return e.err.Error() + " (the input of this epoch had already been sent)"
}
func (e *sentUnrecordedError) Unwrap() error { return e.err }
