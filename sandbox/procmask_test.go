package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/ptytest"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// runcMountinfo is a container's /proc as runc leaves it: masked paths
// (/dev/null over files, an empty read-only tmpfs over directories) and
// read-only paths bound over themselves, plus a host's binfmt_misc,
// which masks nothing.
const runcMountinfo = `622 560 0:52 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
623 622 0:55 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
624 622 0:56 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
570 623 0:55 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw
571 623 0:55 /fs /proc/fs ro,nosuid,nodev,noexec,relatime - proc proc rw
572 623 0:55 /irq /proc/irq ro,nosuid,nodev,noexec,relatime - proc proc rw
573 623 0:55 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw
574 623 0:55 /sysrq-trigger /proc/sysrq-trigger ro,nosuid,nodev,noexec,relatime - proc proc rw
575 623 0:61 / /proc/acpi ro,relatime - tmpfs tmpfs ro
576 623 0:56 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
577 623 0:56 /null /proc/keys rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
578 623 0:56 /null /proc/timer_list rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
579 573 0:40 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw
580 623 0:56 /null /proc/odd\040name rw,nosuid - tmpfs tmpfs rw
581 622 0:62 / /procfoo rw - tmpfs tmpfs rw
`

func TestProcMasks(t *testing.T) {
	got := procMasks([]byte(runcMountinfo))
	want := []string{"/proc/acpi", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/kcore", "/proc/keys", "/proc/odd name", "/proc/sys", "/proc/sysrq-trigger", "/proc/timer_list"}
	if !slices.Equal(got, want) {
		t.Errorf("procMasks = %q\nwant %q", got, want)
	}
	host := "21 26 0:20 / /proc rw,relatime - proc proc rw\n30 21 0:40 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw\n"
	if got := procMasks([]byte(host)); len(got) != 0 {
		t.Errorf("a host's /proc: %q, want no masks", got)
	}
}

// procMountErr is libcontainer's text for the refused proc mount.
const procMountErr = `unable to start container process: error during container init: error mounting "proc" to rootfs at "/proc": mount src=proc, dst=/proc, dstFd=/proc/thread-self/fd/8, flags=MS_NOSUID|MS_NODEV|MS_NOEXEC: operation not permitted`

func TestProcMaskedError(t *testing.T) {
	if !procMountFailed(errors.New(procMountErr)) {
		t.Error("the proc mount's refusal not recognised")
	}
	for _, s := range []string{
		`error mounting "sysfs" to rootfs at "/sys": operation not permitted`,
		`error mounting "proc" to rootfs at "/proc": no such device`,
	} {
		if procMountFailed(errors.New(s)) {
			t.Errorf("%q taken for the proc mount's refusal", s)
		}
	}
	err := stepErr("start init", "id", &ProcMaskedError{Masked: procMasks([]byte(runcMountinfo)), Err: errors.New(procMountErr)})
	if !errors.Is(err, ErrProcMasked) {
		t.Error("not ErrProcMasked")
	}
	msg := err.Error()
	for _, w := range []string{
		"sandbox start init id: the host's /proc has masked paths (/proc/acpi, /proc/bus, /proc/fs, /proc/irq, /proc/kcore and 5 more); ",
		"a fresh procfs cannot be mounted in a nested sandbox; ",
		"run the outer container with --security-opt unmask=/proc/* (podman)",
		"systemPaths: unmasked (Kubernetes procMount: Unmasked)",
		`(mounting proc failed: ` + procMountErr + `)`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	// Another error, or no mask: left as it is.
	other := errors.New("boom")
	if explainProcMount(other) != other || explainProcMount(nil) != nil {
		t.Error("explainProcMount changed an unrelated error")
	}
}

// procMaskChildEnv makes TestProcMaskedStart's re-executed test binary
// the rootless side, in a mount namespace with runc-like masks; its
// value is the result file.
const procMaskChildEnv = "TVS_TEST_PROCMASK_CHILD"

// TestProcMaskedStart simulates a nested container: a mount namespace
// (unshare -m) whose /proc has runc-like masks, the test binary in it as
// uid 65534, so that the sandbox takes the rootless path and its user
// namespace makes the masks locked: the kernel refuses the fresh procfs
// (mount_too_revealing). Start must fail with the precise error and
// leave nothing behind, and the namespace trial must report the same
// refusal beforehand as a lasting one (ErrNoNamespace), which is what lets
// `run --isolation auto` fall back to isolation none there. (As root in the initial user namespace the
// kernel allows the mount: there is nothing to refuse.)
func TestProcMaskedStart(t *testing.T) {
	if v := os.Getenv(procMaskChildEnv); v != "" {
		procMaskChild(t, v)
		return
	}
	sandboxtest.RequireRoot(t)
	// The tools run with the child's PATH (the script's setpriv and
	// mount too): they are looked up in it, not in ours.
	const childPath = "PATH=/usr/bin:/bin:/usr/sbin:/sbin"
	var unshare string
	for _, tool := range []string{"unshare", "setpriv", "mount"} {
		p, err := ptytest.LookPath([]string{childPath}, tool)
		if err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
		if tool == "unshare" {
			unshare = p
		}
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join(work, "result")
	// runc's masks: /dev/null over files, a read-only tmpfs over a
	// directory, a read-only bind of /proc/sys over itself.
	script := `set -e
for f in /proc/kcore /proc/timer_list /proc/keys; do [ -e "$f" ] && mount --bind /dev/null "$f"; done
mount -t tmpfs -o ro tmpfs /proc/acpi
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
exec setpriv --reuid 65534 --regid 65534 --clear-groups "$0" -test.run='^TestProcMaskedStart$' -test.count=1`
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script, exe)
	cmd.Env = []string{procMaskChildEnv + "=" + result, childPath, "TMPDIR=" + work, "HOME=" + work}
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	got, rerr := os.ReadFile(result)
	if rerr != nil {
		t.Fatalf("child wrote no result (%v, %v):\n%s", rerr, err, out)
	}
	res := string(got)
	if strings.HasPrefix(res, "skip: ") {
		t.Skip(strings.TrimPrefix(res, "skip: "))
	}
	if !strings.HasPrefix(res, "refused: ") {
		t.Fatalf("child: %s\n%s", res, out)
	}
	msg, trialMsg, _ := strings.Cut(strings.TrimPrefix(res, "refused: "), "\ntrial: ")
	if w := "namespace unavailable: the host's /proc has masked paths ("; !strings.HasPrefix(trialMsg, w) {
		t.Errorf("namespace trial's error does not start with %q:\n%s", w, trialMsg)
	}
	masked := []string{"/proc/acpi", "/proc/sys"}
	for _, f := range []string{"/proc/kcore", "/proc/timer_list", "/proc/keys"} {
		if _, err := os.Stat(f); err == nil {
			masked = append(masked, f)
		}
	}
	slices.Sort(masked)
	for _, w := range []string{
		"sandbox start init ",
		": the host's /proc has masked paths (" + strings.Join(masked, ", ") + "); ",
		"; a fresh procfs cannot be mounted in a nested sandbox; run the outer container with --security-opt unmask=/proc/* (podman), --security-opt systempaths=unconfined (Docker) or systemPaths: unmasked (Kubernetes procMount: Unmasked) (mounting proc failed: ",
		`"proc" to rootfs at "/proc"`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	if err != nil {
		t.Errorf("child: %v\n%s", err, out)
	}
}

// procMaskChild is TestProcMaskedStart's rootless side, in the masked
// mount namespace.
func procMaskChild(t *testing.T, resultFile string) {
	result := func(s string) {
		if err := os.WriteFile(resultFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !rootlessMode() {
		result("skip: the child is not rootless")
		return
	}
	if err := tryClone(sandboxNamespaces, true, nil); err != nil {
		result("skip: no user namespace for uid 65534: " + err.Error())
		return
	}
	info, err := ownMountinfo()
	if err != nil || len(procMasks(info)) == 0 {
		result(fmt.Sprintf("error: no masks in the child's mountinfo (%v)", err))
		return
	}
	// The namespace trial must see the refusal coming, as a lasting one,
	// so that `run --isolation auto` falls back instead of failing.
	trialErr := NamespaceTrial()
	state := filepath.Join(filepath.Dir(resultFile), "state")
	spec := Spec{
		Args:        []string{"/bin/true"},
		ScratchRoot: true,
		StateDir:    state,
	}
	sb, err := Start(context.Background(), spec)
	if err == nil {
		sb.Destroy()
		if trialErr == nil {
			result("skip: this kernel mounts a fresh procfs under masked paths (no mount_too_revealing refusal)")
		} else {
			result("error: the namespace trial refused (" + trialErr.Error() + ") but a sandbox started")
		}
		return
	}
	if !errors.Is(trialErr, ErrNoNamespace) || !errors.Is(trialErr, ErrProcMasked) {
		result(fmt.Sprintf("error: the sandbox was refused its procfs, but the namespace trial did not report that as a lasting refusal (%v)", trialErr))
		return
	}
	var se *StepError
	if !errors.Is(err, ErrProcMasked) || !errors.As(err, &se) {
		result("error: " + err.Error())
		return
	}
	if leaks := sandboxtest.Leaks(state, ""); len(leaks) > 0 {
		result("error: left behind: " + strings.Join(leaks, "; ") + " after " + err.Error())
		return
	}
	result("refused: " + err.Error() + "\ntrial: " + trialErr.Error())
}
