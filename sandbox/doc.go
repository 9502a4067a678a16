// Package sandbox builds and runs the OS-tier sandbox a subject lives in,
// using runc's libcontainer: new mount, PID, network, IPC and UTS namespaces,
// a fresh root, dropped privileges, a seccomp filter, cgroup limits, and a
// PID-1 init of ours that reaps, forwards signals and reports the subject's
// true exit. It also reports, per constraint, the strongest tier the host can
// give now (Probe).
package sandbox
