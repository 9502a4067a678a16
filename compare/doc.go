// Package compare compares two termverify.transcript/v1 transcripts the way
// upstream's comparator does, and adds ignore paths.
//
// Both sides must be valid transcripts (Parse, or Bytes with its *SideError
// naming the side): a verdict is never stated about bytes the codec refuses.
// Records are compared position by position, envelope and payload, with
// exactly one member excluded by rule: the envelope's run_id, which names a
// run rather than what it did. Each difference is a dotted path from the
// record root with the RFC 8785 text of both values (nil for a member absent
// on that side). Objects are walked member by member in code-point order of
// the names; arrays item by item when their lengths agree and as one value
// when they do not; values of different JSON types are one difference. A
// position that only one side has is a divergence with the other side's
// kind empty and no member differences.
//
// An Ignore (ParseIgnore; grammar in docs/REPLAY.md) drops the differences
// at or below its path, optionally only at positions where both records are
// of one kind. A difference above the path — an array of another length, a
// value of another type, a member missing on one side — still counts, and
// extra records are never ignored.
//
// Subjects reports which members of run.started's replay subject differ,
// for replay's selector check. Report is a verdict in the shape of
// compare --json (ReportFormat). The package reads no files and prints
// nothing; encoding and rendering the verdict are the caller's.
package compare
