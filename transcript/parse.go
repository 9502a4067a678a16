package transcript

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// Transcript is a parsed, valid transcript.
type Transcript struct {
	RunID   string
	Records []Record
	// Normalized lists the seqs of records the compat rule rewrote (a
	// legacy delivery without channel became channel spawn-env). Encode
	// writes the rewritten form, so those lines re-encode differently.
	Normalized []int
}

// Record is one record. Value is the whole record (envelope included) as
// decoded, after the compat rule.
type Record struct {
	Seq   int
	ID    string
	Kind  string
	Value canon.Value
}

// Payload returns the record's payload object.
func (r *Record) Payload() *canon.Value { return canon.Lookup(&r.Value, "payload") }

// Config returns the run's requested configuration (run.started).
func (t *Transcript) Config() config.Config {
	c, _ := config.Decode(canon.Lookup(t.Records[0].Payload(), "config"))
	return c
}

// Receipts returns the capability results in order.
func (t *Transcript) Receipts() []Receipt {
	var out []Receipt
	for i := range t.Records {
		if r := &t.Records[i]; r.Kind == KindCapability {
			out = append(out, receiptOf(r))
		}
	}
	return out
}

// PTYMode reports whether t was recorded in PTY mode (run --pty, or a
// recorded term session): its terminal receipt is the os tier's
// sandbox-devpts-pty, which only that mode records. replay picks its mode
// by it; export and report read the terminal stream by it.
func (t *Transcript) PTYMode() bool {
	for _, r := range t.Receipts() {
		if r.Constraint == receipts.Terminal && r.Tier == receipts.OS && r.Mechanism == receipts.MechanismPTY {
			return true
		}
	}
	return false
}

// Report returns the audit view of t's receipts (the receipts command),
// each applied one with its effective value as canonical JSON text.
func (t *Transcript) Report() (receipts.Report, error) {
	var rows []receipts.Row
	for i := range t.Records {
		r := &t.Records[i]
		if r.Kind != KindCapability {
			continue
		}
		rc := receiptOf(r)
		var eff []byte
		if rc.Status == receipts.Applied {
			var err error
			if eff, err = canon.Marshal(&rc.Effective); err != nil {
				return receipts.Report{}, fmt.Errorf("record %d: %w", r.Seq, err)
			}
		}
		rows = append(rows, receipts.NewRow(rc.Receipt, string(eff)))
	}
	return receipts.NewReport(t.RunID, t.Terminal(), rows), nil
}

// receiptOf reads the capability.result r, which Parse has validated.
func receiptOf(r *Record) Receipt {
	p := r.Payload()
	rc := Receipt{}
	s, _ := canon.Str(canon.Lookup(p, "constraint"))
	rc.Constraint = receipts.Constraint(s)
	s, _ = canon.Str(canon.Lookup(p, "status"))
	rc.Status = receipts.Status(s)
	if rc.Status == receipts.Unsupported {
		rc.Reason, _ = canon.Str(canon.Lookup(p, "reason"))
	} else {
		s, _ = canon.Str(canon.Lookup(p, "tier"))
		rc.Tier = receipts.Tier(s)
		rc.Effective = *canon.Lookup(p, "effective")
		if d, ok := p.Get("delivery"); ok {
			rc.Delivery = deliveryOf(d)
		}
	}
	rc.Mechanism, _ = canon.Str(canon.Lookup(p, "x-mechanism"))
	return rc
}

func deliveryOf(d *canon.Value) *receipts.Delivery {
	ch, _ := canon.Str(canon.Lookup(d, "channel"))
	out := &receipts.Delivery{Channel: receipts.Channel(ch)}
	if env, ok := d.Get("env"); ok {
		out.Env = make(map[string]string, len(env.Members))
		for _, m := range env.Members {
			out.Env[m.Key] = m.Value.Str
		}
	}
	out.Cwd, _ = canon.Str(canon.Lookup(d, "cwd"))
	return out
}

// Terminal returns the kind of the terminal record.
func (t *Transcript) Terminal() string { return t.Records[len(t.Records)-1].Kind }

// Read reads a whole transcript from r (at most MaxTranscriptBytes + 1
// bytes are read, so an oversized input is rejected without reading it
// all) and parses it. I/O errors are returned as they are, not as *Error.
func Read(r io.Reader) (*Transcript, error) {
	// Size the buffer once when the reader can say how big it is (a file):
	// growing it by doubling re-copies a 30 MiB transcript several times.
	var buf bytes.Buffer
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if info, err := st.Stat(); err == nil && info.Mode().IsRegular() {
			buf.Grow(int(min(info.Size(), canon.MaxTranscriptBytes)) + 1)
		}
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, canon.MaxTranscriptBytes+1)); err != nil {
		return nil, err
	}
	return Parse(buf.Bytes())
}

// Validate reports the first violation in data, or nil: what Parse
// would report, found by ValidateReader's streaming checker, which builds
// no transcript.
func Validate(data []byte) error {
	_, err := ValidateReader(bytes.NewReader(data))
	return err
}

// Parse parses and validates one transcript. Every rule of
// TRANSCRIPT-RULES.md is checked in its parse order and the first
// violation is returned as an *Error; input is never repaired beyond the
// named compat rule. Parse never panics on any input.
func Parse(data []byte) (t *Transcript, err error) {
	defer func() {
		// A bug must not take the caller down with a malformed transcript.
		if r := recover(); r != nil {
			t, err = nil, fileErr(RuleInternal, fmt.Errorf("transcript: internal error: %v", r))
		}
	}()
	lines, perr := frame(data)
	if perr != nil {
		return nil, perr
	}
	recs, perr := decodeAll(lines)
	if perr != nil {
		return nil, perr
	}
	t = &Transcript{Records: recs}
	if perr := normalize(t, lines, len(data)); perr != nil {
		return nil, perr
	}
	if perr := t.semantic(lines); perr != nil {
		return nil, perr
	}
	return t, nil
}

