// Package netpolicy applies a termverify network constraint to a sandbox's
// network namespace: deny (only loopback) or an allow-list of TCP host:port
// pairs served by forwarders that listen inside the namespace and dial the
// real destination from the host side.
package netpolicy
