// Package transcript reads and writes termverify.transcript/v1.
// Writer emits only RFC 8785-canonical lines and always keeps room for the
// terminal record. Parse enforces every rule in TRANSCRIPT-RULES.md and stops
// at the first violation; it never repairs input beyond the spec's named
// compat rule.
package transcript
