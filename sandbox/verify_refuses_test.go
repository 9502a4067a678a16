package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
	"github.com/termverify/termverify-sandbox/netpolicy"
)

// idsHelperEnv makes the test binary, from its package initialisation, a
// process holding exactly the eight ids it names ("ruid euid suid fsuid
// rgid egid sgid fsgid") and no capability, which says ready and waits
// for EOF on its standard input. setpriv(1) cannot make one: every
// set*uid call also sets the filesystem id to the effective one, and it
// has no way to set the saved id alone.
const idsHelperEnv = "TVS_TEST_IDS_HELPER"

func init() {
	// Initialisation runs on the main thread, the thread-group leader
	// whose credentials /proc/<pid>/status shows: setfsuid, setfsgid and
	// capset act on the calling thread only.
	if v := os.Getenv(idsHelperEnv); v != "" {
		if err := holdIDs(v); err != nil {
			fmt.Fprintln(os.Stderr, "ids helper:", err)
			os.Exit(2)
		}
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
}

// holdIDs switches the calling process (root) to the ids in spec.
func holdIDs(spec string) error {
	var id [8]int
	f := strings.Fields(spec)
	if len(f) != len(id) {
		return fmt.Errorf("%q: want 8 ids", spec)
	}
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		id[i] = n
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(id[4], id[5], id[6]); err != nil {
		return fmt.Errorf("setresgid: %w", err)
	}
	unix.Setfsgid(id[7]) // still root: allowed
	// The uid switch clears the effective capabilities; keep the
	// permitted ones to raise CAP_SETUID again for setfsuid, which
	// otherwise accepts only one of the three other uids.
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("keepcaps: %w", err)
	}
	if err := syscall.Setresuid(id[0], id[1], id[2]); err != nil {
		return fmt.Errorf("setresuid: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: 1 << unix.CAP_SETUID, Permitted: 1 << unix.CAP_SETUID}}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	unix.Setfsuid(id[3])
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// TestDirectVerifyRefusesOneID: the host-side check of the parked reaper
// compares each of the real, effective, saved and filesystem uid and gid.
// Each case differs from the expected ids in exactly one of the eight, and
// must be refused at that id; TestDirectVerifyRefuses changes real,
// effective and saved together, so a check that skipped one of them
// would pass it. The control case, with every id right, gets past the
// ids and stops at no_new_privs (the helper sets none): the refusals are
// the ids' doing.
func TestDirectVerifyRefusesOneID(t *testing.T) {
	const want, other = 65534, 65533
	cases := []struct {
		name string
		ids  [8]int // ruid euid suid fsuid rgid egid sgid fsgid
		step string // the StepError's Object
	}{
		{"every id right", [8]int{want, want, want, want, want, want, want, want}, "no-new-privs"},
		{"real uid", [8]int{other, want, want, want, want, want, want, want}, "uid"},
		{"effective uid", [8]int{want, other, want, want, want, want, want, want}, "uid"},
		{"saved uid", [8]int{want, want, other, want, want, want, want, want}, "uid"},
		{"filesystem uid", [8]int{want, want, want, other, want, want, want, want}, "uid"},
		{"real gid", [8]int{want, want, want, want, other, want, want, want}, "gid"},
		{"effective gid", [8]int{want, want, want, want, want, other, want, want}, "gid"},
		{"saved gid", [8]int{want, want, want, want, want, want, other, want}, "gid"},
		{"filesystem gid", [8]int{want, want, want, want, want, want, want, other}, "gid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pid := startIDsHelper(t, tc.ids)
			sb := &Sandbox{}
			err := sb.verifyDirect(pid, &reaper.IDs{UID: want, GID: want}, nil, make(chan struct{}))
			var se *StepError
			if !errors.Is(err, ErrNotVerified) || !errors.As(err, &se) || se.Object != tc.step {
				t.Errorf("verify: %v, want ErrNotVerified at %s", err, tc.step)
			}
		})
	}
}

// startIDsHelper starts the test binary as an ids helper (idsHelperEnv)
// holding ids, checks from the host that it holds exactly those, and
// returns its pid; it ends with the test.
func startIDsHelper(t *testing.T, ids [8]int) int {
	t.Helper()
	requireRootCaps(t)
	var s []string
	for _, id := range ids {
		s = append(s, strconv.Itoa(id))
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), idsHelperEnv+"="+strings.Join(s, " "))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("ids helper: %q %v, stderr %q", line, err, stderr.String())
	}
	st, err := procStatus(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	wantUID, wantGID := strings.Join(s[:4], " "), strings.Join(s[4:], " ")
	if u, g := strings.Join(strings.Fields(st["Uid"]), " "), strings.Join(strings.Fields(st["Gid"]), " "); u != wantUID || g != wantGID || st["CapEff"] != noCaps || st["CapPrm"] != noCaps {
		t.Fatalf("setup: Uid %q Gid %q CapEff %s CapPrm %s, want %q, %q and no capabilities", u, g, st["CapEff"], st["CapPrm"], wantUID, wantGID)
	}
	return cmd.Process.Pid
}

// requireRootCaps skips unless the test runs as root with CAP_SETUID and
// CAP_SETGID, which the helpers need to hold any ids.
func requireRootCaps(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: running as uid %d", os.Geteuid())
	}
	eff, err := ownCapEff()
	if err != nil {
		t.Fatal(err)
	}
	if need := uint64(1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID); eff&need != need {
		t.Skipf("needs CAP_SETUID and CAP_SETGID (effective capabilities %016x)", eff)
	}
}

