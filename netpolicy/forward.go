package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MaxConnsPerRoute bounds the live connections one route's forwarder serves
// at a time. Each costs the supervisor two descriptors and two goroutines,
// so a subject that opens connections in a loop is held to a fixed cost per
// route; connection 65 is accepted and reset at once (counted as Refused)
// rather than left to hang in the kernel's backlog.
const MaxConnsPerRoute = 64

// DialTimeout bounds one host-side connect. The subject sees the same
// failure it would see without a sandbox: its connection is reset.
const DialTimeout = 10 * time.Second

// Forwarder serves a started plan: one listener inside the sandbox per
// distinct listen address, each relaying to its route's pinned dial address.
// Its methods are safe for concurrent use.
type Forwarder struct {
	listeners []*listener        // fixed at Start
	cancel    context.CancelFunc // cancels host-side dials; nil for deny
	wg        sync.WaitGroup     // accept loops and connection handlers
	mu        sync.Mutex         // guards conns and closed
	conns     map[*net.TCPConn]struct{}
	closed    bool
}

// listener is one route's listening socket, its limits and its counters.
type listener struct {
	ln         *net.TCPListener
	listen     netip.AddrPort
	dial       netip.AddrPort
	hosts      []string
	slots      chan struct{} // one token per live connection
	accepted   atomic.Uint64
	refused    atomic.Uint64
	dialFailed atomic.Uint64
}

// RouteStats counts one listener's connections, for the evidence file.
type RouteStats struct {
	Listen     netip.AddrPort // inside the sandbox
	Dial       netip.AddrPort // host side
	Hosts      []string       // the policy hosts this listener serves, sorted
	Accepted   uint64         // connections taken on (relayed or dial failed)
	Refused    uint64         // connections reset because MaxConnsPerRoute were live
	DialFailed uint64         // accepted connections whose host-side dial failed
	Active     int            // connections live now
}

// Start enters the network namespace at nsPath (for example
// "/proc/<pid>/ns/net" from libcontainer's CreateRuntime hook) on a locked
// OS thread, brings lo up, adds every non-loopback listen address to lo
// (/32 or /128), opens the TCP listeners, switches back, and then serves
// until Close: each accepted connection is relayed, half-close aware, to
// the pinned Dial address of the route whose listener accepted it, dialed
// from the supervisor's namespace. Nothing is resolved or chosen at
// connection time.
//
// A Deny plan starts nothing and touches no namespace; its Close is a
// no-op. Start wraps ErrNeedPrivilege when the namespace cannot be entered
// or configured for lack of privilege (always so for a rootless supervisor)
// and ErrSameNamespace when nsPath is the supervisor's own namespace. On
// error nothing is left open; on success the caller must call Close.
func (p *Plan) Start(nsPath string) (*Forwarder, error) {
	if p == nil {
		return nil, &PolicyError{Index: -1, Rule: "mode.unknown", Err: errors.New("nil plan")}
	}
	switch p.Policy.Mode {
	case Deny:
		return &Forwarder{}, nil
	case AllowList:
	default:
		return nil, &PolicyError{Index: -1, Rule: "mode.unknown", Value: string(p.Policy.Mode)}
	}
	ls, err := groupRoutes(p.Routes)
	if err != nil {
		return nil, err
	}
	addrs := make([]netip.AddrPort, len(ls))
	for i, l := range ls {
		addrs[i] = l.listen
	}
	lns, err := listenIn(nsPath, addrs)
	if err != nil {
		return nil, err
	}
	for i, l := range ls {
		l.ln = lns[i]
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Forwarder{listeners: ls, cancel: cancel, conns: map[*net.TCPConn]struct{}{}}
	for _, l := range ls {
		f.wg.Go(func() { f.acceptLoop(ctx, l) })
	}
	return f, nil
}

// groupRoutes gives each distinct listen address one listener. Routes that
// share a listen address must share the dial address too, or a connection's
// destination would depend on which route won: that is refused.
func groupRoutes(routes []Route) ([]*listener, error) {
	var ls []*listener
	byListen := map[netip.AddrPort]*listener{}
	for _, r := range routes {
		for _, ap := range []netip.AddrPort{r.Listen, r.Dial} {
			if !ap.IsValid() || ap.Port() == 0 {
				return nil, fmt.Errorf("route %s: %w", HostPort{r.Host, r.Port}, &PolicyError{Index: -1, Rule: "route.address", Value: ap.String()})
			}
			if err := checkAddr(ap.Addr()); err != nil {
				return nil, fmt.Errorf("route %s: %w", HostPort{r.Host, r.Port}, &PolicyError{Index: -1, Rule: "route.address", Value: ap.String(), Err: err})
			}
		}
		l := byListen[r.Listen]
		if l == nil {
			l = &listener{listen: r.Listen, dial: r.Dial, slots: make(chan struct{}, MaxConnsPerRoute)}
			byListen[r.Listen] = l
			ls = append(ls, l)
		} else if l.dial != r.Dial {
			return nil, fmt.Errorf("route %s: %w", HostPort{r.Host, r.Port}, &PolicyError{Index: -1, Rule: "route.conflict", Value: r.Listen.String(),
				Err: fmt.Errorf("dials %s and %s", l.dial, r.Dial)})
		}
		if !slices.Contains(l.hosts, r.Host) {
			l.hosts = append(l.hosts, r.Host)
		}
	}
	for _, l := range ls {
		slices.Sort(l.hosts)
	}
	slices.SortFunc(ls, func(a, b *listener) int { return a.listen.Compare(b.listen) })
	return ls, nil
}

// acceptLoop serves one listener until Close closes it.
func (f *Forwarder) acceptLoop(ctx context.Context, l *listener) {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.ln.AcceptTCP()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if !transientAcceptError(err) {
				return
			}
			// Out of descriptors (ours or the system's): wait for some to
			// be released rather than spin, as net/http's Serve does.
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		select {
		case l.slots <- struct{}{}:
		default:
			l.refused.Add(1)
			c.SetLinger(0) // reset: the subject sees ECONNRESET, not a clean end
			c.Close()
			continue
		}
		l.accepted.Add(1)
		if !f.track(c) {
			<-l.slots
			c.Close()
			return
		}
		f.wg.Go(func() {
			defer func() { <-l.slots }()
			f.relay(ctx, l, c)
		})
	}
}

