package transcript

import (
	"errors"
	"fmt"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
)

// This file decodes what records.go encodes, as encoding/json keeps
// Unmarshal beside Marshal: a subject, and the inputs of a parsed
// transcript (an input script is package input's). The decoders apply the
// validator's rules (the same checks, the same Rule ids), so what they
// accept the Writer records; they stop at the first violation and never
// repair.

// DecodeSubject reads a replay subject: what Subject.Value writes, or the
// same without format, adapter or platform, as a request gives it (the
// recorder names itself as the adapter and fills the platform from the
// host). A member that is present is held to run.started's rules: format
// is SubjectFormat, each object is closed (x- members aside), and each of
// its strings matches [a-z0-9._-]+. A refusal is a *DecodeError with Rule
// RuleSubject and the Path of the member at fault. An absent adapter or
// platform is left zero (nil).
func DecodeSubject(v *canon.Value) (Subject, error) {
	var s Subject
	if v == nil {
		return s, &DecodeError{Path: "subject", Rule: RuleSubject, Err: errors.New("missing")}
	}
	if err := canon.Closed(v, []string{"application", "fixture", "normalizer", "state_schema"},
		[]string{"format", "adapter", "platform"}); err != nil {
		return s, &DecodeError{Path: "subject", Rule: RuleSubject, Err: err}
	}
	if f, ok := v.Get("format"); ok {
		if got, _ := canon.Str(f); got != SubjectFormat {
			return s, &DecodeError{Path: "subject.format", Rule: RuleSubject, Err: detail("must be %q", SubjectFormat)}
		}
	}
	var platform Platform
	selector := []string{"id", "version"}
	for _, m := range []struct {
		name    string
		members []string
		dst     []*string
	}{
		{"application", []string{"id", "version", "build"}, []*string{&s.Application.ID, &s.Application.Version, &s.Application.Build}},
		{"fixture", selector, []*string{&s.Fixture.ID, &s.Fixture.Version}},
		{"adapter", selector, []*string{&s.Adapter.ID, &s.Adapter.Version}},
		{"normalizer", selector, []*string{&s.Normalizer.ID, &s.Normalizer.Version}},
		{"state_schema", selector, []*string{&s.StateSchema.ID, &s.StateSchema.Version}},
		{"platform", []string{"os", "architecture"}, []*string{&platform.OS, &platform.Architecture}},
	} {
		x, ok := v.Get(m.name)
		if !ok {
			continue // optional (the required ones were checked above)
		}
		if err := identifiers(x, "subject."+m.name, m.members, m.dst); err != nil {
			return Subject{}, err
		}
	}
	if _, ok := v.Get("platform"); ok {
		s.Platform = &platform
	}
	return s, nil
}

// identifiers reads the closed object v, at path, whose members are all
// identifiers, into dst in the order of members.
func identifiers(v *canon.Value, path string, members []string, dst []*string) error {
	if err := canon.Closed(v, members, nil); err != nil {
		return &DecodeError{Path: path, Rule: RuleSubject, Err: err}
	}
	for i, name := range members {
		id, ok := canon.Str(canon.Lookup(v, name))
		if !ok || !config.ValidIdentifier(id) {
			return &DecodeError{Path: path + "." + name, Rule: RuleSubject, Err: errors.New("must be a string matching [a-z0-9._-]+")}
		}
		*dst[i] = id
	}
	return nil
}

// Inputs returns the transcript's inputs in order, as the Writer was given
// them: replaying them reproduces its manual clock. kinds, when given, are
// the input kinds the caller can carry; an input of another kind is an
// *Error naming its record, with Rule RuleInputKind. A transcript Parse
// returned decodes without any other error; one built by hand is held to
// the same rules.
func (t *Transcript) Inputs(kinds ...string) ([]input.Input, error) {
	var out []input.Input
	for i := range t.Records {
		r := &t.Records[i]
		if !isInput(r.Kind) {
			continue
		}
		in, err := input.DecodeRecord(r.Kind, r.Payload(), kinds...)
		if err != nil {
			e := &Error{Record: r.Seq, Line: r.Seq + 1, Kind: r.Kind, Rule: RuleInternal, Err: err}
			if derr, ok := errors.AsType[*input.Error](err); ok { // always, but never panic
				e.Rule, e.Err = derr.Rule, fmt.Errorf("%s: %w", derr.Path, derr.Err)
			}
			return nil, e
		}
		out = append(out, in)
	}
	return out, nil
}
