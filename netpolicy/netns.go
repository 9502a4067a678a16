package netpolicy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrNeedPrivilege is wrapped by Start when the supervisor may not enter the
// sandbox's network namespace or configure it. setns(2) into a network
// namespace needs CAP_SYS_ADMIN both in the caller's own user namespace and
// in the one owning the target, which a rootless supervisor lacks even for a
// namespace its own child created: an allow-list then cannot be enforced at
// the os tier, and callers must say so rather than carry on.
var ErrNeedPrivilege = errors.New("needs CAP_SYS_ADMIN over the network namespace")

// ErrSameNamespace is wrapped by Start when nsPath names the supervisor's own
// network namespace: serving there would add addresses to the host's lo and
// listen beside the real services, so it is refused rather than done.
var ErrSameNamespace = errors.New("network namespace is the supervisor's own")

// listenIn opens one TCP listener per address inside the network namespace
// at nsPath, after bringing its lo up and adding every non-loopback address
// to it. The listeners keep the namespace: they serve it from any thread.
func listenIn(nsPath string, addrs []netip.AddrPort) ([]*net.TCPListener, error) {
	target, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", nsPath, privErr(err))
	}
	defer unix.Close(target)

	type result struct {
		lns []*net.TCPListener
		err error
	}
	ch := make(chan result, 1)
	// setns changes only the calling thread, so it runs on a goroutine of
	// its own that locks its thread; listenIn owns it and waits on ch.
	go func() {
		runtime.LockOSThread()
		lns, restored, err := enterAndListen(target, nsPath, addrs)
		if restored {
			runtime.UnlockOSThread()
		}
		// Otherwise the goroutine ends locked, and the runtime discards a
		// thread still in the sandbox's namespace instead of reusing it.
		ch <- result{lns, err}
	}()
	r := <-ch
	return r.lns, r.err
}

// enterAndListen runs on a locked thread. restored is false only when the
// thread could not return to its original namespace and must be discarded.
// It starts no goroutines: one started inside would inherit this thread's
// namespace only by accident of scheduling.
func enterAndListen(target int, nsPath string, addrs []netip.AddrPort) (lns []*net.TCPListener, restored bool, err error) {
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, true, fmt.Errorf("open own network namespace: %w", err)
	}
	defer unix.Close(orig)
	if same, err := sameFile(orig, target); err != nil {
		return nil, true, fmt.Errorf("stat network namespace %s: %w", nsPath, err)
	} else if same {
		return nil, true, fmt.Errorf("enter %s: %w", nsPath, ErrSameNamespace)
	}
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("setns %s: %w", nsPath, privErr(err))
	}
	lns, err = setUpAndListen(nsPath, addrs)
	if berr := unix.Setns(orig, unix.CLONE_NEWNET); berr != nil {
		closeAll(lns)
		return nil, false, errors.Join(err, fmt.Errorf("setns back from %s: %w", nsPath, berr))
	}
	return lns, true, err
}

// setUpAndListen runs inside the namespace. lo must be up even though the
// sandbox may already have raised it: an address on a down lo binds but is
// unreachable (ENETUNREACH), and raising it twice is harmless.
func setUpAndListen(nsPath string, addrs []netip.AddrPort) ([]*net.TCPListener, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", nsPath, err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return nil, fmt.Errorf("find lo in %s: %w", nsPath, err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return nil, fmt.Errorf("set lo up in %s: %w", nsPath, privErr(err))
	}
	added := map[netip.Addr]bool{}
	for _, ap := range addrs {
		a := ap.Addr()
		// 127.0.0.0/8 and ::1 are local on an up lo already.
		if a.IsLoopback() || added[a] {
			continue
		}
		bits := a.BitLen()
		addr := &netlink.Addr{
			IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, bits)},
			// No duplicate address detection: a tentative IPv6 address
			// cannot be bound, and lo has no neighbours to collide with.
			Flags: unix.IFA_F_NODAD,
		}
		// Replace, not add, so that a second Start in the same namespace
		// does not fail with EEXIST.
		if err := h.AddrReplace(lo, addr); err != nil {
			return nil, fmt.Errorf("add %s to lo in %s: %w", a, nsPath, privErr(err))
		}
		added[a] = true
	}
	lns := make([]*net.TCPListener, 0, len(addrs))
	for _, ap := range addrs {
		ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(ap))
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("listen %s in %s: %w", ap, nsPath, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// sameFile reports whether two open namespace files name one namespace.
func sameFile(a, b int) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Fstat(a, &sa); err != nil {
		return false, err
	}
	if err := unix.Fstat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

// privErr adds ErrNeedPrivilege to permission errors so that callers can
// downgrade or refuse with errors.Is instead of reading errnos.
func privErr(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %w", ErrNeedPrivilege, err)
	}
	return err
}

func closeAll(lns []*net.TCPListener) {
	for _, ln := range lns {
		ln.Close()
	}
}
