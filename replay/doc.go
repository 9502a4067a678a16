// Package replay re-runs a recorded termverify.transcript/v1 and reports
// how the new run compares with it (docs/REPLAY.md).
//
// It takes a parsed, so valid, source transcript and gives three things:
// NotRun, whether the source ever reached execution (one that ended
// run.unsupported, or run.failed before any observation of a running
// subject, is reported, never replayed); Request, the supervisor request
// that replays it, with the source's config, replay subject (adapter and
// platform left to the recorder) and inputs exactly as recorded, no
// input.stop added; and Compare with Report, the verdict of the source
// against the new transcript and the termverify-sandbox.replay/v1 report
// that holds it.
//
// It does not run anything, read or write files, or print: the caller
// runs the request (supervisor.Run), reads the transcript it wrote back,
// and encodes or renders the report. It refuses, before anything starts,
// a source recorded in the other mode (*ModeError) and one with inputs
// the mode cannot carry (*InputsError).
package replay
