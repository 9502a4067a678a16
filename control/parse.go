package control

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// Parse decodes one message line (its LF included) and checks it in
// upstream's order, stopping at the first violation:
//
//  1. at most 4 MiB + LF;
//  2. no byte-order mark, no CR anywhere;
//  3. ends in LF; 4. no other LF;
//  5. bracket depth ≤ 64, counted lexically before any decoding;
//  6. UTF-8, JSON syntax, duplicate members at any depth, lone surrogate
//     escapes, non-finite numbers, integers beyond ±(2^53−1), a top-level
//     object and the value budgets (internal/canon, one pass);
//  7. envelope members exactly protocol, kind, payload plus x-*; the
//     protocol tag; a v1 kind;
//  8. the kind's payload: closed member sets (plus x-*), required members,
//     then the per-kind value rules, depth first.
//
// Non-canonical member order, whitespace and escapes are accepted, as on
// upstream's wire. Every error is an *Error of Class PeerMalformed.
//
// Opaque values (state, details, event data) are returned in canonical
// form: members sorted as RFC 8785 sorts them and numbers in their
// canonical spelling, so that what the supervisor records is exactly what
// the transcript writer emits, and Parse(Encode(m)) == m holds.
func Parse(line []byte) (Message, error) {
	return parse(line, nil)
}

// parse is Parse with the caller's decoder, so a Reader reuses its
// scratch space from message to message; nil decodes one-off, each
// container allocated to size.
func parse(line []byte, dec *canon.Decoder) (Message, error) {
	body, err := unframe(line)
	if err != nil {
		return nil, err
	}
	decode := canon.Decode
	if dec != nil {
		decode = dec.Decode
	}
	v, canonical, err := decode(body) // canonical spelling is not required on this wire
	// Depth first, lexically: upstream bounds nesting before it decodes, so
	// a deep message is a limit breach even when it is also bad UTF-8. A
	// line that decodes is no deeper than the decoder allows, so only a
	// failed decode needs the lexical count to say which error comes first.
	if err != nil && canon.LexicalDepth(body, canon.MaxDepth) > canon.MaxDepth {
		return nil, malformed(RuleDepth, "", "JSON nesting deeper than %d", canon.MaxDepth)
	}
	if err != nil {
		if ce, ok := errors.AsType[*canon.Error](err); ok {
			return nil, &Error{Rule: ce.Rule, Detail: fmt.Sprintf("%s (byte %d)", ce.Detail, ce.Offset), Class: PeerMalformed, Err: ce}
		}
		return nil, &Error{Rule: canon.RuleSyntax, Detail: err.Error(), Class: PeerMalformed, Err: err}
	}
	m, err := decodeEnvelope(&v)
	if err == nil && !canonical {
		// Only a non-canonical line can hold non-canonical opaque values;
		// most subjects write canonical lines and skip this walk.
		m, err = canonicalizeOpaque(m)
	}
	return m, err
}