// frame applies steps 1–4: total size, framing, record count, then line
// size and lexical depth of every line, all before any JSON is decoded.
func frame(data []byte) ([][]byte, *Error) {
	f := framing{size: len(data)}
	if f.size <= canon.MaxTranscriptBytes {
		f.bom = bytes.HasPrefix(data, []byte(bom))
		f.cr = bytes.IndexByte(data, '\r') >= 0
		f.finalLF = len(data) > 0 && data[len(data)-1] == '\n'
		f.empty = len(data) > 0 && data[0] == '\n' || bytes.Contains(data, []byte("\n\n"))
		f.lines = bytes.Count(data, []byte{'\n'})
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	n := f.lines
	lines := make([][]byte, 0, n)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		lines = append(lines, data[:i:i])
		data = data[i+1:]
	}
	// Depth is counted on all CPUs; reporting stays in line order, size
	// before depth for each line, exactly as a serial pass would.
	deep := make([]bool, len(lines))
	inChunks(lines, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if len(lines[i]) <= canon.MaxLineBytes {
				deep[i] = canon.LexicalDepth(lines[i], canon.MaxDepth) > canon.MaxDepth
			}
		}
	})
	for i, l := range lines {
		if len(l) > canon.MaxLineBytes {
			return nil, lineBytesErr(i, len(l))
		}
		if deep[i] {
			return nil, depthErr(i)
		}
	}
	return lines, nil
}

// inChunks calls fn over contiguous chunks of lines on all CPUs (up to 8),
// split by bytes rather than lines because frames make line sizes uneven,
// and waits for them. Small inputs stay on the calling goroutine.
func inChunks(lines [][]byte, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), 8)
	var size int
	for _, l := range lines {
		size += len(l)
	}
	if workers < 2 || size < 1<<20 {
		fn(0, len(lines))
		return
	}
	var wg sync.WaitGroup
	per := size/workers + 1
	lo, acc := 0, 0
	for i, l := range lines {
		acc += len(l)
		if acc >= per || i == len(lines)-1 {
			start, end := lo, i+1
			wg.Go(func() { fn(start, end) })
			lo, acc = i+1, 0
		}
	}
	wg.Wait()
}

// decodeAll applies steps 5 and 6: decode every line, then require every
// line to be byte-identical to its RFC 8785 form. Lines are independent
// here, so large transcripts are decoded on all CPUs; the first violation
// by line order is reported, exactly as a serial pass would.
func decodeAll(lines [][]byte) ([]Record, *Error) {
	recs := make([]Record, len(lines))
	canonical := make([]bool, len(lines))
	errs := make([]error, len(lines))
	decode := func(lo, hi int) {
		var dec canon.Decoder
		for i := lo; i < hi; i++ {
			v, ok, err := dec.Decode(lines[i])
			if err != nil {
				errs[i] = err
				return // later lines of this chunk cannot be the first error
			}
			recs[i].Seq, recs[i].Value, canonical[i] = i, v, ok
		}
	}
	inChunks(lines, decode)
	for i, err := range errs {
		if err != nil {
			return nil, canonErr(i, err)
		}
	}
	for i, ok := range canonical {
		if !ok {
			return nil, canonicalErr(i)
		}
	}
	return recs, nil
}

// normalize is step 7: the compat rule (a legacy delivery without channel
// becomes channel spawn-env), then sizes and budgets re-checked for the
// rewritten records, the transcript's total last.
func normalize(t *Transcript, lines [][]byte, total int) *Error {
	for i := range t.Records {
		grew, err := compat(i, &t.Records[i].Value, len(lines[i]))
		if err != nil {
			return err
		}
		if grew == 0 {
			continue
		}
		t.Normalized = append(t.Normalized, i)
		if total += grew; total > canon.MaxTranscriptBytes {
			return compatTotalErr(total)
		}
	}
	return nil
}

// semantic is step 8, in the spec's pass order: kinds and member sets
// (whole file), placement and ids (whole file), then the record-by-record
// validator for every later pass.
func (t *Transcript) semantic(lines [][]byte) *Error {
	// Each record's envelope is checked on its own, so on all CPUs; the
	// first violation by record order is reported.
	fields := make([]envelopeFields, len(t.Records))
	errs := make([]*Error, len(t.Records))
	inChunks(lines, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			fields[i], errs[i] = checkEnvelope(i, &t.Records[i].Value)
		}
	})
	for i, err := range errs {
		if err != nil {
			return err
		}
		t.Records[i].ID, t.Records[i].Kind = fields[i].id, fields[i].kind
	}
	p := placement{ids: make(map[string]struct{}, len(fields))}
	for i := range fields {
		if err := p.check(i, i == len(fields)-1, &fields[i]); err != nil {
			return err
		}
	}
	t.RunID = p.runID
	var v validator
	for i := range fields {
		if err := v.feed(i, fields[i].kind, fields[i].payload); err != nil {
			return err
		}
	}
	return nil
}

// Encode returns the canonical bytes of t: one RFC 8785 line per record,
// each ending in LF. For a transcript Parse accepted, the result is the
// input byte for byte, except for records the compat rule rewrote
// (t.Normalized), which come out in the channel-tagged form emitters must
// produce. Encode does not re-validate.
func Encode(t *Transcript) ([]byte, error) {
	var out []byte
	for i := range t.Records {
		var err error
		if out, err = canon.Append(out, &t.Records[i].Value); err != nil {
			return nil, fmt.Errorf("encode record %d: %w", i, err)
		}
		out = append(out, '\n')
	}
	return out, nil
}
