package transcript

import (
	"errors"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// This file holds the checks of steps 1–7 that Parse and the streaming
// checker (ValidateReader) both make, and the violations they report,
// built in one place so that the two cannot drift apart.

// bom is the UTF-8 byte-order mark.
const bom = "\xef\xbb\xbf"

// framing is what steps 1–3 look at: the size and framing of the whole
// transcript and its line count. Parse measures it at once, the streaming
// checker as the bytes arrive.
type framing struct {
	size    int  // bytes
	bom     bool // begins with a byte-order mark
	cr      bool // holds a CR
	finalLF bool // is not empty and ends with LF
	empty   bool // holds an empty line
	lines   int  // LFs
}

// err is the first violation of steps 1–3, in the spec's order.
func (f *framing) err() *Error {
	if f.size > canon.MaxTranscriptBytes {
		return fileErr(RuleTranscriptBytes, detail("%d bytes exceed %d", f.size, canon.MaxTranscriptBytes))
	}
	switch {
	case f.bom:
		return fileErr(RuleBOM, errors.New("a byte-order mark is not allowed"))
	case f.cr:
		return fileErr(RuleCR, errors.New("CR is not allowed; lines end with exactly one LF"))
	case !f.finalLF:
		return fileErr(RuleFinalLF, errors.New("the transcript must end with LF"))
	case f.empty:
		return fileErr(RuleEmptyLine, errors.New("empty lines are not allowed"))
	}
	if f.lines > canon.MaxRecords {
		return fileErr(RuleRecords, detail("%d records exceed %d", f.lines, canon.MaxRecords))
	}
	return nil
}

// lineBytesErr: line i is n bytes long (LF excluded), over the limit.
func lineBytesErr(i, n int) *Error {
	return lineErr(i, canon.RuleLineBytes, detail("%d bytes exceed %d", n, canon.MaxLineBytes))
}

// depthErr: line i nests deeper than the limit, counted lexically.
func depthErr(i int) *Error {
	return lineErr(i, canon.RuleDepth, detail("nesting deeper than %d", canon.MaxDepth))
}

// canonicalErr: line i decodes but is not in RFC 8785 form.
func canonicalErr(i int) *Error {
	return lineErr(i, RuleCanonical, errors.New("the line is not byte-identical to its RFC 8785 canonical form"))
}

// compatTotalErr: the compat rule grew the transcript past its limit.
func compatTotalErr(total int) *Error {
	return fileErr(RuleTranscriptBytes, detail("after the compat rule, %d bytes exceed %d", total, canon.MaxTranscriptBytes))
}

// compat is step 7 for record i, a line of lineLen bytes: the compat rule
// (a capability.result whose delivery has no channel gets channel
// spawn-env), then the rewritten line's size and value budgets
// re-checked. It returns how many bytes the rewrite added: 0 when the
// record was not rewritten. The transcript's total is the caller's.
func compat(i int, rec *canon.Value, lineLen int) (grew int, _ *Error) {
	if k, _ := canon.Str(canon.Lookup(rec, "kind")); k != KindCapability {
		return 0, nil
	}
	p := canon.Lookup(rec, "payload")
	if p == nil || p.Kind != canon.Object {
		return 0, nil
	}
	d := canon.Lookup(p, "delivery")
	if d == nil || d.Kind != canon.Object {
		return 0, nil
	}
	if _, ok := d.Get("channel"); ok {
		return 0, nil
	}
	d.Members = append([]canon.Member{canon.M("channel", canon.StringValue(string(receipts.SpawnEnv)))}, d.Members...)
	line, err := canon.Marshal(rec)
	if err != nil {
		return 0, canonErr(i, err)
	}
	if len(line) > canon.MaxLineBytes {
		return 0, lineErr(i, canon.RuleLineBytes, detail("after the compat rule, %d bytes exceed %d", len(line), canon.MaxLineBytes))
	}
	if err := canon.Measure(rec).Check(); err != nil {
		return 0, canonErr(i, err)
	}
	return len(line) - lineLen, nil
}
