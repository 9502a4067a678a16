// Package sandbox builds and runs the OS-tier sandbox a subject lives in,
// using runc's libcontainer: new mount, PID, network, IPC and UTS
// namespaces (and a user namespace when rootless), a fresh read-only root
// with read-only system binds and the mapped root read-write at Workdir,
// every capability dropped, no_new_privs, a seccomp filter, cgroup limits,
// and a PID-1 init of ours that reaps, forwards signals and reports the
// subject's true exit.
//
// Guarantees: Start verifies every mechanism it reports in Applied against
// the kernel before the subject runs, and fails with ErrNotVerified rather
// than claim a confinement it did not check. It reports what is confined
// and how, never a tier: tiers are the negotiation's (package receipts).
// A Start that fails releases everything it made, as exec.Cmd.Start does;
// a started sandbox is the caller's to Destroy. Destroy leaves no process,
// mount, cgroup or state directory; a supervisor that dies without it
// leaves the sandbox dying with it (liveness pipe) and Sweep removes the
// rest.
//
// It refuses: to run without a seccomp filter (ErrUnsupportedArch off
// amd64), to mount the caller's directories as the container root, to
// deliver an allow-list without a network namespace. It never prints, exits
// or panics, except LibcontainerInit, which is a process of its own.
// Linking the package dispatches libcontainer's setup process (InitArg)
// from its own init, before any package that does not lie below it is
// initialized; binaries that start sandboxes should lock the main
// goroutine to the main thread. The PID-1 reaper (internal/reaper, C)
// needs no dispatch either: it runs from an ELF constructor before the Go
// runtime. See docs/SANDBOX.md.
package sandbox
