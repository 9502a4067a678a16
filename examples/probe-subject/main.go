// Command probe-subject is a well-behaved termverify.control/v1 subject that
// reports what its sandbox lets it do, for termverify-sandbox's isolation
// tests.
//
// During the handshake it tries each command-line argument as a probe
// command, and then each input.text whose text is one:
//
//	net HOST:PORT   TCP connect, send "probe\n", half-close, read ≤ 64 bytes
//	udp HOST:PORT   UDP send "probe\n", read one reply ≤ 64 bytes
//	dns NAME        resolve with Go's own resolver (/etc/hosts, resolv.conf)
//	read PATH       read ≤ 64 bytes
//	write PATH      create or truncate, write "probe\n"
//	ls PATH         list ≤ 64 entry names, sorted
//
// Each observation's state reports exactly what it saw: ok with short
// content, or the error as a deterministic short name (the errno name such
// as ENOENT, EACCES, EROFS, ECONNREFUSED, ENETUNREACH, or ETIMEDOUT,
// EAI_NONAME, EINVAL, …), never an address with an ephemeral port, a pid or
// a time. The state also carries its uid and gid, whether /proc/1/cmdline
// is termverify-sandbox's PID-1 reaper, its working directory and entries,
// and the delivered environment (TERMVERIFY_*, TZ, LANG, LC_*).
//
// It imports only the standard library, like any third-party subject.
package main

import (
	"context"
	"os"
)

func main() {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "."
	}
	os.Exit(Run(context.Background(), Options{
		Commands: os.Args[1:],
		Environ:  os.Environ(),
		Dir:      cwd,
		Stdin:    os.Stdin,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
	}))
}
