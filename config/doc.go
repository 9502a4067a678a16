// Package config is the termverify deterministic-constraint configuration
// shared by both protocols: run.started.payload.config in a transcript and
// session.hello.config on the control wire. Decode checks every shape rule of
// the seed documents (including RFC 5646 locale syntax) on a decoded JSON
// value and names the offending member.
package config
