package transcript

import (
	"errors"
	"strings"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// This file holds the checks of TRANSCRIPT-RULES.md's step 8 that look at
// one record alone: the envelope (pass "kinds and member sets"), and
// summarize, which runs every payload check of a record and keeps what
// the sequence machine of validate.go compares. Nothing here depends on
// the records before it, so the streaming checker runs it on any CPU.

// payloadMembers is the closed member set of each kind's payload (x-
// members aside), space-separated; ok is false for a kind v1 does not
// define. (A constant string: a slice would be allocated on every call.)
func payloadMembers(kind string) (names string, ok bool) {
	if names, ok := input.Members(kind); ok {
		return names, true // the input package's vocabulary
	}
	switch kind {
	case KindRunStarted:
		return "config subject", true
	case KindCapability:
		return "constraint status effective tier delivery reason", true
	case KindObservation:
		return "at_ms state events ui frame process", true
	case KindDiagnostic:
		return "at_ms code message details", true
	case KindRunFinished:
		return "exit", true
	case KindRunFailed:
		return "error", true
	case KindRunUnsupported:
		// details is not in TRANSCRIPT-RULES.md, but upstream accepts it
		// (corpus 0447–0453), as session.unsupported carries it (seed 000).
		return "constraint code message details", true
	}
	return "", false
}

func isTerminal(kind string) bool {
	return kind == KindRunFinished || kind == KindRunFailed || kind == KindRunUnsupported
}

func isInput(kind string) bool { return strings.HasPrefix(kind, "input.") }

func nonEmptyStr(v *canon.Value) bool { s, ok := canon.Str(v); return ok && s != "" }

// envelopeFields is what checkEnvelope found in a record.
type envelopeFields struct {
	runID, id, kind string
	payload         *canon.Value
}

var envelopeNames = []string{"protocol", "run_id", "seq", "id", "kind", "payload"}

// checkEnvelope is the "kinds and member sets" pass for record i.
func checkEnvelope(i int, rec *canon.Value) (envelopeFields, *Error) {
	var f envelopeFields
	bad := func(rule string, format string, args ...any) (envelopeFields, *Error) {
		return f, &Error{Record: i, Line: i + 1, Kind: f.kind, Rule: rule, Err: detail(format, args...)}
	}
	if err := canon.Closed(rec, envelopeNames, nil); err != nil {
		return bad(RuleEnvelopeMembers, "envelope %v", err)
	}
	if s, ok := canon.Str(canon.Lookup(rec, "protocol")); !ok || s != Protocol {
		return bad(RuleProtocol, "protocol must be %q", Protocol)
	}
	if n, ok := canon.Lookup(rec, "seq").Int(); !ok || n != int64(i) {
		return bad(RuleSeq, "seq must be %d, the record's zero-based line number", i)
	}
	var ok bool
	if f.runID, ok = canon.Str(canon.Lookup(rec, "run_id")); !ok || !config.ValidIdentifier(f.runID) {
		return bad(RuleRunID, "run_id must match [a-z0-9._-]+")
	}
	if f.id, ok = canon.Str(canon.Lookup(rec, "id")); !ok || !config.ValidIdentifier(f.id) {
		return bad(RuleID, "id must match [a-z0-9._-]+")
	}
	kind, _ := canon.Str(canon.Lookup(rec, "kind"))
	names, known := payloadMembers(kind)
	if !known {
		return bad(RuleKind, "kind %s is not defined by v1", canon.Quote(kind))
	}
	f.kind = internKind(kind)
	f.payload = canon.Lookup(rec, "payload")
	if err := checkPayloadMembers(kind, names, f.payload); err != nil {
		return bad(RulePayloadMembers, "%s payload %v", kind, err)
	}
	return f, nil
}

// internKind returns the package's own copy of a v1 kind name, so that an
// *Error or a record naming it refers to no input memory (the streaming
// checker reuses that memory for the next line); any other name as is.
func internKind(kind string) string {
	for _, k := range [...]string{KindObservation, KindInputText, KindDiagnostic, KindInputKey,
		KindInputClock, KindInputResize, KindInputMouse, KindInputClipboard, KindInputStop,
		KindCapability, KindRunStarted, KindRunFinished, KindRunFailed, KindRunUnsupported} {
		if kind == k {
			return k
		}
	}
	return kind
}

func checkPayloadMembers(kind string, names string, p *canon.Value) error {
	if p.Kind != canon.Object {
		return errors.New("must be an object")
	}
	for i := range p.Members {
		if k := p.Members[i].Key; !canon.HasWord(names, k) && !canon.IsExtension(k) {
			return errors.New("member " + canon.Quote(k) + " is not defined by v1")
		}
	}
	return nil
}

// check is the outcome of one of a record's own checks: the rule and
// cause feed reports if it gets that far, or a nil err.
type check struct {
	rule string
	err  error
}

// facts is what the validator needs of one record: the outcome of every
// check that looks at the record alone, and the values the state machine
// compares. It refers to no memory of the record's tree (strings and
// values it keeps are copies).
type facts struct {
	kind  string
	shape check // the record's own payload checks (see summarize)

	config  *canon.Value // run.started: a copy of config
	initial int64        // run.started: clock.initial_ms

	capability capFacts // capability.result

	constraint string // run.unsupported: the constraint it names
	exit       Exit   // run.finished: the final exit; observation: the process exit, if exited
	exited     bool   // observation: the process exited
	at         int64  // input, diagnostic, observation: at_ms
	atOK       bool   // input: at_ms is a non-negative integer
	delta      int64  // input.clock_advanced: delta_ms
}

// capFacts is what a capability.result says, checked on its own. Which
// constraint it must be for is the state's (the results come in order):
// the checks that depend on it assume the named one, which step uses only
// once it has confirmed that the named one is the next.
type capFacts struct {
	members     check // status, then the member set for that status
	name        string
	unsupported bool
	reasonOK    bool         // unsupported: reason is a string
	tier        check        // applied: tier in the vocabulary
	timezone    check        // applied timezone: effective is "UTC"
	effective   *canon.Value // applied: a copy
	delivery    check        // applied: delivery present exactly when delivered, and well formed
}

// summarize runs the checks of record p (of a known kind) that do not
// depend on the records before it, in the order feed reports them, and
// keeps what step compares. typed, when not nil, holds the outcome of
// the element checks of the typed arrays the quick path checked as it
// scanned them (their place in p holds an empty array); the tree path
// passes nil.
func summarize(kind string, p *canon.Value, typed *typedArrays) facts {
	f := facts{kind: kind}
	switch {
	case kind == KindRunStarted:
		var c config.Config
		if c, f.shape.rule, f.shape.err = checkStarted(p); f.shape.err == nil {
			f.config, f.initial = cloneValue(canon.Lookup(p, "config")), c.Clock.InitialMS
		}
	case kind == KindCapability:
		f.capability = summarizeCapability(p)
	case isTerminal(kind):
		f.shape.rule, f.shape.err = checkTerminalPayload(kind, p)
		if f.shape.err != nil {
			break
		}
		switch kind {
		case KindRunUnsupported:
			c, _ := canon.Str(canon.Lookup(p, "constraint"))
			f.constraint = strings.Clone(c)
		case KindRunFinished:
			f.exit, _ = parseExit(canon.Lookup(p, "exit"))
			f.exit.Signal = strings.Clone(f.exit.Signal)
		}
	case isInput(kind):
		f.at, f.atOK = canon.NonNegInt(canon.Lookup(p, "at_ms"))
		f.shape.rule, f.shape.err = checkInputPayload(kind, p)
		if kind == KindInputClock {
			f.delta, _ = canon.PosInt(canon.Lookup(p, "delta_ms"))
		}
	case kind == KindDiagnostic:
		if err := checkDiagnostic(p); err != nil {
			f.shape = check{RuleDiagnostic, err}
			break
		}
		f.at, _ = canon.Lookup(p, "at_ms").Int()
	case kind == KindObservation:
		rule, proc, err := checkObservation(p, typed)
		if err != nil {
			f.shape = check{rule, err}
			break
		}
		f.at, _ = canon.Lookup(p, "at_ms").Int()
		if proc != nil && proc.Exited {
			f.exited, f.exit = true, proc.Exit
			f.exit.Signal = strings.Clone(f.exit.Signal)
		}
	}
	return f
}

// cloneValue returns a deep copy of v that shares no memory with it
// (nil for nil).
func cloneValue(v *canon.Value) *canon.Value {
	if v == nil {
		return nil
	}
	out := new(canon.Value)
	copyValue(out, v)
	return out
}

func copyValue(dst, src *canon.Value) {
	*dst = canon.Value{Kind: src.Kind, Bool: src.Bool, Str: strings.Clone(src.Str)}
	if src.Items != nil {
		dst.Items = make([]canon.Value, len(src.Items))
		for i := range src.Items {
			copyValue(&dst.Items[i], &src.Items[i])
		}
	}
	if src.Members != nil {
		dst.Members = make([]canon.Member, len(src.Members))
		for i := range src.Members {
			dst.Members[i].Key = strings.Clone(src.Members[i].Key)
			copyValue(&dst.Members[i].Value, &src.Members[i].Value)
		}
	}
}

// checkStarted checks run.started: members, config, subject.
func checkStarted(p *canon.Value) (config.Config, string, error) {
	cfg, ok := p.Get("config")
	if !ok {
		return config.Config{}, RuleStartedMembers, errors.New("run.started needs config")
	}
	if _, ok := p.Get("subject"); !ok {
		return config.Config{}, RuleSubject, errors.New("run.started needs subject")
	}
	c, err := config.Decode(cfg)
	if err != nil {
		if ce, ok := errors.AsType[*config.Error](err); ok {
			return c, ce.Rule, err
		}
		return c, config.RuleType, err
	}
	if err := checkSubject(canon.Lookup(p, "subject")); err != nil {
		return c, RuleSubject, err
	}
	return c, "", nil
}

func checkSubject(s *canon.Value) error {
	// A recorded subject has every member a request may leave out but
	// platform; the rest is DecodeSubject's.
	if err := canon.Closed(s, []string{"format", "application", "fixture", "adapter", "normalizer", "state_schema"}, []string{"platform"}); err != nil {
		return detail("subject %v", err)
	}
	if _, err := DecodeSubject(s); err != nil {
		if de, ok := errors.AsType[*DecodeError](err); ok {
			return detail("%s: %v", de.Path, de.Err) // the caller names the rule
		}
		return err
	}
	return nil
}

// summarizeCapability checks one capability.result on its own.
func summarizeCapability(p *canon.Value) capFacts {
	var f capFacts
	status, _ := canon.Str(canon.Lookup(p, "status"))
	var err error
	switch receipts.Status(status) {
	case receipts.Applied:
		err = canon.Closed(p, []string{"constraint", "status", "effective", "tier"}, []string{"delivery"})
	case receipts.Unsupported:
		f.unsupported = true
		err = canon.Closed(p, []string{"constraint", "status", "reason"}, nil)
	default:
		f.members = check{RuleCapStatus, errors.New("status must be \"applied\" or \"unsupported\"")}
		return f
	}
	if err != nil {
		f.members = check{RuleCapMembers, detail("%s capability result %v", status, err)}
		return f
	}
	name, _ := canon.Str(canon.Lookup(p, "constraint"))
	f.name = strings.Clone(name)
	if f.unsupported {
		_, f.reasonOK = canon.Str(canon.Lookup(p, "reason"))
		return f
	}
	c := receipts.Constraint(name) // the next one, if step gets that far
	tier, _ := canon.Str(canon.Lookup(p, "tier"))
	switch receipts.Tier(tier) {
	case receipts.OS, receipts.Constructive, receipts.Delivered:
	default:
		f.tier = check{RuleCapTier, detail("tier %s is not in the v1 enforcement-tier vocabulary", canon.Quote(tier))}
	}
	eff := canon.Lookup(p, "effective")
	if c == receipts.Timezone {
		if s, ok := canon.Str(eff); !ok || s != "UTC" {
			f.timezone = check{RuleCapTimezone, errors.New("only the literal \"UTC\" can be applied as timezone; named zones are unavailable in v1")}
		}
	}
	f.effective = cloneValue(eff)
	d, hasDelivery := p.Get("delivery")
	switch {
	case tier == string(receipts.Delivered) && !hasDelivery:
		f.delivery = check{RuleCapDelivery, errors.New("a delivered-tier result requires a delivery object")}
	case tier != string(receipts.Delivered) && hasDelivery:
		f.delivery = check{RuleCapDelivery, errors.New("only a delivered-tier result may carry a delivery")}
	case hasDelivery:
		if err := checkDelivery(c, d); err != nil {
			f.delivery = check{RuleCapDelivery, err}
		}
	}
	return f
}

func checkDelivery(c receipts.Constraint, d *canon.Value) error {
	if d.Kind != canon.Object {
		return errors.New("a delivered-tier result requires a delivery object")
	}
	ch, _ := canon.Str(canon.Lookup(d, "channel"))
	switch receipts.Channel(ch) {
	case receipts.HelloConfig, receipts.WireMessage:
		if err := canon.Closed(d, []string{"channel"}, nil); err != nil {
			return detail("%s delivery admits no members beyond channel: %v", ch, err)
		}
		return nil
	case receipts.SpawnEnv:
	default:
		return errors.New("delivery channel must be spawn-env, hello-config or wire-message")
	}
	var err error
	if c == receipts.Filesystem {
		err = canon.Closed(d, []string{"channel", "env", "cwd"}, nil)
	} else {
		err = canon.Closed(d, []string{"channel", "env"}, nil)
	}
	if err != nil {
		if _, ok := d.Get("cwd"); ok && c != receipts.Filesystem {
			return errors.New("only filesystem delivery may name a cwd")
		}
		return detail("spawn-env delivery %v", err)
	}
	env := canon.Lookup(d, "env")
	if env.Kind != canon.Object || len(env.Members) == 0 {
		return errors.New("delivery env must be a non-empty object")
	}
	for i := range env.Members {
		k, val := env.Members[i].Key, &env.Members[i].Value
		s, ok := canon.Str(val)
		if k == "" || strings.ContainsAny(k, "=\x00") || !ok || s == "" || strings.ContainsRune(s, 0) {
			return errors.New("delivery env must map non-empty names (no '=' or NUL) to non-empty strings (no NUL)")
		}
	}
	if c == receipts.Filesystem {
		if s, ok := canon.Str(canon.Lookup(d, "cwd")); !ok || s == "" || strings.ContainsRune(s, 0) {
			return errors.New("filesystem delivery must name a non-empty NUL-free cwd")
		}
	}
	return nil
}

// parseExit reads an EXIT object.
func parseExit(e *canon.Value) (Exit, bool) {
	if e == nil || canon.Closed(e, []string{"kind", "value"}, nil) != nil {
		return Exit{}, false
	}
	kind, _ := canon.Str(canon.Lookup(e, "kind"))
	val := canon.Lookup(e, "value")
	switch ExitKind(kind) {
	case ExitCode:
		n, ok := val.Int()
		return Exit{Kind: ExitCode, Code: n}, ok
	case ExitSignal:
		s, ok := canon.Str(val)
		return Exit{Kind: ExitSignal, Signal: s}, ok && s != ""
	}
	return Exit{}, false
}

func checkErrorShape(e *canon.Value) error {
	if err := canon.Closed(e, []string{"code", "message"}, []string{"details"}); err != nil {
		return detail("error %v", err)
	}
	if !nonEmptyStr(canon.Lookup(e, "code")) {
		return errors.New("error code must be a non-empty string")
	}
	if _, ok := canon.Str(canon.Lookup(e, "message")); !ok {
		return errors.New("error message must be a string")
	}
	return nil
}

// checkTerminalPayload is the "terminal record" pass: payload shapes.
func checkTerminalPayload(kind string, p *canon.Value) (string, error) {
	switch kind {
	case KindRunFinished:
		if _, ok := parseExit(canon.Lookup(p, "exit")); !ok {
			return RuleFinishedExit, errors.New("run.finished exit must be {kind:code, value:int} or {kind:signal, value:non-empty string}")
		}
	case KindRunFailed:
		e := canon.Lookup(p, "error")
		if e == nil {
			return RuleFailedError, errors.New("run.failed needs error")
		}
		if err := checkErrorShape(e); err != nil {
			return RuleFailedError, err
		}
	case KindRunUnsupported:
		if err := canon.Closed(p, []string{"constraint", "code", "message"}, []string{"details"}); err != nil {
			return RuleUnsupportedEnd, detail("run.unsupported %v", err)
		}
		c, _ := canon.Str(canon.Lookup(p, "constraint"))
		known := false
		for _, k := range receipts.Constraints() {
			known = known || string(k) == c
		}
		_, msg := canon.Str(canon.Lookup(p, "message"))
		if !known || !nonEmptyStr(canon.Lookup(p, "code")) || !msg {
			return RuleUnsupportedEnd, errors.New("run.unsupported needs a constraint, a non-empty code and a string message")
		}
	}
	return "", nil
}

// checkInputPayload checks the members an input kind carries besides
// at_ms: the input vocabulary's rules (input.CheckPayload), the same ones
// input.ReadScript holds a script line to, so that an input it accepts is
// one the Writer records.
func checkInputPayload(kind string, p *canon.Value) (string, error) {
	return input.CheckPayload(kind, p)
}

func checkDiagnostic(p *canon.Value) error {
	if err := canon.Closed(p, []string{"at_ms", "code", "message"}, []string{"details"}); err != nil {
		return detail("diagnostic %v", err)
	}
	if _, ok := canon.NonNegInt(canon.Lookup(p, "at_ms")); !ok {
		return errors.New("diagnostic at_ms must be a non-negative integer")
	}
	if !nonEmptyStr(canon.Lookup(p, "code")) {
		return errors.New("diagnostic code must be a non-empty string")
	}
	if _, ok := canon.Str(canon.Lookup(p, "message")); !ok {
		return errors.New("diagnostic message must be a string")
	}
	return nil
}

// checkObservation checks an observation payload and returns its process.
// typed is as for summarize.
func checkObservation(p *canon.Value, typed *typedArrays) (string, *Process, error) {
	if err := canon.Closed(p, []string{"at_ms", "state", "events", "ui"}, []string{"frame", "process"}); err != nil {
		return RuleObservation, nil, detail("observation %v", err)
	}
	if _, ok := canon.NonNegInt(canon.Lookup(p, "at_ms")); !ok {
		return RuleObservation, nil, errors.New("observation at_ms must be a non-negative integer")
	}
	events := canon.Lookup(p, "events")
	if events.Kind != canon.Array {
		return RuleObservation, nil, errors.New("observation events must be an array")
	}
	if a := typed.array(inEvents); a != nil {
		if a.err != nil {
			return RuleEvent, nil, a.err
		}
	} else {
		for i := range events.Items {
			if err := checkEvent(i, &events.Items[i]); err != nil {
				return RuleEvent, nil, err
			}
		}
	}
	if rule, err := checkUI(canon.Lookup(p, "ui"), typed); err != nil {
		return rule, nil, err
	}
	if f, ok := p.Get("frame"); ok {
		if err := checkFrame(f, typed); err != nil {
			return RuleFrame, nil, err
		}
	}
	pr, ok := p.Get("process")
	if !ok {
		return "", nil, nil
	}
	state, _ := canon.Str(canon.Lookup(pr, "state"))
	switch {
	case state == "running" && canon.Closed(pr, []string{"state"}, nil) == nil:
		return "", &Process{}, nil
	case state == "exited" && canon.Closed(pr, []string{"state", "exit"}, nil) == nil:
		if e, ok := parseExit(canon.Lookup(pr, "exit")); ok {
			return "", &Process{Exited: true, Exit: e}, nil
		}
	}
	return RuleProcess, nil, errors.New("observation process must be {state:running} or {state:exited, exit:EXIT}")
}

// checkEvent checks event i of an observation's events.
func checkEvent(i int, e *canon.Value) error {
	if err := canon.Closed(e, []string{"type", "data"}, nil); err != nil {
		return detail("observation event %d %v", i, err)
	}
	if !nonEmptyStr(canon.Lookup(e, "type")) {
		return detail("observation event %d type must be a non-empty string", i)
	}
	return nil
}

// checkUI checks an observation's ui; typed is as for summarize.
func checkUI(ui *canon.Value, typed *typedArrays) (string, error) {
	if err := canon.Closed(ui, []string{"regions", "focus", "cursor", "mode"}, nil); err != nil {
		return RuleUI, detail("observation ui %v", err)
	}
	regions := canon.Lookup(ui, "regions")
	if regions.Kind != canon.Array {
		return RuleUI, errors.New("observation ui regions must be an array")
	}
	var own regionIDs
	ids := &own
	if a := typed.array(inRegions); a != nil {
		if a.err != nil {
			return RuleRegion, a.err
		}
		ids = &a.ids
	} else {
		for i := range regions.Items {
			if err := ids.checkRegion(i, &regions.Items[i]); err != nil {
				return RuleRegion, err
			}
		}
	}
	focus := canon.Lookup(ui, "focus")
	switch focus.Kind {
	case canon.Null:
	case canon.String:
		if !ids.has(focus.Str) {
			return RuleFocus, detail("observation ui focus %s is not a region id", canon.Quote(focus.Str))
		}
	default:
		return RuleFocus, errors.New("observation ui focus must be null or a region id")
	}
	c := canon.Lookup(ui, "cursor")
	if err := canon.Closed(c, []string{"column", "row", "visible"}, nil); err != nil {
		return RuleCursor, detail("observation ui cursor %v", err)
	}
	_, ok1 := canon.NonNegInt(canon.Lookup(c, "column"))
	_, ok2 := canon.NonNegInt(canon.Lookup(c, "row"))
	if !ok1 || !ok2 || canon.Lookup(c, "visible").Kind != canon.Bool {
		return RuleCursor, errors.New("observation ui cursor needs column, row >= 0 and a boolean visible")
	}
	if m := canon.Lookup(ui, "mode"); m.Kind != canon.Null && m.Kind != canon.String {
		return RuleUI, errors.New("observation ui mode must be a string or null")
	}
	return "", nil
}

// regionIDs is the set of the ids of an observation's regions checked
// so far: up to 16,384, so past a handful a map, not a quadratic scan.
// Its strings are the tree's (or the line's): it lives no longer.
type regionIDs struct {
	few  [8]string
	n    int
	many map[string]struct{}
}

func (s *regionIDs) has(id string) bool {
	if s.many != nil {
		_, ok := s.many[id]
		return ok
	}
	for _, x := range s.few[:s.n] {
		if x == id {
			return true
		}
	}
	return false
}

func (s *regionIDs) add(id string) {
	switch {
	case s.many != nil:
		s.many[id] = struct{}{}
	case s.n < len(s.few):
		s.few[s.n] = id
		s.n++
	default:
		s.many = make(map[string]struct{}, 2*len(s.few))
		for _, x := range s.few {
			s.many[x] = struct{}{}
		}
		s.many[id] = struct{}{}
	}
}

// checkRegion checks region i of an observation's ui, the regions
// before it in s, and adds its id to s.
func (s *regionIDs) checkRegion(i int, r *canon.Value) error {
	if err := canon.Closed(r, []string{"id", "role", "bounds"}, nil); err != nil {
		return detail("observation ui region %d %v", i, err)
	}
	if !nonEmptyStr(canon.Lookup(r, "id")) || !nonEmptyStr(canon.Lookup(r, "role")) {
		return detail("observation ui region %d needs a non-empty id and role", i)
	}
	id := canon.Lookup(r, "id").Str
	if s.has(id) {
		return detail("observation ui region id %s is not unique", canon.Quote(id))
	}
	s.add(id)
	b := canon.Lookup(r, "bounds")
	if err := canon.Closed(b, []string{"column", "row", "columns", "rows"}, nil); err != nil {
		return detail("observation ui region %d bounds %v", i, err)
	}
	_, ok1 := canon.NonNegInt(canon.Lookup(b, "column"))
	_, ok2 := canon.NonNegInt(canon.Lookup(b, "row"))
	_, ok3 := canon.PosInt(canon.Lookup(b, "columns"))
	_, ok4 := canon.PosInt(canon.Lookup(b, "rows"))
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return detail("observation ui region %d bounds need column, row >= 0 and columns, rows > 0", i)
	}
	return nil
}

// checkFrameLine checks one of an observation's frame lines.
func checkFrameLine(l *canon.Value) error {
	if l.Kind != canon.String {
		return errors.New("observation frame lines must be strings")
	}
	return nil
}

// checkFrame checks an observation's frame; typed is as for summarize.
func checkFrame(f *canon.Value, typed *typedArrays) error {
	if err := canon.Closed(f, []string{"lines", "columns", "rows"}, nil); err != nil {
		return detail("observation frame %v", err)
	}
	lines := canon.Lookup(f, "lines")
	n, a := len(lines.Items), typed.array(inLines)
	if a != nil {
		n = a.n
	}
	_, okc := canon.PosInt(canon.Lookup(f, "columns"))
	rows, okr := canon.PosInt(canon.Lookup(f, "rows"))
	if lines.Kind != canon.Array || !okc || !okr || int64(n) != rows {
		return errors.New("observation frame needs columns, rows > 0 and exactly rows lines")
	}
	if a != nil {
		return a.err
	}
	for i := range lines.Items {
		if err := checkFrameLine(&lines.Items[i]); err != nil {
			return err
		}
	}
	return nil
}
