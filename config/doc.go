// Package config is the termverify deterministic-constraint configuration
// shared by both protocols: run.started.payload.config in a transcript and
// session.hello.config on the control wire. Decode checks every shape rule of
// the seed documents (including RFC 5646 locale syntax) on a decoded JSON
// value and names the offending member; it never repairs one.
//
// It is the one home of the constraint values (ClockManual,
// FilesystemSandbox, NetworkDeny, NetworkAllowList): netpolicy and
// receipts name these constants instead of restating them.
package config