// TestVerifyRefusesInterfaceBesidesLo: verify claims a confined network
// only for a namespace whose one interface is lo. A process in new mount,
// PID, IPC, UTS and network namespaces under a root of its own (what
// verify checks before the network) is verified with lo alone, with a
// second link besides lo, and with lo renamed; only the first may pass.
func TestVerifyRefusesInterfaceBesidesLo(t *testing.T) {
	requireRootCaps(t)
	for _, tool := range []string{"unshare", "ip", "chroot", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	for _, d := range []string{"/usr/bin/sh", "/usr/bin/sleep"} {
		if _, err := os.Stat(d); err != nil {
			t.Skipf("the process's root binds the host /usr and needs %s: %v", d, err)
		}
	}
	// The second link is a dummy where the kernel has the driver; a
	// bridge (built in more often) otherwise: either is an interface the
	// subject could reach beyond lo.
	extra := `ip link add tvs0 type dummy 2>/dev/null || ip link add tvs0 type bridge`
	cases := []struct {
		name  string
		setup string // run in the new network namespace
		step  string // "": verify must pass
	}{
		{"lo only", "true", ""},
		{"a link besides lo", extra, "network-namespace"},
		{"lo renamed", "ip link set lo name tvs-lo", "network-namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pid := startNamespaced(t, tc.setup)
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
			t.Logf("interfaces of pid %d:\n%s", pid, b)
			sb := &Sandbox{}
			err := sb.verify(pid, false, &netpolicy.Plan{})
			if tc.step == "" {
				if err != nil {
					t.Fatalf("verify: %v, want nil", err)
				}
				if !sb.applied.Network.Confined {
					t.Errorf("network %+v, want confined", sb.applied.Network)
				}
				return
			}
			var se *StepError
			if !errors.Is(err, ErrNotVerified) || !errors.As(err, &se) || se.Object != tc.step {
				t.Fatalf("verify: %v, want ErrNotVerified at %s", err, tc.step)
			}
			if sb.applied.Network.Confined {
				t.Errorf("network %+v claimed confined", sb.applied.Network)
			}
		})
	}
}

// startNamespaced starts a process in new mount, PID, IPC, UTS and network
// namespaces, with setup run in the network namespace and, as its root, a
// tmpfs holding the host /usr (bound in its private mount namespace, so
// nothing is mounted on the host). It returns the host pid of that root's
// process, which waits for the test to end.
func startNamespaced(t *testing.T, setup string) int {
	t.Helper()
	root := t.TempDir()
	script := `set -e
` + setup + `
mount -t tmpfs -o mode=0755 tvs-test-root "$1"
mkdir "$1/usr"
mount --rbind /usr "$1/usr"
ln -s usr/bin "$1/bin"; ln -s usr/lib "$1/lib"; ln -s usr/lib64 "$1/lib64"
exec chroot "$1" /bin/sh -c 'echo ready; exec sleep 20'`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
		"--ipc", "--uts", "--net", "sh", "-c", script, "sh", root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("namespaced process: %q %v, stderr %q", line, err, stderr.String())
	}
	// unshare forked the process in the new PID namespace: its only child.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("unshare's children: %q, want one", b)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestRootFSTopLevelSymlinkStaysInside: a top-level symlink of a --rootfs
// is recreated as a symlink in the sandbox's root, never followed on the
// host. Were it opened through the link, the host directory it names
// would be bound into the sandbox: leak -> a host directory holding a
// marker, and etc-leak -> /etc (the host's, which has a hostname; the
// rootfs's has none). Inside, each resolves in the sandbox's own root,
// where neither file exists.
func TestRootFSTopLevelSymlinkStaysInside(t *testing.T) {
	f := newFixture(t)
	f.withEscape(t)
	if _, err := os.Stat("/etc/hostname"); err != nil {
		t.Skipf("the etc-leak case needs a host /etc/hostname: %v", err)
	}
	host := t.TempDir()
	const marker = "host-side-marker-7f3a"
	writeFile(t, filepath.Join(host, "marker"), marker+"\n", 0o644)
	rootfs := t.TempDir()
	escape, err := os.ReadFile(filepath.Join(f.root, "escape"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(rootfs, "bin/escape"), string(escape), 0o755)
	// The reaper is this test binary, linked dynamically: as in TestRootFS,
	// the root holds its loader and libc.
	for _, lib := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"} {
		b, err := os.ReadFile(lib)
		if err != nil {
			t.Skipf("the complete root needs %s: %v", lib, err)
		}
		writeFile(t, filepath.Join(rootfs, lib), string(b), 0o755)
	}
	writeFile(t, filepath.Join(rootfs, "etc/hosts"), "127.0.0.1 localhost\n", 0o644)
	for name, target := range map[string]string{"leak": host, "etc-leak": "/etc"} {
		if err := os.Symlink(target, filepath.Join(rootfs, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ name, path string }{
		{"leak to a host directory", "/leak/marker"},
		{"leak to /etc", "/etc-leak/hostname"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := f.spec("/bin/escape", "read", tc.path)
			spec.RootFS = rootfs
			ex, out, stderr, _ := runBox(t, spec, 20*time.Second)
			if ex.ShellStatus() != 0 {
				t.Fatalf("exit %+v stderr %q", ex, stderr)
			}
			if out != "ERR ENOENT" {
				t.Errorf("read %s: %q, want ERR ENOENT (the host's file seen through the symlink)", tc.path, out)
			}
		})
	}
}
