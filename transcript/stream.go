package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// ValidateReader reads a transcript from r and reports its first
// violation exactly as Parse would (the same *Error: rule, record and
// message), or, for a valid transcript, how many records it has. Like
// Read it reads at most MaxTranscriptBytes + 1 bytes, and an error from r
// is returned as it is, not as an *Error.
//
// Unlike Read it keeps neither the input nor any record's tree: it holds a
// few blocks of input at a time, decodes and checks each line on all CPUs
// as it arrives, and drops the line's tree once summarize has kept what
// the in-order passes need. Its memory is a few MiB plus a few times the
// longest line, whatever the transcript's size.
func ValidateReader(r io.Reader) (records int, err error) {
	return validateStream(r, streamBlock, min(runtime.GOMAXPROCS(0), 8))
}

// streamBlock is how many bytes the streaming checker reads at a time;
// each block's complete lines are one batch of work.
const streamBlock = 64 << 10

// A pass is one step of the parse order that is checked line by line.
// Parse runs each over every line before the next; the streaming checker
// runs them all on each line as it comes, and reports what Parse would:
// the violation of the earliest pass, and within it of the earliest line.
// Steps 1–3 (framing) are whole-file and come before all of them.
type pass int32

const (
	passFile      pass = iota // steps 1–3
	passLine                  // step 4: line size, lexical depth
	passDecode                // step 5
	passCanonical             // step 6
	passCompat                // step 7
	passEnvelope              // step 8, kinds and member sets
	passPlacement             // step 8, placement and ids (in order)
	passValidator             // step 8, the later passes (in order)
	passNone                  // no violation
)

// batch is a block of input and what the per-line passes found in its
// complete lines.
type batch struct {
	index int    // position in the input, from 0
	first int    // record index of lines[0]
	buf   []byte // the block
	lines []span
	last  bool // lines ends with the transcript's last line
	big   bool // holds the pipeline's big token
	slots []slot
}

// span is one line of a batch, LF excluded: buf[off:end], or when over is
// set a line of that many bytes, too long to keep.
type span struct{ off, end, over int }

// slot is what the per-line passes leave for the in-order ones.
type slot struct {
	ok        bool // the line passed steps 4–8a
	runID, id string
	facts     facts
}

// streamChecker runs the passes of Parse over a stream. Its per-line
// passes run on any goroutine; sequencer runs the in-order ones.
type streamChecker struct {
	// floor is the earliest pass with a known violation (passNone for
	// none): no later pass can be the answer, so none is checked.
	floor atomic.Int32
	// firstAt is first.at, for reading without the lock.
	firstAt atomic.Int64

	mu       sync.Mutex
	first    violation // the earliest known violation
	internal *Error    // a recovered fault: reported over everything
	grown    []growth  // the records the compat rule rewrote

	seq sequencer
}

// violation is a violation of pass found on line at.
type violation struct {
	pass pass
	at   int
	err  *Error
}

// growth is how many bytes the compat rule added to record at.
type growth struct{ at, n int }

// report keeps err if it is the earliest violation so far, and says
// whether it did.
func (c *streamChecker) report(p pass, at int, err *Error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.err == nil || p < c.first.pass || p == c.first.pass && at < c.first.at {
		c.first = violation{p, at, err}
		c.firstAt.Store(int64(at))
		c.lower(p)
		return true
	}
	return false
}

// lower lowers the floor to p (it never rises).
func (c *streamChecker) lower(p pass) {
	for {
		old := c.floor.Load()
		if old <= int32(p) || c.floor.CompareAndSwap(old, int32(p)) {
			return
		}
	}
}

// safely runs fn, turning a panic into an internal error: a bug must not
// take the caller down, nor leave the other goroutines waiting.
func (c *streamChecker) safely(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.internal == nil {
				c.internal = fileErr(RuleInternal, fmt.Errorf("transcript: internal error: %v", r))
			}
			c.lower(passFile)
		}
	}()
	fn()
}

// lineDecoder is the memory one goroutine decodes lines in, line after
// line: canonical lines take the quick path; of the others, those that
// decode are only scanned, and the rest take canon's.
type lineDecoder struct {
	quick quickDecoder
	scan  scanner
	canon canon.Decoder
}

