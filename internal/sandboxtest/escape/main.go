// Command escape is the containment suite's subject: each operation tries
// one way out of a sandbox and prints "OK <detail>" if it worked or
// "ERR <errno name or message>" if it was refused. It is built by the
// tests (CGO_ENABLED=0, static) and placed in the mapped root.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// inherited lists the open descriptors before this program opens any:
// probed with fcntl, so nothing of ours (epoll, directory) is counted.
var inherited = func() []string {
	var fds []string
	for fd := 0; fd < 1024; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			fds = append(fds, strconv.Itoa(fd))
		}
	}
	return fds
}()

func main() {
	if len(os.Args) < 2 {
		fmt.Println("ERR usage")
		os.Exit(2)
	}
	fmt.Println(run(os.Args[1], os.Args[2:]))
}

func result(detail string, err error) string {
	if err == nil {
		return "OK " + detail
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return "ERR " + unix.ErrnoName(errno)
	}
	return "ERR " + err.Error()
}

func run(op string, args []string) string {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch op {
	case "tcp": // tcp ADDR [EXPECT]: connect and read one line
		c, err := net.DialTimeout("tcp", arg(0), 2*time.Second)
		if err != nil {
			return result("", err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		return result(strings.TrimSpace(string(buf[:n])), err)
	case "udp": // udp ADDR: send a datagram, wait for an answer
		c, err := net.Dial("udp", arg(0))
		if err != nil {
			return result("", err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("ping")); err != nil {
			return result("", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return "ERR timeout"
		}
		return result(string(buf[:n]), err)
	case "dns": // dns NAME
		r := &net.Resolver{PreferGo: true}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, arg(0))
		if err != nil {
			return "ERR lookup"
		}
		return "OK " + strings.Join(addrs, ",")
	case "read":
		b, err := os.ReadFile(arg(0))
		return result(strings.TrimSpace(string(b)), err)
	case "write":
		return result("", os.WriteFile(arg(0), []byte("x"), 0o644))
	case "openw":
		f, err := os.OpenFile(arg(0), os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return result("", err)
	case "mount":
		return result("", unix.Mount("tmpfs", arg(0), "tmpfs", 0, ""))
	case "umount":
		return result("", unix.Unmount(arg(0), unix.MNT_DETACH))
	case "unshare":
		flags := map[string]int{"user": unix.CLONE_NEWUSER, "mnt": unix.CLONE_NEWNS, "net": unix.CLONE_NEWNET, "pid": unix.CLONE_NEWPID}[arg(0)]
		return result("", unix.Unshare(flags))
	case "setns":
		fd, err := unix.Open(arg(0), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return result("", err)
		}
		return result("", unix.Setns(fd, 0))
	case "chroot":
		return result("", unix.Chroot(arg(0)))
	case "procs": // list visible pids
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return result("", err)
		}
		var pids []string
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, e.Name())
			}
		}
		return "OK " + strings.Join(pids, ",")
	case "kill":
		pid, _ := strconv.Atoi(arg(0))
		return result("", unix.Kill(pid, unix.SIGKILL))
	case "ptrace":
		pid, _ := strconv.Atoi(arg(0))
		return result("", unix.PtraceAttach(pid))
	case "mknod":
		return result("", unix.Mknod(arg(0), unix.S_IFBLK|0o600, int(unix.Mkdev(8, 0))))
	case "keyctl":
		_, err := unix.KeyctlJoinSessionKeyring("escape")
		return result("", err)
	case "fds": // descriptors open at start, see inherited
		return "OK " + strings.Join(inherited, ",")
	case "euid":
		return fmt.Sprintf("OK euid=%d", os.Geteuid())
	case "bpf":
		_, _, errno := unix.Syscall(unix.SYS_BPF, 0, 0, 0)
		return result("", errnoErr(errno))
	case "clone3":
		_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		return result("", errnoErr(errno))
	case "socket", "socketpair": // socket FAMILY TYPE PROTO: create (never connect or bind) and close
		return result("", socketOp(op, arg(0), arg(1), arg(2)))
	case "ifaces": // interface names, read over NETLINK_ROUTE as getifaddrs does
		ifs, err := net.Interfaces()
		if err != nil {
			return result("", err)
		}
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return "OK " + strings.Join(names, ",")
	case "alloc": // alloc MiB: touch that much memory
		mib, _ := strconv.Atoi(arg(0))
		var keep [][]byte
		for i := 0; i < mib; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		return fmt.Sprintf("OK %d", len(keep))
	}
	return "ERR unknown op " + op
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// socketOp calls socket(2) or socketpair(2) and closes what it got: it
// only asks whether the family may be created, it talks to nobody. The
// type always carries SOCK_CLOEXEC, as a real program's would, so the
// filter is seen to ignore the flag bits.
func socketOp(op, family, typ, proto string) error {
	// Names accepted; anything else must be a number, so a test can name
	// any family or protocol (e.g. AF_XDP) without a new entry here.
	socketFamilies := map[string]int{"unix": unix.AF_UNIX, "inet": unix.AF_INET, "inet6": unix.AF_INET6,
		"netlink": unix.AF_NETLINK, "vsock": unix.AF_VSOCK, "packet": unix.AF_PACKET, "alg": unix.AF_ALG}
	socketTypes := map[string]int{"stream": unix.SOCK_STREAM, "dgram": unix.SOCK_DGRAM, "raw": unix.SOCK_RAW,
		"seqpacket": unix.SOCK_SEQPACKET}
	socketProtos := map[string]int{"route": unix.NETLINK_ROUTE, "sock_diag": unix.NETLINK_SOCK_DIAG,
		"kobject_uevent": unix.NETLINK_KOBJECT_UEVENT, "audit": unix.NETLINK_AUDIT, "generic": unix.NETLINK_GENERIC}
	num := func(names map[string]int, s string) (int, error) {
		if n, ok := names[s]; ok {
			return n, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("bad socket argument %q", s)
		}
		return n, nil
	}
	f, err := num(socketFamilies, family)
	if err != nil {
		return err
	}
	t, err := num(socketTypes, typ)
	if err != nil {
		return err
	}
	p, err := num(socketProtos, cmp.Or(proto, "0"))
	if err != nil {
		return err
	}
	if op == "socketpair" {
		fds, err := unix.Socketpair(f, t|unix.SOCK_CLOEXEC, p)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return err
	}
	fd, err := unix.Socket(f, t|unix.SOCK_CLOEXEC, p)
	if err == nil {
		unix.Close(fd)
	}
	return err
}
