// Package netpolicy applies a termverify network constraint to a sandbox's
// network namespace: deny (only loopback) or an allow-list of TCP host:port
// pairs served by forwarders that listen inside the namespace and dial the
// real destination from the host side.
//
// The steps are split so that decisions precede syscalls: Policy.Validate
// checks a request, Resolve turns it into a Plan whose every address is
// fixed (host names are looked up exactly once, here), Plan.HostsFile gives
// the sandbox's /etc/hosts pinning those names, and Plan.Start enters the
// namespace, listens, and relays until Forwarder.Close.
//
// What it deliberately does not do: it forwards no UDP, answers no DNS (the
// sandbox gets no resolv.conf), never re-resolves a name after Resolve (so
// DNS rebinding cannot move a destination), dials only the pinned address of
// the route whose listener accepted a connection, refuses to serve in the
// supervisor's own namespace, and does not pretend in rootless mode: Start
// fails with ErrNeedPrivilege where it cannot enter the namespace. It
// creates no namespaces; the sandbox does. See docs/NETPOLICY.md.
package netpolicy