// keepDecoderBelow is the longest line after which a goroutine keeps its
// decoder's memory for the next line. Longer lines are rare (the Writer's
// are a few KiB); their memory is what the bound on the streaming
// checker's memory allows for, and only while they are checked.
const keepDecoderBelow = 16 << 10

// checkLines runs steps 4–8a on every line of b, and summarize on those
// that pass, with dec (reused line after line: the trees die here).
func (c *streamChecker) checkLines(b *batch, dec *lineDecoder) {
	b.slots = slices.Grow(b.slots[:0], len(b.lines))[:len(b.lines)]
	for k, l := range b.lines {
		s := &b.slots[k]
		*s = slot{}
		i := b.first + k
		p, err := c.checkLine(dec, i, b.buf[l.off:l.end], l.over, s)
		switch {
		case err != nil && c.report(p, i, err):
			// err may refer to the decoder's memory: never write it again.
			*dec = lineDecoder{}
		case l.end-l.off > keepDecoderBelow:
			// A long line's decoder memory is dropped with it, so that each
			// goroutine does not keep the memory of the longest line it saw.
			*dec = lineDecoder{}
		}
	}
}

// checkLine runs steps 4–8a on line i, each only while no earlier pass
// has failed anywhere, and leaves what the in-order passes need in s.
func (c *streamChecker) checkLine(dec *lineDecoder, i int, line []byte, over int, s *slot) (pass, *Error) {
	floor := pass(c.floor.Load())
	deep := func() bool { return canon.LexicalDepth(line, canon.MaxDepth) > canon.MaxDepth }
	switch {
	case floor < passLine:
		return passNone, nil
	case over > 0:
		return passLine, lineBytesErr(i, over)
	case floor < passDecode || floor == passDecode && int64(i) > c.firstAt.Load():
		// Nothing of this line can be the answer but step 4: a line after
		// the first that does not decode need not be decoded either (nor
		// cost a tree).
		if deep() {
			return passLine, depthErr(i)
		}
		return passNone, nil
	}
	// Step 4's depth is counted only for a line that does not decode: one
	// that does nests no deeper than the decoder allows, which is the
	// limit, and outside its strings its brackets are its nesting.
	// The quick path leaves the opaque parts out of the tree: what the
	// passes below read of a record is all there.
	dec.quick.elide = true
	rec, canonical := dec.quick.decode(line)
	var err error
	var typed *typedArrays // what the quick path checked of rec as it scanned it
	switch {
	case canonical:
		typed = &dec.quick.typed
	case dec.scan.decodes(line):
		// Not canonical (the quick path takes every canonical line that
		// decodes), and nothing after step 6 is checked: no tree needed.
	default:
		dec.canon.Recycle()
		rec, canonical, err = dec.canon.Decode(line)
	}
	switch {
	case err != nil && deep():
		return passLine, depthErr(i)
	case err != nil:
		return passDecode, canonErr(i, err)
	case floor < passCanonical:
		return passNone, nil
	case !canonical:
		return passCanonical, canonicalErr(i)
	case floor < passCompat:
		return passNone, nil
	}
	grew, cerr := compat(i, &rec, len(line))
	if cerr != nil {
		return passCompat, cerr
	}
	if grew > 0 {
		c.mu.Lock()
		c.grown = append(c.grown, growth{i, grew})
		c.mu.Unlock()
	}
	if floor < passEnvelope {
		return passNone, nil
	}
	f, cerr := checkEnvelope(i, &rec)
	if cerr != nil {
		return passEnvelope, cerr
	}
	// placement keeps the ids: one copy of both strings, in one allocation.
	both := string(append([]byte(f.runID), f.id...))
	*s = slot{ok: true, runID: both[:len(f.runID)], id: both[len(f.runID):], facts: summarize(f.kind, f.payload, typed)}
	return passNone, nil
}

// sequencer runs the passes that need the records in order, placement
// and the validator, on what the per-line passes left.
type sequencer struct {
	place     placement
	v         validator
	placeDone bool // placement stopped (a violation, or a line not checked)
	validDone bool // the validator stopped
}

