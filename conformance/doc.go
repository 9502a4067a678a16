// Package conformance runs the project's own conformance corpus
// (testdata/conformance, docs/CONFORMANCE.md) against an implementation
// and says, case by case, whether it produced the golden result.
//
// A corpus is a directory with a manifest (manifest.json) whose
// fixtureVersion this package knows (FixtureVersion); any other version
// is refused, fail closed, before a case runs. Its cases are of four
// families: codec cases (a control/v1 line, a transcript or an input
// script, with its golden verdict: valid, or invalid with the rule id and
// the line), daemon cases (one connection's bytes to interminai's
// protocol, with the golden verdict and the daemon's reply line),
// adapter scenarios (a request, an input script and the shipped subject's
// arguments, with the golden transcript) and PTY scenarios (the same for
// a terminal program such as sh or cat).
//
// What is run is behind two small interfaces: a Validator (the codecs:
// Ours is this module's, Command another implementation's command line)
// and an Adapter (CommandAdapter: a command line with run's flags). Run
// returns a Summary, the golden parity summary, whose Encode is canonical
// JSON and byte-stable. The package prints nothing and never exits: the
// CLI's conformance command does both.
package conformance
