// Package batch runs many supervised runs from one manifest, N at a time,
// and reports them as one batch: a transcript per entry, a JSON summary
// (termverify-sandbox.batch/v1) and a JUnit XML report.
//
// A batch is a list of entries (Load reads a JSONL or JSON manifest, or a
// directory of requests; docs/BATCH.md defines both). Select takes the
// entries of one shard: entry i (0-based position in the manifest) is in
// shard i mod N, so every entry is in exactly one of the N shards and the
// shards differ in size by at most one. Run runs the selected entries,
// each with supervisor.Run, at most Jobs at a time.
//
// Run never kills what it did not start and never retries. When its
// context is cancelled (supervisor.InterruptContext: SIGINT, SIGTERM,
// SIGHUP), the runs in progress end as supervisor.Run ends them
// (run.failed interrupted, sandbox torn down, transcript kept), and the
// entries not yet started are reported as skipped. Scale-out beyond one
// machine is the CI system's job (shards), never this package's.
//
// Every string that comes from a subject or a file name is passed through
// internal/termsafe before it reaches the progress line, and through
// XMLText before it reaches the JUnit report: characters XML 1.0 forbids
// are replaced by visible escapes, never written raw.
package batch