// sequence runs placement and the validator over b's lines, stopping
// each for good at its first violation or once it can no longer be the
// answer.
func (c *streamChecker) sequence(b *batch) {
	q := &c.seq
	for k := range b.lines {
		if q.placeDone {
			return
		}
		i := b.first + k
		s := &b.slots[k]
		floor := pass(c.floor.Load())
		if !s.ok || floor < passPlacement {
			q.placeDone = true // an earlier pass failed: nothing here can be the answer
			return
		}
		f := envelopeFields{runID: s.runID, id: s.id, kind: s.facts.kind}
		if err := q.place.check(i, b.last && k == len(b.lines)-1, &f); err != nil {
			c.report(passPlacement, i, err)
			q.placeDone = true
			return
		}
		if q.validDone || floor < passValidator {
			q.validDone = true
			continue
		}
		if err := q.v.step(i, &s.facts); err != nil {
			c.report(passValidator, i, err)
			q.validDone = true
		}
	}
}

// compatTotal is the last check of step 7, which needs the transcript's
// size: the compat rule's growth, added in record order up to the first
// record step 7 rejected, must not take it past the limit.
func (c *streamChecker) compatTotal(size int) {
	if c.first.err != nil && c.first.pass < passCompat {
		return
	}
	slices.SortFunc(c.grown, func(a, b growth) int { return a.at - b.at })
	total := size
	for _, g := range c.grown {
		if c.first.err != nil && c.first.pass == passCompat && g.at >= c.first.at {
			return
		}
		if total += g.n; total > canon.MaxTranscriptBytes {
			c.report(passCompat, g.at, compatTotalErr(total))
			return
		}
	}
}

// validateStream is ValidateReader with its block size and the number of
// goroutines that check lines as parameters (tests make both small).
func validateStream(r io.Reader, block, workers int) (records int, err error) {
	c := &streamChecker{}
	c.floor.Store(int32(passNone))
	var rd streamReader
	rd.init(r, block)
	p := newPipeline(c, workers, block)
	c.safely(func() { err = rd.run(c, p) })
	p.wait()
	switch {
	case err != nil:
		return 0, err
	case c.internal != nil:
		return 0, c.internal
	}
	if ferr := rd.fr.err(); ferr != nil {
		return 0, ferr
	}
	c.compatTotal(rd.fr.size)
	if c.first.err != nil {
		return 0, c.first.err
	}
	return rd.fr.lines, nil
}

// pipeline hands batches to the goroutines that check them and puts
// them back in order for the sequencer. With one worker, or when the
// whole transcript is one batch, it works on the calling goroutine.
type pipeline struct {
	c       *streamChecker
	workers int
	block   int
	next    int // index of the next batch dispatched

	free      chan *batch   // batches to reuse
	made      int           // batches made so far, at most cap(free)
	big       chan struct{} // held by the one batch grown for a long line that may be checked at a time, or by the reader while it reads one
	readerBig bool          // the reader holds big (reader's goroutine only)
	spareMu   sync.Mutex
	spare     []byte      // a block grown for a long line, kept for the next
	work      chan *batch // to the workers
	done      chan *batch // from the workers to the sequencer
	inline    lineDecoder
	lines     sync.WaitGroup // the workers
	order     sync.WaitGroup // the sequencer
	start     sync.Once
}

func newPipeline(c *streamChecker, workers, block int) *pipeline {
	// Two batches on the reader's side (one being read, one held back until
	// it is known whether more lines follow), one per worker, and slack.
	n := workers + 3
	return &pipeline{c: c, workers: workers, block: block, free: make(chan *batch, n), big: make(chan struct{}, 1)}
}

// get returns an empty batch, waiting for one to be put back when all
// are in use.
func (p *pipeline) get() *batch {
	var b *batch
	select {
	case b = <-p.free:
	default:
		if p.made < cap(p.free) {
			p.made++
			b = &batch{buf: make([]byte, 0, p.block)}
		} else {
			b = <-p.free
		}
	}
	b.lines, b.last = b.lines[:0], false
	b.buf = b.buf[:0]
	return b
}

