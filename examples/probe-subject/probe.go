package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
)

// result is what one probe command saw. Content is short and deterministic
// for a deterministic sandbox; Error is a short name, never a raw message
// (which could carry addresses, ports or paths of the host).
type result struct {
	Cmd     string `json:"cmd"`
	Content any    `json:"content,omitempty"`
	Error   string `json:"error,omitempty"`
	OK      bool   `json:"ok"`
}

// Probe limits: content is cut to this many bytes (or names), and a network
// probe gives up after the timeout (reported as ETIMEDOUT).
const (
	maxContent = 64
	netTimeout = 2 * time.Second
)

// try runs one probe command.
func (s *session) try(cmd string) result {
	verb, arg, _ := strings.Cut(cmd, " ")
	var content any
	var err error
	switch verb {
	case "net":
		content, err = probeTCP(s.ctx, arg)
	case "udp":
		content, err = probeUDP(s.ctx, arg)
	case "dns":
		content, err = probeDNS(s.ctx, arg)
	case "read":
		content, err = probeRead(s.path(arg))
	case "write":
		err = os.WriteFile(s.path(arg), []byte("probe\n"), 0o644)
	case "ls":
		content, err = probeList(s.path(arg))
	default:
		return result{Cmd: cmd, Error: "not-a-command"}
	}
	if err != nil {
		return result{Cmd: cmd, Error: errName(err)}
	}
	return result{Cmd: cmd, Content: content, OK: true}
}

// path resolves a relative path against the working directory, as the
// process itself would; tests run the subject in-process elsewhere.
func (s *session) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.opts.Dir, p)
}

func probeTCP(ctx context.Context, addr string) (string, error) {
	d := net.Dialer{Timeout: netTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(netTimeout))
	if _, err := c.Write([]byte("probe\n")); err != nil {
		return "", err
	}
	_ = c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(io.LimitReader(c, maxContent))
	if err != nil && len(b) == 0 && !isTimeout(err) {
		return "", err
	}
	return clean(b), nil // a silent peer that keeps the line open is still a connection
}

func probeUDP(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(netTimeout))
	if _, err := c.Write([]byte("probe\n")); err != nil {
		return "", err
	}
	b := make([]byte, maxContent)
	n, err := c.Read(b)
	if err != nil {
		return "", err
	}
	return clean(b[:n]), nil
}

// probeDNS uses Go's own resolver, which reads /etc/hosts and resolv.conf
// as a subject without libc name services would.
func probeDNS(ctx context.Context, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, netTimeout)
	defer cancel()
	addrs, err := (&net.Resolver{PreferGo: true}).LookupHost(ctx, name)
	slices.Sort(addrs)
	return addrs, err
}

func probeRead(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxContent))
	return clean(b), err
}

func probeList(path string) ([]string, error) {
	entries, err := os.ReadDir(path) // sorted by name
	names := []string{}
	for _, e := range entries[:min(len(entries), maxContent)] {
		names = append(names, e.Name())
	}
	return names, err
}

// clean makes content safe to show: valid UTF-8, control characters as '.'.
func clean(b []byte) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '.'
		}
		return r
	}, strings.ToValidUTF8(string(b), "\uFFFD"))
}

func isTimeout(err error) bool {
	t, ok := errors.AsType[interface {
		error
		Timeout() bool
	}](err)
	return ok && t.Timeout()
}

// errName maps an error to a short deterministic name: the errno name when
// there is one, else a getaddrinfo-style name for resolver failures.
func errName(err error) string {
	if dns, ok := errors.AsType[*net.DNSError](err); ok && dns.IsNotFound {
		return "EAI_NONAME"
	}
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		if name, ok := errnoNames[errno]; ok {
			return name
		}
		return "errno-" + strconv.Itoa(int(errno))
	}
	switch {
	case isTimeout(err):
		return "ETIMEDOUT"
	case errors.Is(err, io.EOF):
		return "EOF"
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return "EAI_FAIL"
	}
	if _, ok := errors.AsType[*net.AddrError](err); ok {
		return "EINVAL"
	}
	if _, ok := errors.AsType[*net.ParseError](err); ok {
		return "EINVAL"
	}
	return "EUNKNOWN"
}

// errnoNames names the errors a probe can plausibly meet; the syscall
// package has the numbers but not the names.
var errnoNames = map[syscall.Errno]string{
	syscall.EPERM:           "EPERM",
	syscall.ENOENT:          "ENOENT",
	syscall.EIO:             "EIO",
	syscall.EBADF:           "EBADF",
	syscall.EAGAIN:          "EAGAIN",
	syscall.ENOMEM:          "ENOMEM",
	syscall.EACCES:          "EACCES",
	syscall.EFAULT:          "EFAULT",
	syscall.EBUSY:           "EBUSY",
	syscall.EEXIST:          "EEXIST",
	syscall.EXDEV:           "EXDEV",
	syscall.ENODEV:          "ENODEV",
	syscall.ENOTDIR:         "ENOTDIR",
	syscall.EISDIR:          "EISDIR",
	syscall.EINVAL:          "EINVAL",
	syscall.EMFILE:          "EMFILE",
	syscall.EFBIG:           "EFBIG",
	syscall.ENOSPC:          "ENOSPC",
	syscall.EROFS:           "EROFS",
	syscall.EMLINK:          "EMLINK",
	syscall.EPIPE:           "EPIPE",
	syscall.ENAMETOOLONG:    "ENAMETOOLONG",
	syscall.ENOSYS:          "ENOSYS",
	syscall.ELOOP:           "ELOOP",
	syscall.EDQUOT:          "EDQUOT",
	syscall.EPROTO:          "EPROTO",
	syscall.EAFNOSUPPORT:    "EAFNOSUPPORT",
	syscall.EADDRINUSE:      "EADDRINUSE",
	syscall.EADDRNOTAVAIL:   "EADDRNOTAVAIL",
	syscall.ENETDOWN:        "ENETDOWN",
	syscall.ENETUNREACH:     "ENETUNREACH",
	syscall.ECONNABORTED:    "ECONNABORTED",
	syscall.ECONNRESET:      "ECONNRESET",
	syscall.ENOTCONN:        "ENOTCONN",
	syscall.ETIMEDOUT:       "ETIMEDOUT",
	syscall.ECONNREFUSED:    "ECONNREFUSED",
	syscall.EHOSTDOWN:       "EHOSTDOWN",
	syscall.EHOSTUNREACH:    "EHOSTUNREACH",
	syscall.EPROTONOSUPPORT: "EPROTONOSUPPORT",
}

// reaperArg is argv[1] of termverify-sandbox's PID-1 reaper.
const reaperArg = "__termverify-sandbox-reaper"

// pid1 says whether PID 1 of this PID namespace is our reaper. Only that
// verdict is reported: the host's PID 1 command line is not deterministic.
func pid1() map[string]any {
	b, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		return map[string]any{"error": errName(err)}
	}
	args := strings.Split(string(b), "\x00")
	return map[string]any{"ours": len(args) > 1 && args[1] == reaperArg}
}
