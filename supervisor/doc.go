// Package supervisor is the termverify.control/v1 adapter: it spawns a subject
// through the sandbox, runs the handshake and single-flight epochs from an
// input script under whole-phase deadlines, tears the sandbox down, and
// records a termverify.transcript/v1 transcript.
package supervisor