func transientAcceptError(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// relay dials the listener's pinned address and copies both ways until both
// directions have ended or Close closes the connections.
func (f *Forwarder) relay(ctx context.Context, l *listener, in *net.TCPConn) {
	defer f.untrack(in)
	d := net.Dialer{Timeout: DialTimeout}
	// l.dial is an address literal: DialContext resolves nothing.
	c, err := d.DialContext(ctx, "tcp", l.dial.String())
	if err != nil {
		l.dialFailed.Add(1)
		in.SetLinger(0)
		return
	}
	out := c.(*net.TCPConn)
	if !f.track(out) {
		out.Close()
		return
	}
	defer f.untrack(out)
	var back sync.WaitGroup
	back.Go(func() { pipe(in, out) })
	pipe(out, in)
	back.Wait()
}

// pipe copies src to dst. At src's end of stream it half-closes dst so the
// peer sees EOF while the other direction keeps flowing. On an error it
// closes both, which also ends the other direction's copy.
func pipe(dst, src *net.TCPConn) {
	if _, err := io.Copy(dst, src); err != nil {
		src.SetLinger(0)
		dst.SetLinger(0)
		src.Close()
		dst.Close()
		return
	}
	dst.CloseWrite()
}

// track records a live connection so that Close can end it; it reports
// false once Close has begun.
func (f *Forwarder) track(c *net.TCPConn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forwarder) untrack(c *net.TCPConn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// Close stops the listeners, cancels pending dials, closes every live
// connection and waits for every goroutine Start began. It returns the
// errors from closing the listeners, if any. Calling it again waits and
// returns nil.
func (f *Forwarder) Close() error {
	if f.cancel == nil {
		return nil // deny: nothing was started
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		f.wg.Wait()
		return nil
	}
	f.closed = true
	conns := make([]*net.TCPConn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()

	f.cancel()
	var errs []error
	for _, l := range f.listeners {
		if err := l.ln.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close listener %s: %w", l.listen, err))
		}
	}
	for _, c := range conns {
		c.Close()
	}
	f.wg.Wait()
	return errors.Join(errs...)
}

// Stats returns each listener's counters, sorted by listen address; nil
// for a deny plan.
func (f *Forwarder) Stats() []RouteStats {
	var s []RouteStats
	for _, l := range f.listeners {
		s = append(s, RouteStats{
			Listen:     l.listen,
			Dial:       l.dial,
			Hosts:      slices.Clone(l.hosts),
			Accepted:   l.accepted.Load(),
			Refused:    l.refused.Load(),
			DialFailed: l.dialFailed.Load(),
			Active:     len(l.slots),
		})
	}
	return s
}
