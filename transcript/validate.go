package transcript

import (
	"errors"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// This file holds the passes of TRANSCRIPT-RULES.md's step 8 that need
// the records in order: "placement and ids" is placement; every later
// pass is validator.feed, a state machine fed one record at a time. The
// checks of one record alone are in payload.go: the envelope's shape
// (pass "kinds and member sets") is checkEnvelope, each payload's is
// summarize. Parse runs the first two passes over the whole file, then
// feeds every record; the Writer feeds each record before it writes it,
// so what the Writer emits passes Parse by construction.
//
// feed is two halves: summarize runs every check that looks at the record
// alone and keeps what the state machine compares (facts); step applies
// the facts in feed's order against what the earlier records left. The
// streaming checker (ValidateReader) summarizes each record while its tree
// exists, on any CPU, and steps the facts later in record order: the same
// rules, with no tree kept.

// placement is the "placement and ids" pass: run_id the same everywhere,
// ids unique, run.started first and once, one terminal record, last. It
// keeps the first run_id and every id it is given: the caller passes
// strings that stay unchanged (the streaming checker passes copies).
type placement struct {
	runID string
	ids   map[string]struct{} // made on first use when nil
}

// check places record i; last says whether it is the transcript's last.
func (p *placement) check(i int, last bool, f *envelopeFields) *Error {
	bad := func(rule, format string, args ...any) *Error {
		return &Error{Record: i, Line: i + 1, Kind: f.kind, Rule: rule, Err: detail(format, args...)}
	}
	if p.ids == nil {
		p.ids = make(map[string]struct{})
	}
	if i == 0 {
		p.runID = f.runID
	} else if f.runID != p.runID {
		return bad(RuleRunID, "run_id %s differs from the first record's", canon.Quote(f.runID))
	}
	if _, dup := p.ids[f.id]; dup {
		return bad(RuleDuplicateID, "id %s is used twice", canon.Quote(f.id))
	}
	p.ids[f.id] = struct{}{}
	switch {
	case i == 0 && f.kind != KindRunStarted:
		return bad(RuleStartedFirst, "the first record must be run.started")
	case i > 0 && f.kind == KindRunStarted:
		return bad(RuleStartedOnce, "run.started may appear only once")
	case isTerminal(f.kind) && !last:
		return bad(RuleTerminalLast, "the terminal record must be the last record")
	case !isTerminal(f.kind) && last:
		return bad(RuleTerminalLast, "the transcript must end with exactly one terminal record")
	}
	return nil
}

// validator is the record-by-record state machine of the passes after
// placement: run.started, terminal record, negotiation, epochs, inputs,
// diagnostics, observations, evidence times. It is a plain value: the
// Writer copies it, feeds the copy, and keeps the copy only on success.
// It keeps no memory of the records it was fed (config and exit are
// copies), so their trees may be dropped or reused once fed.
type validator struct {
	config  *canon.Value // run.started.payload.config as recorded (a copy)
	initial int64        // clock.initial_ms
	now     int64        // manual time
	caps    int          // capability results so far
	pending receipts.Constraint
	phase   phase
	exitSeq int  // phaseExited: the exited-process observation's record
	exit    Exit // ... and its exit
}

// phase is where the records so far leave the run's lifecycle: the
// phases the supervisor's session moves through (supervisor/ending.go)
// as a transcript shows them, and the two that end the body. Only
// phase.body moves it.
type phase uint8

const (
	phaseNegotiation phase = iota // run.started and capability results: no body record yet
	phaseHandshake                // body records, the readiness observation not yet
	phaseIdle                     // ready, no epoch open
	phaseEpoch                    // an input recorded, its closing observation not yet
	phaseStop                     // input.stop recorded, its closing observation not yet
	phaseStopped                  // the stop epoch closed: only the terminal record may follow
	phaseExited                   // an exited-process observation: no body record may follow
)

// ready reports whether the readiness observation is recorded.
func (p phase) ready() bool { return p != phaseNegotiation && p != phaseHandshake }

// body places one body record of the given kind in the lifecycle
// (exited: it is an observation whose process exited) and returns the
// phase the record leads to, or the rule it breaks.
func (p phase) body(kind string, exited bool) (phase, string, error) {
	if p == phaseExited {
		return p, RuleAfterExit, errors.New("an exited-process observation must be the last body record")
	}
	if p == phaseNegotiation {
		p = phaseHandshake // the first body record ends negotiation
	}
	switch kind {
	case KindDiagnostic:
		if p == phaseIdle || p == phaseStopped {
			return p, RuleIdleDiagnostic, errors.New("diagnostic is not allowed while the run is idle")
		}
		return p, "", nil
	case KindObservation:
		next := phaseIdle // after the readiness observation or an epoch's
		switch p {
		case phaseHandshake, phaseEpoch:
		case phaseStop:
			next = phaseStopped
		default:
			return p, RuleIdleObservation, errors.New("observation is not allowed while the run is idle")
		}
		if exited {
			next = phaseExited
		}
		return next, "", nil
	}
	// An input.
	switch p {
	case phaseHandshake:
		return p, RuleEpochReadiness, errors.New("the readiness observation must precede the first input")
	case phaseStop, phaseStopped:
		return p, RuleAfterStop, errors.New("input is not allowed after input.stop")
	case phaseEpoch:
		return p, RuleEpochOpen, errors.New("the input epoch must close (one observation) before another input")
	}
	if kind == KindInputStop {
		return phaseStop, "", nil
	}
	return phaseEpoch, "", nil
}

// feed checks record i, of the given kind and payload, against the
// records fed before it.
func (v *validator) feed(i int, kind string, p *canon.Value) *Error {
	f := summarize(kind, p, nil)
	return v.step(i, &f)
}

// step applies the facts of record i against the records before it.
func (v *validator) step(i int, f *facts) *Error {
	kind := f.kind
	bad := func(rule string, cause error) *Error {
		return &Error{Record: i, Line: i + 1, Kind: kind, Rule: rule, Err: cause}
	}
	switch {
	case kind == KindRunStarted:
		if f.shape.err != nil {
			return bad(f.shape.rule, f.shape.err)
		}
		v.config, v.initial, v.now = f.config, f.initial, f.initial
		return nil
	case kind == KindCapability:
		rule, err := v.capability(&f.capability)
		if err != nil {
			return bad(rule, err)
		}
		return nil
	case isTerminal(kind):
		if f.shape.err != nil {
			return bad(f.shape.rule, f.shape.err)
		}
		return v.terminal(i, f)
	}
	// A body record: input, observation or diagnostic.
	switch {
	case v.pending != "":
		return bad(RuleNegUnsupported, detail("the unsupported %s result must be followed by run.unsupported", v.pending))
	case v.caps < len(receipts.Constraints()):
		return bad(RuleNegIncomplete, detail("body records need all seven capability results applied; %d so far", v.caps))
	}
	// f.exited holds only for an observation whose own checks pass, so
	// the phase is exited only once exitSeq is set below.
	next, rule, err := v.phase.body(kind, f.exited)
	if err != nil {
		if rule == RuleAfterExit {
			// Upstream names the exit observation, not what follows it.
			return &Error{Record: v.exitSeq, Line: v.exitSeq + 1, Kind: KindObservation, Rule: rule, Err: err}
		}
		return bad(rule, err)
	}
	v.phase = next
	switch {
	case isInput(kind):
		if rule, err := v.input(f); err != nil {
			return bad(rule, err)
		}
	case kind == KindDiagnostic:
		if f.shape.err != nil {
			return bad(f.shape.rule, f.shape.err)
		}
	case kind == KindObservation:
		if f.shape.err != nil {
			return bad(f.shape.rule, f.shape.err)
		}
		if f.exited {
			v.exitSeq, v.exit = i, f.exit
		}
	}
	// Evidence times: diagnostics and observations carry the current time.
	if kind == KindDiagnostic || kind == KindObservation {
		if f.at != v.now {
			return bad(RuleEvidenceTime, detail("at_ms %d does not match the manual clock %d", f.at, v.now))
		}
	}
	return nil
}

// capability places one capability.result (the negotiation pass).
func (v *validator) capability(f *capFacts) (string, error) {
	switch {
	case v.phase != phaseNegotiation:
		return RuleCapOrder, errors.New("capability results must come before the body")
	case v.pending != "":
		return RuleNegUnsupported, detail("the unsupported %s result must be followed by run.unsupported", v.pending)
	case f.members.err != nil:
		return f.members.rule, f.members.err
	}
	all := receipts.Constraints()
	if v.caps >= len(all) || f.name != string(all[v.caps]) {
		want := "none"
		if v.caps < len(all) {
			want = string(all[v.caps])
		}
		return RuleCapOrder, detail("capability result for %s is out of order (next: %s)", canon.Quote(f.name), want)
	}
	c := all[v.caps]
	if f.unsupported {
		if !f.reasonOK {
			return RuleCapMembers, errors.New("unsupported capability result reason must be a string")
		}
		v.pending = c
		v.caps++
		return "", nil
	}
	for _, ch := range [...]check{f.tier, f.timezone} {
		if ch.err != nil {
			return ch.rule, ch.err
		}
	}
	if !canon.Equal(f.effective, canon.Lookup(v.config, string(c))) {
		return RuleCapEffective, detail("applied %s effective value does not equal config.%s", c, c)
	}
	if f.delivery.err != nil {
		return f.delivery.rule, f.delivery.err
	}
	v.caps++
	return "", nil
}

// terminal is the negotiation side of the terminal record, and the
// final-exit check of observations.
func (v *validator) terminal(i int, f *facts) *Error {
	kind := f.kind
	bad := func(rule string, cause error) *Error {
		return &Error{Record: i, Line: i + 1, Kind: kind, Rule: rule, Err: cause}
	}
	switch {
	case kind == KindRunUnsupported && v.pending == "":
		return bad(RuleNegUnsupported, errors.New("run.unsupported requires an unsupported capability result just before it"))
	case kind == KindRunUnsupported:
		if f.constraint != string(v.pending) {
			return bad(RuleUnsupportedEnd, detail("run.unsupported names %s but the unsupported result is %s", canon.Quote(f.constraint), v.pending))
		}
	case v.pending != "":
		return bad(RuleNegUnsupported, detail("the unsupported %s result must be followed by run.unsupported", v.pending))
	case kind == KindRunFinished && v.caps < len(receipts.Constraints()):
		return bad(RuleNegIncomplete, errors.New("run.finished needs all seven capability results applied"))
	case kind == KindRunFinished && v.phase == phaseExited:
		if f.exit != v.exit {
			return &Error{Record: v.exitSeq, Line: v.exitSeq + 1, Kind: KindObservation, Rule: RuleExitMismatch,
				Err: errors.New("observation process exit does not match the run.finished exit")}
		}
	}
	return nil
}

// input checks an input's payload and the manual clock.
func (v *validator) input(f *facts) (string, error) {
	at := f.at
	if !f.atOK {
		return RuleInputAtMS, errors.New("input at_ms must be a non-negative integer")
	}
	if f.shape.err != nil {
		return f.shape.rule, f.shape.err
	}
	if f.kind == KindInputClock {
		d := f.delta
		if at != v.now+d {
			return RuleClock, detail("input.clock_advanced at_ms %d must be the manual clock %d plus delta_ms %d", at, v.now, d)
		}
		v.now = at
		return "", nil
	}
	if at != v.now {
		return RuleClock, detail("input at_ms %d does not match the manual clock %d", at, v.now)
	}
	return "", nil
}