// put returns b for reuse. A block grown for a long line is dropped, so
// that long lines cost memory only while they are being checked.
func (p *pipeline) put(b *batch) {
	if b.big {
		<-p.big
		b.big = false
	}
	if p.isBig(b) {
		p.keep(b.buf)
		b.buf = make([]byte, 0, p.block)
	}
	clear(b.slots) // the facts of its lines: copies of config and effective values
	p.free <- b
}

// keep keeps buf, a block grown for a long line and no longer used, for
// the next long line, if it is larger than the one kept: lines of similar
// lengths then reuse one block, and leave the garbage collector nothing.
func (p *pipeline) keep(buf []byte) {
	p.spareMu.Lock()
	defer p.spareMu.Unlock()
	if cap(buf) > cap(p.spare) {
		p.spare = buf[:0]
	}
}

// bigBuf returns an empty block of at least need bytes for a long line:
// the one kept if it is large enough, else a new one of size bytes (and
// the one kept, too small, is dropped).
func (p *pipeline) bigBuf(need, size int) []byte {
	p.spareMu.Lock()
	defer p.spareMu.Unlock()
	buf := p.spare
	p.spare = nil
	if cap(buf) < need {
		buf = make([]byte, 0, size)
	}
	return buf
}

// holdBig takes the big token for the reader, waiting for the batch
// that holds it to be checked, unless the reader holds it already.
func (p *pipeline) holdBig() {
	if !p.readerBig {
		p.big <- struct{}{}
		p.readerBig = true
	}
}

// isBig reports whether b's block grew for a long line.
func (p *pipeline) isBig(b *batch) bool { return cap(b.buf) > 2*p.block }

// dispatch hands over b, whose lines are complete and whose last flag is
// set.
func (p *pipeline) dispatch(b *batch) {
	if p.isBig(b) {
		// One long line in work at a time: its block and its tree are what
		// the memory bound allows for. The reader may already hold the
		// token for it.
		p.holdBig()
		p.readerBig = false
		b.big = true
	}
	b.index = p.next
	p.next++
	if p.workers < 2 || b.index == 0 && b.last {
		p.c.safely(func() { p.c.checkLines(b, &p.inline) })
		p.c.safely(func() { p.c.sequence(b) })
		p.put(b)
		return
	}
	p.start.Do(p.run)
	p.work <- b
}

// run starts the workers and the sequencer.
func (p *pipeline) run() {
	p.work = make(chan *batch, cap(p.free))
	p.done = make(chan *batch, cap(p.free))
	for range p.workers {
		p.lines.Go(func() {
			var dec lineDecoder
			for b := range p.work {
				p.c.safely(func() { p.c.checkLines(b, &dec) })
				p.done <- b
			}
		})
	}
	p.order.Go(func() {
		// Batches finish out of order; each waits here for those before it.
		waiting := make(map[int]*batch)
		next := 0
		for b := range p.done {
			waiting[b.index] = b
			for b, ok := waiting[next]; ok; b, ok = waiting[next] {
				delete(waiting, next)
				p.c.safely(func() { p.c.sequence(b) })
				p.put(b)
				next++
			}
		}
	})
}

// wait waits until every dispatched batch was checked and sequenced.
func (p *pipeline) wait() {
	if p.work == nil {
		return
	}
	close(p.work)
	p.lines.Wait()
	close(p.done)
	p.order.Wait()
}

// streamReader reads the input block by block, measures its framing
// (steps 1–3) and cuts it into lines.
type streamReader struct {
	r     io.Reader
	block int
	fr    framing
	eof   bool
	head  []byte // the first bytes read, up to len(bom)
	last  byte   // the last byte read
	skip  int    // > 0: the length so far of a line too long to keep
}

func (rd *streamReader) init(r io.Reader, block int) {
	rd.r = io.LimitReader(r, canon.MaxTranscriptBytes+1)
	rd.block = block
}