// canonicalizeOpaque puts every opaque value of m (state, details, event
// data) into RFC 8785 form, so that what the supervisor records is what the
// transcript writer emits. A number with no v1 canonical form (a float
// such as 1e20, which ECMAScript spells as an integer beyond 2^53) is
// refused here: no transcript could record it (ADAPTER-RULES.md,
// improvement 3, says the same of integer literals).
func canonicalizeOpaque(m Message) (Message, error) {
	observation := func(o *Observation, at string) error {
		if err := canonicalize(&o.State, at+".state"); err != nil {
			return err
		}
		for i := range o.Events {
			if err := canonicalize(&o.Events[i].Data, fmt.Sprintf("%s.events[%d].data", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	details := func(d *canon.Value, at string) error {
		if d == nil {
			return nil
		}
		return canonicalize(d, at)
	}
	var err error
	switch m := m.(type) {
	case Observation:
		err = observation(&m, "payload")
		return m, err
	case Ready:
		err = observation(&m.Observation, "payload.observation")
		return m, err
	case Diagnostic:
		err = details(m.Details, "payload.details")
		return m, err
	case Unsupported:
		err = details(m.Details, "payload.details")
		return m, err
	case SessionFailed:
		err = details(m.Error.Details, "payload.error.details")
		return m, err
	case RunFailed:
		err = details(m.Error.Details, "payload.error.details")
		return m, err
	}
	return m, nil
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// unframe applies the line-level checks and returns the line without its
// LF. Upstream's fifth check (body ≤ 4 MiB) cannot fail once the first and
// the LF checks passed, so it has no code here.
func unframe(line []byte) ([]byte, error) {
	if len(line) > canon.MaxLineBytes+1 {
		return nil, malformed(RuleLineBytes, "", "message line of %d bytes exceeds %d bytes plus LF", len(line), canon.MaxLineBytes)
	}
	if bytes.HasPrefix(line, bom) {
		return nil, malformed(RuleBOM, "", "message starts with a byte-order mark")
	}
	if i := bytes.IndexByte(line, '\r'); i >= 0 {
		return nil, malformed(RuleCR, "", "CR at byte %d", i)
	}
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return nil, malformed(RuleMissingLF, "", "message does not end with LF")
	}
	body := line[:len(line)-1]
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		return nil, malformed(RuleEmbeddedLF, "", "LF at byte %d inside the message", i)
	}
	return body, nil
}

func decodeEnvelope(v *canon.Value) (Message, error) {
	for i := range v.Members {
		switch k := v.Members[i].Key; k {
		case "protocol", "kind", "payload":
		default:
			if !canon.IsExtension(k) {
				at := path{name: k, index: -1}
				return nil, malformed(RuleEnvelopeUnknown, at.String(), "envelope member %s is reserved", canon.Quote(k))
			}
		}
	}
	for _, name := range [...]string{"protocol", "kind", "payload"} {
		if _, ok := v.Get(name); !ok {
			return nil, malformed(RuleEnvelopeMissing, name, "envelope member is required")
		}
	}
	if p, _ := v.Get("protocol"); p.Kind != canon.String || p.Str != Protocol {
		return nil, malformed(RuleProtocol, "protocol", "must be exactly %s, not %s", Protocol, show(p))
	}
	k, _ := v.Get("kind")
	kind := Kind(k.Str)
	if k.Kind != canon.String || kind.Direction() == 0 {
		return nil, malformed(RuleKind, "kind", "%s is not a v1 message kind", show(k))
	}
	payload, _ := v.Get("payload")
	at := &path{name: "payload", index: -1}
	switch kind {
	case KindSessionHello:
		return decodeHello(payload, at)
	case KindInputText:
		if err := closed(payload, at, []string{"text"}, nil); err != nil {
			return nil, err
		}
		s, err := wantString(payload, at, "text")
		return Text{Text: s}, err
	case KindInputKey:
		return decodeKey(payload, at)
	case KindInputResize:
		if err := closed(payload, at, []string{"columns", "rows"}, nil); err != nil {
			return nil, err
		}
		var m Resize
		var err error
		if m.Columns, err = wantInt(payload, at, "columns", 1); err != nil {
			return nil, err
		}
		m.Rows, err = wantInt(payload, at, "rows", 1)
		return m, err
	case KindInputClock:
		if err := closed(payload, at, []string{"at_ms"}, nil); err != nil {
			return nil, err
		}
		n, err := wantInt(payload, at, "at_ms", 0)
		return Clock{AtMS: n}, err
	case KindInputStop:
		return Stop{}, closed(payload, at, nil, nil)
	case KindUnsupported:
		return decodeUnsupported(payload, at)
	case KindSessionFailed:
		f, err := decodeFailurePayload(payload, at)
		return SessionFailed{Error: f}, err
	case KindSessionReady:
		return decodeReady(payload, at)
	case KindDiagnostic:
		f, err := decodeFailure(payload, at)
		return Diagnostic(f), err
	case KindObservation:
		return decodeObservation(payload, at)
	case KindRunFinished:
		if err := closed(payload, at, []string{"exit"}, nil); err != nil {
			return nil, err
		}
		x, _ := payload.Get("exit")
		e, err := decodeExit(x, ptr(at.member("exit")))
		return RunFinished{Exit: e}, err
	default: // KindRunFailed: Direction() admitted only the thirteen
		f, err := decodeFailurePayload(payload, at)
		return RunFailed{Error: f}, err
	}
}

func decodeHello(p *canon.Value, at *path) (Message, error) {
	if err := closed(p, at, []string{"run_id", "config", "at_ms"}, nil); err != nil {
		return nil, err
	}
	var m Hello
	var err error
	if m.RunID, err = wantString(p, at, "run_id"); err != nil {
		return nil, err
	}
	if !config.ValidIdentifier(m.RunID) {
		return nil, fieldErr(RuleIdentifier, at, "run_id", "%s is not a v1 identifier [a-z0-9._-]+", canon.Quote(m.RunID))
	}
	cv, _ := p.Get("config")
	if m.Config, err = config.Decode(cv); err != nil {
		member := "payload.config"
		ce, ok := errors.AsType[*config.Error](err)
		if !ok {
			return nil, &Error{Rule: config.RuleType, Member: member, Detail: err.Error(), Class: PeerMalformed, Err: err}
		}
		if ce.Member != "" {
			member += "." + ce.Member
		}
		// Keep config's own rule: it already names which constraint's shape
		// is wrong, and both protocols share it.
		return nil, &Error{Rule: ce.Rule, Member: member, Detail: ce.Detail, Class: PeerMalformed, Err: ce}
	}
	if m.AtMS, err = wantInt(p, at, "at_ms", 0); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeKey(p *canon.Value, at *path) (Message, error) {
	if err := closed(p, at, []string{"keys"}, nil); err != nil {
		return nil, err
	}
	keys, err := wantStrings(p, at, "keys")
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fieldErr(RuleEmpty, at, "keys", "must name at least one key")
	}
	return Key{Keys: keys}, nil
}

func decodeUnsupported(p *canon.Value, at *path) (Message, error) {
	if err := closed(p, at, []string{"constraint", "code", "message"}, []string{"details"}); err != nil {
		return nil, err
	}
	var m Unsupported
	c, err := wantString(p, at, "constraint")
	if err != nil {
		return nil, err
	}
	if !slices.Contains(receipts.Constraints(), receipts.Constraint(c)) {
		return nil, fieldErr(RuleVocabulary, at, "constraint", "%s is not a v1 constraint", canon.Quote(c))
	}
	m.Constraint = receipts.Constraint(c)
	if m.Code, err = wantString(p, at, "code"); err != nil {
		return nil, err
	}
	if m.Code != receipts.CodeUnsupported && m.Code != receipts.CodeNotEnforced {
		return nil, fieldErr(RuleVocabulary, at, "code", "%s is neither %s nor %s", canon.Quote(m.Code), receipts.CodeUnsupported, receipts.CodeNotEnforced)
	}
	if m.Message, err = wantString(p, at, "message"); err != nil {
		return nil, err
	}
	m.Details = opaqueMember(p, "details")
	return m, nil
}

// decodeFailurePayload reads a payload {error: {code, message, details?}}.
func decodeFailurePayload(p *canon.Value, at *path) (Failure, error) {
	if err := closed(p, at, []string{"error"}, nil); err != nil {
		return Failure{}, err
	}
	e, _ := p.Get("error")
	return decodeFailure(e, ptr(at.member("error")))
}

// decodeFailure reads {code, message, details?}: the error shape, and also
// exactly the diagnostic payload.
func decodeFailure(v *canon.Value, at *path) (Failure, error) {
	if err := closed(v, at, []string{"code", "message"}, []string{"details"}); err != nil {
		return Failure{}, err
	}
	var f Failure
	var err error
	if f.Code, err = wantNonEmpty(v, at, "code"); err != nil {
		return Failure{}, err
	}
	if f.Message, err = wantString(v, at, "message"); err != nil {
		return Failure{}, err
	}
	f.Details = opaqueMember(v, "details")
	return f, nil
}

func decodeReady(p *canon.Value, at *path) (Message, error) {
	if err := closed(p, at, []string{"observation"}, nil); err != nil {
		return nil, err
	}
	ov, _ := p.Get("observation")
	oat := at.member("observation")
	o, err := decodeObservation(ov, &oat)
	if err != nil {
		return nil, err
	}
	// Seed 000: readiness declares a live subject, so exited-process
	// evidence here is the codec's to reject (peer-malformed), unlike in an
	// epoch, where the adapter rejects it as peer-lifecycle.
	if o.Process != nil && o.Process.State == ProcessExited {
		p := oat.member("process")
		return nil, malformed(RuleExitedInReady, p.String(), "readiness cannot report an exited process")
	}
	return Ready{Observation: o}, nil
}

func decodeObservation(v *canon.Value, at *path) (Observation, error) {
	if err := closed(v, at, []string{"state", "ui", "events"}, []string{"frame", "process"}); err != nil {
		return Observation{}, err
	}
	var o Observation
	var err error
	o.State = *opaqueMember(v, "state")
	uv, _ := v.Get("ui")
	if o.UI, err = decodeUI(uv, ptr(at.member("ui"))); err != nil {
		return Observation{}, err
	}
	if o.Events, err = decodeEvents(v, at); err != nil {
		return Observation{}, err
	}
	if fv, ok := v.Get("frame"); ok {
		f, err := decodeFrame(fv, ptr(at.member("frame")))
		if err != nil {
			return Observation{}, err
		}
		o.Frame = &f
	}
	if pv, ok := v.Get("process"); ok {
		p, err := decodeProcess(pv, ptr(at.member("process")))
		if err != nil {
			return Observation{}, err
		}
		o.Process = &p
	}
	return o, nil
}

func decodeUI(v *canon.Value, at *path) (UI, error) {
	if err := closed(v, at, []string{"regions", "cursor"}, []string{"focus", "mode"}); err != nil {
		return UI{}, err
	}
	var u UI
	rv, _ := v.Get("regions")
	rat := at.member("regions")
	if rv.Kind != canon.Array {
		return UI{}, malformed(RuleType, rat.String(), "must be an array, not %s", describe(rv))
	}
	u.Regions = make([]Region, len(rv.Items))
	// A subject may send up to 16,384 regions: past a handful, find
	// duplicates with a set rather than quadratically.
	var ids map[string]struct{}
	if len(rv.Items) > 8 {
		ids = make(map[string]struct{}, len(rv.Items))
	}
	for i := range rv.Items {
		iat := rat.item(i)
		r, err := decodeRegion(&rv.Items[i], &iat)
		if err != nil {
			return UI{}, err
		}
		dup := false
		if ids != nil {
			_, dup = ids[r.ID]
			ids[r.ID] = struct{}{}
		} else {
			dup = slices.ContainsFunc(u.Regions[:i], func(q Region) bool { return q.ID == r.ID })
		}
		if dup {
			idp := iat.member("id")
			return UI{}, malformed(RuleDuplicateRegion, idp.String(), "region id %s is not unique", canon.Quote(r.ID))
		}
		u.Regions[i] = r
	}
	cv, _ := v.Get("cursor")
	cat := at.member("cursor")
	if err := closed(cv, &cat, []string{"column", "row", "visible"}, nil); err != nil {
		return UI{}, err
	}
	var err error
	if u.Cursor.Column, err = wantInt(cv, &cat, "column", 0); err != nil {
		return UI{}, err
	}
	if u.Cursor.Row, err = wantInt(cv, &cat, "row", 0); err != nil {
		return UI{}, err
	}
	vis, _ := cv.Get("visible")
	if vis.Kind != canon.Bool {
		return UI{}, fieldErr(RuleType, &cat, "visible", "must be a boolean, not %s", describe(vis))
	}
	u.Cursor.Visible = vis.Bool
	if u.Focus, err = nullableString(v, at, "focus"); err != nil {
		return UI{}, err
	}
	if u.Focus != nil {
		if *u.Focus == "" {
			return UI{}, fieldErr(RuleEmpty, at, "focus", "must be a non-empty region id or null")
		}
		if !slices.ContainsFunc(u.Regions, func(r Region) bool { return r.ID == *u.Focus }) {
			return UI{}, fieldErr(RuleFocusUnknown, at, "focus", "%s names no region", canon.Quote(*u.Focus))
		}
	}
	if u.Mode, err = nullableString(v, at, "mode"); err != nil {
		return UI{}, err
	}
	return u, nil
}

func decodeRegion(v *canon.Value, at *path) (Region, error) {
	if err := closed(v, at, []string{"id", "role", "column", "row", "columns", "rows"}, nil); err != nil {
		return Region{}, err
	}
	var r Region
	var err error
	if r.ID, err = wantNonEmpty(v, at, "id"); err != nil {
		return Region{}, err
	}
	if r.Role, err = wantNonEmpty(v, at, "role"); err != nil {
		return Region{}, err
	}
	if r.Column, err = wantInt(v, at, "column", 0); err != nil {
		return Region{}, err
	}
	if r.Row, err = wantInt(v, at, "row", 0); err != nil {
		return Region{}, err
	}
	if r.Columns, err = wantInt(v, at, "columns", 1); err != nil {
		return Region{}, err
	}
	if r.Rows, err = wantInt(v, at, "rows", 1); err != nil {
		return Region{}, err
	}
	return r, nil
}

func decodeEvents(obs *canon.Value, at *path) ([]Event, error) {
	ev, _ := obs.Get("events")
	eat := at.member("events")
	if ev.Kind != canon.Array {
		return nil, malformed(RuleType, eat.String(), "must be an array, not %s", describe(ev))
	}
	events := make([]Event, len(ev.Items))
	for i := range ev.Items {
		iat := eat.item(i)
		e := &ev.Items[i]
		if err := closed(e, &iat, []string{"type", "data"}, nil); err != nil {
			return nil, err
		}
		t, err := wantNonEmpty(e, &iat, "type")
		if err != nil {
			return nil, err
		}
		events[i] = Event{Type: t, Data: *opaqueMember(e, "data")}
	}
	return events, nil
}

func decodeFrame(v *canon.Value, at *path) (Frame, error) {
	if err := closed(v, at, []string{"lines", "columns", "rows"}, nil); err != nil {
		return Frame{}, err
	}
	var f Frame
	var err error
	if f.Lines, err = wantStrings(v, at, "lines"); err != nil {
		return Frame{}, err
	}
	if f.Columns, err = wantInt(v, at, "columns", 1); err != nil {
		return Frame{}, err
	}
	if f.Rows, err = wantInt(v, at, "rows", 1); err != nil {
		return Frame{}, err
	}
	if int64(len(f.Lines)) != f.Rows {
		return Frame{}, fieldErr(RuleFrameRows, at, "lines", "has %d lines but rows is %d", len(f.Lines), f.Rows)
	}
	return f, nil
}

func decodeProcess(v *canon.Value, at *path) (Process, error) {
	if err := closed(v, at, []string{"state"}, []string{"exit"}); err != nil {
		return Process{}, err
	}
	s, err := wantString(v, at, "state")
	if err != nil {
		return Process{}, err
	}
	ev, hasExit := v.Get("exit")
	switch ProcessState(s) {
	case ProcessRunning:
		if hasExit {
			return Process{}, fieldErr(RuleRunningWithExit, at, "exit", "a running process cannot carry exit evidence")
		}
		return Process{State: ProcessRunning}, nil
	case ProcessExited:
		if !hasExit {
			return Process{}, fieldErr(RuleExitedWithoutExit, at, "exit", "an exited process requires exit evidence")
		}
		e, err := decodeExit(ev, ptr(at.member("exit")))
		if err != nil {
			return Process{}, err
		}
		return Process{State: ProcessExited, Exit: &e}, nil
	}
	return Process{}, fieldErr(RuleVocabulary, at, "state", "%s is neither running nor exited", canon.Quote(s))
}

func decodeExit(v *canon.Value, at *path) (Exit, error) {
	if err := closed(v, at, []string{"kind", "value"}, nil); err != nil {
		return Exit{}, err
	}
	k, err := wantString(v, at, "kind")
	if err != nil {
		return Exit{}, err
	}
	switch ExitKind(k) {
	case ExitCode:
		n, err := wantInt(v, at, "value", -canon.MaxSafeInteger)
		return Exit{Kind: ExitCode, Code: n}, err
	case ExitSignal:
		s, err := wantNonEmpty(v, at, "value")
		return Exit{Kind: ExitSignal, Signal: s}, err
	}
	return Exit{}, fieldErr(RuleVocabulary, at, "kind", "%s is neither code nor signal", canon.Quote(k))
}

// Member checks and typed reads. Each reads a member that closed has
// already proven present.

// closed checks that v is an object with no member outside required,
// optional and x-*, then that every required member is present — upstream's
// order, so an unknown member is reported before a missing one.
func closed(v *canon.Value, at *path, required, optional []string) error {
	if v.Kind != canon.Object {
		return malformed(RuleType, at.String(), "must be an object, not %s", describe(v))
	}
	missing, unknown := v.CheckClosed(required, optional)
	switch {
	case unknown != "":
		return fieldErr(RuleUnknownMember, at, unknown, "member %s is reserved", canon.Quote(unknown))
	case missing != "":
		return fieldErr(RuleMissingMember, at, missing, "required member is missing")
	}
	return nil
}

func wantString(obj *canon.Value, at *path, name string) (string, error) {
	x, _ := obj.Get(name)
	if x.Kind != canon.String {
		return "", fieldErr(RuleType, at, name, "must be a string, not %s", describe(x))
	}
	return x.Str, nil
}

func wantNonEmpty(obj *canon.Value, at *path, name string) (string, error) {
	s, err := wantString(obj, at, name)
	if err == nil && s == "" {
		return "", fieldErr(RuleEmpty, at, name, "must be a non-empty string")
	}
	return s, err
}

// wantInt reads an integer of at least min. Floats such as 1.0 are not
// integers, as upstream's parser reads them as floats; integers beyond
// ±(2^53−1) never get here (canon rejects them, our deliberate difference).
func wantInt(obj *canon.Value, at *path, name string, min int64) (int64, error) {
	x, _ := obj.Get(name)
	n, ok := x.Int()
	if !ok {
		return 0, fieldErr(RuleInteger, at, name, "must be an integer, not %s", describe(x))
	}
	if n < min {
		return 0, fieldErr(RuleRange, at, name, "%d is below the minimum %d", n, min)
	}
	return n, nil
}

func wantStrings(obj *canon.Value, at *path, name string) ([]string, error) {
	x, _ := obj.Get(name)
	if x.Kind != canon.Array {
		return nil, fieldErr(RuleType, at, name, "must be an array of strings, not %s", describe(x))
	}
	list := make([]string, len(x.Items))
	for i := range x.Items {
		if x.Items[i].Kind != canon.String {
			p := at.member(name)
			ip := p.item(i)
			return nil, malformed(RuleType, ip.String(), "must be a string, not %s", describe(&x.Items[i]))
		}
		list[i] = x.Items[i].Str
	}
	return list, nil
}

// nullableString reads an optional member that is a string or null; absent
// and null both give nil.
func nullableString(obj *canon.Value, at *path, name string) (*string, error) {
	x, ok := obj.Get(name)
	if !ok || x.Kind == canon.Null {
		return nil, nil
	}
	if x.Kind != canon.String {
		return nil, fieldErr(RuleType, at, name, "must be a string or null, not %s", describe(x))
	}
	s := x.Str
	return &s, nil
}

// opaqueMember returns a copy of an opaque member, or nil when it is
// absent; Parse canonicalizes it afterwards. The copy is shallow: it keeps
// only its own subtree alive, not the whole message.
func opaqueMember(obj *canon.Value, name string) *canon.Value {
	x, ok := obj.Get(name)
	if !ok {
		return nil
	}
	c := *x
	return &c
}

// canonicalize rewrites v in place into RFC 8785 form: members sorted by
// UTF-16 code units and numbers spelled canonically. canon.Decode accepted
// every number, so each has a canonical spelling.
func canonicalize(v *canon.Value, at string) error {
	switch v.Kind {
	case canon.Number:
		c, err := canon.CanonicalNumber(v.Str)
		if err != nil {
			rule, detail := canon.RuleSyntax, err.Error()
			if ce, ok := errors.AsType[*canon.Error](err); ok {
				rule, detail = ce.Rule, ce.Detail
			}
			return &Error{Rule: rule, Member: at, Detail: detail + "; no transcript can record it", Class: PeerMalformed, Err: err}
		}
		v.Str = c
	case canon.Array:
		for i := range v.Items {
			if err := canonicalize(&v.Items[i], at); err != nil {
				return err
			}
		}
	case canon.Object:
		slices.SortFunc(v.Members, func(a, b canon.Member) int {
			switch {
			case a.Key == b.Key:
				return 0
			case canon.Less(a.Key, b.Key):
				return -1
			}
			return 1
		})
		for i := range v.Members {
			if err := canonicalize(&v.Members[i].Value, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// describe names a value's type for an error detail; numbers show their
// literal so that "1.0 is not an integer" is visible.
func describe(v *canon.Value) string {
	if v.Kind == canon.Number {
		return "number " + truncate(v.Str)
	}
	return v.Kind.String()
}

// show is describe, but shows a string's (truncated) text too.
func show(v *canon.Value) string {
	if v.Kind == canon.String {
		return canon.Quote(v.Str)
	}
	return describe(v)
}

func truncate(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}

func fieldErr(rule string, at *path, name, format string, args ...any) *Error {
	p := at.member(name)
	return malformed(rule, p.String(), format, args...)
}

// path is a member path built on the stack as the decoder descends, and
// rendered ("payload.ui.regions[2].id") only when an error needs it, so a
// valid message costs no path strings.
type path struct {
	up    *path
	name  string // member name when index < 0
	index int
}

func (p *path) member(name string) path { return path{up: p, name: name, index: -1} }
func (p *path) item(i int) path         { return path{up: p, index: i} }

func ptr(p path) *path { return &p }

func (p *path) String() string {
	var b []byte
	return string(p.append(b))
}

func (p *path) append(b []byte) []byte {
	if p.up != nil {
		b = p.up.append(b)
	}
	switch {
	case p.index >= 0:
		b = strconv.AppendInt(append(b, '['), int64(p.index), 10)
		return append(b, ']')
	case !plainName(p.name):
		// Quoted, so that a path stays one printable line whatever the key.
		return append(append(append(b, '['), canon.Quote(p.name)...), ']')
	case len(b) > 0:
		b = append(b, '.')
	}
	return append(b, p.name...)
}

func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
