// Package sandboxtest holds test helpers for code that starts real sandboxes:
// privilege checks that turn a missing capability into a t.Skip with the
// reason, and leak checks for processes, mounts, cgroups and state.
package sandboxtest