// run reads the whole input. A batch is dispatched once the next block
// was read, so that it is known whether its last line is the
// transcript's. Once steps 1–3 have failed, which no later step can
// outrank, lines are still counted but no longer checked.
func (rd *streamReader) run(c *streamChecker, p *pipeline) error {
	var prev *batch // read, not yet dispatched
	var carry []byte
	for !rd.eof {
		b := p.get()
		if need := len(carry) + rd.block; cap(b.buf) < need {
			// A long line: give it room to be completed. While it is read,
			// the reader holds the big token, and hands it to the batch the
			// line ends in: so a long line is read only once the one before
			// it was checked, and the memory of one at a time is in use.
			size := max(need, 2*len(carry))
			if size <= 2*rd.block {
				b.buf = make([]byte, 0, size)
			} else {
				p.holdBig()
				b.buf = p.bigBuf(need, size)
			}
		}
		b.buf = append(b.buf, carry...)
		err := rd.fill(b)
		if prev != nil {
			// Bytes after prev's lines: a line follows its last one.
			prev.last = rd.eof && len(b.buf) == 0
			rd.hand(c, p, prev)
		}
		if err != nil {
			p.put(b)
			return err
		}
		if rd.fr.size > canon.MaxTranscriptBytes {
			p.put(b) // step 1 fails: nothing else is reported
			return nil
		}
		b.first = rd.fr.lines
		carry = rd.split(b, len(carry))
		if rd.fr.bom || rd.fr.cr || rd.fr.empty || rd.fr.lines > canon.MaxRecords {
			c.lower(passFile) // steps 1–3 fail: no line can be the answer
		}
		if rd.eof {
			b.last = len(carry) == 0
			rd.hand(c, p, b)
			return nil
		}
		prev = b
	}
	return nil
}

// hand dispatches b if it has lines to check, or puts it back.
func (rd *streamReader) hand(c *streamChecker, p *pipeline, b *batch) {
	if len(b.lines) == 0 || pass(c.floor.Load()) == passFile {
		p.put(b)
		return
	}
	p.dispatch(b)
}

// fill reads into b's free room until it is full or the input ends, and
// measures the framing of what it read.
func (rd *streamReader) fill(b *batch) error {
	start := len(b.buf)
	for empty := 0; len(b.buf) < cap(b.buf) && !rd.eof; {
		n, err := rd.r.Read(b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			rd.eof = true
		case err != nil:
			return err
		case n == 0:
			if empty++; empty == 100 {
				return io.ErrNoProgress
			}
		}
	}
	read := b.buf[start:]
	if len(rd.head) < len(bom) {
		rd.head = append(rd.head, read[:min(len(read), len(bom)-len(rd.head))]...)
		rd.fr.bom = string(rd.head) == bom
	}
	rd.fr.size += len(read)
	if !rd.fr.cr {
		rd.fr.cr = bytes.IndexByte(read, '\r') >= 0
	}
	if len(read) > 0 {
		rd.last = read[len(read)-1]
	}
	rd.fr.finalLF = rd.fr.size > 0 && rd.last == '\n'
	return nil
}

// split cuts b's bytes into lines, from, after the carried-over start of a
// line, on; it returns the start of the line still open at the end.
func (rd *streamReader) split(b *batch, from int) []byte {
	off := 0 // where the open line starts (when not skipping one)
	for {
		k := bytes.IndexByte(b.buf[from:], '\n')
		if k < 0 {
			break
		}
		end := from + k
		l := span{off: off, end: end}
		if rd.skip > 0 {
			l = span{over: rd.skip + end - off}
			rd.skip = 0
		} else if end-off > canon.MaxLineBytes {
			l = span{over: end - off}
		}
		rd.fr.empty = rd.fr.empty || end == off && l.over == 0
		if rd.fr.lines++; rd.fr.lines <= canon.MaxRecords && !rd.fr.empty {
			b.lines = append(b.lines, l)
		}
		off, from = end+1, end+1
	}
	rest := b.buf[off:]
	switch {
	case rd.skip > 0:
		rd.skip += len(rest)
		return nil
	case len(rest) > canon.MaxLineBytes:
		rd.skip = len(rest) // too long already: count it, keep none of it
		return nil
	}
	return rest
}
