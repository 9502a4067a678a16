package control

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// Reader splits a byte stream (a subject's stdout) into message lines and
// parses each. It never holds more than one line's worth of bytes: 4 MiB +
// LF. A subject that floods bytes without an LF gets a RuleLineBytes error
// as soon as the limit is passed, not an ever-growing buffer.
//
// A Reader is not safe for concurrent use; Buffered belongs to the
// goroutine that calls Next.
type Reader struct {
	r          io.Reader
	limit      int           // longest line accepted, LF included
	buf        []byte        // grows on demand up to limit bytes
	start, end int           // buf[start:end] is read but not yet returned
	scanned    int           // bytes of buf[start:end] already known to hold no LF
	discard    bool          // the last line was over limit: drop bytes through its LF
	err        error         // sticky: io.EOF or the underlying reader's error
	dec        canon.Decoder // decodes each line, and keeps the raw lines (Keep)
}

// Recycle declares every message and raw line Next has returned so far
// dead: the caller keeps none of them, nor anything inside them. Later
// calls to Next reuse their memory (see canon.Decoder.Recycle), so a
// caller that is done with each message before it reads the next one,
// and says so here, reads without allocating.
func (r *Reader) Recycle() { r.dec.Recycle() }

// NewReader returns a Reader of the v1 line limit on r.
func NewReader(r io.Reader) *Reader { return newReader(r, canon.MaxLineBytes+1) }

// newReader is NewReader with a smaller line limit, so the fuzz test can
// reach the over-limit and resynchronisation paths with short inputs.
func newReader(r io.Reader, limit int) *Reader { return &Reader{r: r, limit: limit} }

// Buffered returns how many bytes the Reader has read from the subject that
// Next has not yet returned. Non-zero means the subject has already sent
// (part of) a message: the supervisor asks before writing the next input,
// because a message sent while no epoch was open cannot be that input's
// reply. Bytes still in the pipe are not counted; ask the pipe for those.
func (r *Reader) Buffered() int { return r.end - r.start }

// Next reads the next line and parses it. It returns the message and a copy
// of the raw line, LF included, for evidence. A line that is not a valid
// message gives a nil message, the raw line and an *Error; the stream stays
// usable, and the next call reads the line after it. A line over the limit
// gives a RuleLineBytes *Error with no raw bytes; the next call first
// discards the rest of that line. Bytes after the last LF at end of stream
// give a RuleMissingLF *Error (or an earlier framing rule). Next returns
// io.EOF at a clean end of stream and the underlying reader's error as is.
func (r *Reader) Next() (Message, []byte, error) {
	for {
		if r.discard && !r.skipLine() {
			if r.err != nil {
				return nil, nil, r.err
			}
			r.fill()
			continue
		}
		if i := bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n'); i >= 0 {
			stop := r.start + r.scanned + i + 1
			raw := r.dec.Keep(r.buf[r.start:stop])
			r.start, r.scanned = stop, 0
			m, err := parse(raw, &r.dec)
			return m, raw, err
		}
		r.scanned = r.end - r.start
		if r.scanned >= r.limit {
			// Whatever follows, this line is longer than the limit: say so
			// now rather than read further, and forget what was buffered.
			n := r.scanned
			r.start, r.end, r.scanned, r.discard = 0, 0, 0, true
			return nil, nil, malformed(RuleLineBytes, "", "message line passes %d bytes (%d read) without LF", r.limit, n)
		}
		if r.err != nil {
			if r.scanned == 0 || !errors.Is(r.err, io.EOF) {
				return nil, nil, r.err
			}
			raw := bytes.Clone(r.buf[r.start:r.end])
			r.start, r.end, r.scanned = 0, 0, 0
			if _, err := Parse(raw); err != nil {
				return nil, raw, err
			}
			// Unreachable: Parse rejects a line without LF. Kept so that a
			// change to Parse cannot turn a truncated line into a message.
			return nil, raw, malformed(RuleMissingLF, "", "stream ends inside a message")
		}
		r.fill()
	}
}

// skipLine drops buffered bytes up to and including the first LF, reporting
// whether it found one.
func (r *Reader) skipLine() bool {
	if i := bytes.IndexByte(r.buf[r.start:r.end], '\n'); i >= 0 {
		r.start += i + 1
		r.discard = false
		return true
	}
	r.start, r.end = 0, 0
	return false
}

// maxEmptyReads bounds the (0, nil) reads Next tolerates, as bufio does, so
// that a broken io.Reader cannot spin it forever.
const maxEmptyReads = 100

// fill reads once into free space, compacting and growing the buffer (up
// to limit) first when it is full. It records the error, if any, in r.err.
func (r *Reader) fill() {
	if r.start > 0 && (r.start == r.end || r.end == len(r.buf)) {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		n := min(max(2*len(r.buf), 64<<10), r.limit)
		if n <= len(r.buf) {
			// Cannot happen: Next reports an over-limit line before a full
			// buffer of limit bytes gets here.
			r.err = fmt.Errorf("control reader: buffer full at %d bytes", len(r.buf))
			return
		}
		grown := make([]byte, n)
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	for range maxEmptyReads {
		n, err := r.r.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			r.err = fmt.Errorf("control reader: invalid read count %d", n)
			return
		}
		r.end += n
		if err != nil {
			r.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.err = io.ErrNoProgress
}

// Verdict is Check's finding on one line.
type Verdict struct {
	Line int    // 1-based line number
	Kind Kind   // the message kind, when Err is nil
	Err  *Error // why the line is not a valid v1 message
}

// Check reads message lines from r until end of stream and reports each to
// emit, in order. valid is true when every line was a valid message (and
// so for empty input). err is an I/O error from r; lines read before it
// were reported.
func Check(r io.Reader, emit func(Verdict)) (valid bool, err error) {
	rd := NewReader(r)
	valid = true
	for line := 1; ; line++ {
		m, _, err := rd.Next()
		if err != nil {
			ce, ok := errors.AsType[*Error](err)
			if !ok {
				if errors.Is(err, io.EOF) {
					return valid, nil
				}
				return false, err
			}
			valid = false
			emit(Verdict{Line: line, Err: ce})
			continue
		}
		emit(Verdict{Line: line, Kind: m.Kind()})
	}
}
