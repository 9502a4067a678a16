package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/netpolicy"
)

// TestProbeFixes is the fix table's test: the rows the issue names say
// what it asks, and every word the probe can produce finds a row of its
// own (not the fallback).
func TestProbeFixes(t *testing.T) {
	root := fixFacts{}
	rootless := fixFacts{rootless: true}
	off := fixFacts{rootless: true, userNSOff: "kernel.unprivileged_userns_clone=0", userNSOn: "kernel.unprivileged_userns_clone=1"}
	offMax := fixFacts{rootless: true, userNSOff: "user.max_user_namespaces=0", userNSOn: "user.max_user_namespaces=15000"}
	rootOff := fixFacts{userNSOff: off.userNSOff, userNSOn: off.userNSOn}
	for _, c := range []struct {
		mech, word string
		f          fixFacts
		want       []string
	}{
		{"mount-namespace", "EPERM", root, []string{"run the container with --privileged, or with --cap-add SYS_ADMIN,NET_ADMIN,SYS_PTRACE and a seccomp profile that allows unshare and mount; see docs/CONTAINERS.md"}},
		{"namespaces", "EPERM", root, []string{fixNamespaceRoot}},
		{"mount-namespace", "EPERM", rootless, []string{"needs a user namespace", "CLONE_NEWUSER", "CAP_SETFCAP", fixNamespaceRoot}},
		{"user-namespace", "EPERM", off, []string{"user namespaces are disabled by the sysctl kernel.unprivileged_userns_clone=0", "sysctl -w kernel.unprivileged_userns_clone=1"}},
		{"namespaces", "EPERM", off, []string{"kernel.unprivileged_userns_clone=0"}},
		{"user-namespace", "ENOSPC", offMax, []string{"disabled by the sysctl user.max_user_namespaces=0", "sysctl -w user.max_user_namespaces=15000"}},
		// Root needs no user namespace for the sandbox's own ones: the
		// sysctl is not the cause there, but it is for the user-namespace probe.
		{"mount-namespace", "EPERM", rootOff, []string{fixNamespaceRoot}},
		{"user-namespace", "EPERM", rootOff, []string{"kernel.unprivileged_userns_clone=0"}},
		{"pid-namespace", "ENOSPC", root, []string{"namespace limit is reached"}},
		{"network-namespace", "EINVAL", root, []string{"CONFIG_<kind>_NS"}},
		{"ipc-namespace", "ENOSYS", rootless, []string{"seccomp profile answers clone and unshare with ENOSYS"}},
		{"uts-namespace", "EAGAIN", root, []string{"--pids-limit"}},
		{"cgroup-memory", "cgroup-read-only", root, []string{"limits not enforced", "mount a writable cgroupfs", "--limits best-effort"}},
		{"cgroup-pids", "cgroup-not-writable", root, []string{"limits not enforced", "--limits best-effort"}},
		{"cgroup-pids", "rootless-not-delegated", rootless, []string{"cgroup v1 delegates nothing", "--limits best-effort"}},
		{"namespaces", "proc-masked", rootless, []string{"masked paths", "runs without namespaces here", "--security-opt unmask=/proc/* (podman)"}},
		{"namespaces", "hostname-refused", rootless, []string{"refuses sethostname", "runs without namespaces here", "seccomp=unconfined"}},
		{"trial-sandbox", "proc-masked", rootless, []string{"masked paths", "--security-opt unmask=/proc/* (podman)", "systemPaths: unmasked", "procMount: Unmasked"}},
		{"trial-sandbox", "EPERM", root, []string{fixNamespaceRoot, "apparmor=unconfined"}},
		{"trial-sandbox", "EPERM", rootless, []string{"unmask=ALL", "systempaths=unconfined"}},
		{"allow-list", "need-privilege", rootless, []string{"CAP_SYS_ADMIN", "--network deny"}},
		{"unprivileged-uid", "uid-0-in-userns-is-host-root", rootless, []string{"host uid 0", fixNamespaceRoot}},
		{"something-new", "EPERM", root, []string{fixFallback}},
		{"trial-sandbox", "", root, []string{fixFallback}},
	} {
		got := fixFor(c.mech, c.word, c.f)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("fixFor(%s, %s, %+v) = %q, want it to contain %q", c.mech, c.word, c.f, got, w)
			}
		}
		if strings.ContainsAny(got, "{}") {
			t.Errorf("fixFor(%s, %s): placeholder left: %q", c.mech, c.word, got)
		}
	}

	// Every word the probe makes has a row of its own, in every context.
	covered := func(mech, word string, f fixFacts) {
		t.Helper()
		if got := fixFor(mech, word, f); got == fixFallback || got == "" {
			t.Errorf("no fix for %s %s (rootless %v)", mech, word, f.rootless)
		}
	}
	for _, f := range []fixFacts{root, rootless, off, offMax, rootOff} {
		for _, ns := range []string{"user-namespace", "mount-namespace", "pid-namespace", "network-namespace", "ipc-namespace", "uts-namespace", "namespaces"} {
			for _, e := range []string{"EPERM", "ENOSPC", "EUSERS", "EINVAL", "ENOSYS", "EACCES", "EAGAIN", "ENOMEM"} {
				covered(ns, e, f)
			}
		}
		covered("namespaces", "proc-masked", f)      // the namespace trial's proc mount
		covered("namespaces", "hostname-refused", f) // and its sethostname
		for _, cg := range []string{"cgroup-memory", "cgroup-pids", "cgroup-cpu"} {
			// verifyCgroups's and cgroupAccess's reason words.
			for _, w := range []string{"cgroup-read-only", "cgroup-not-writable", "rootless-not-delegated", "no-controller", "no-cgroup", "init-not-in-cgroup", "limit-mismatch", "not-requested"} {
				covered(cg, w, f)
			}
		}
		for _, w := range []string{"proc-masked", "EPERM", "EACCES", "EROFS", "ENOSPC", "ENOENT"} {
			covered("trial-sandbox", w, f)
		}
		covered("unprivileged-uid", "uid-0-in-userns-is-host-root", f)
	}
	covered("allow-list", "need-privilege", rootless)

	for i, r := range probeFixes {
		if r.fix == "" || r.mech == "" || r.err == "" {
			t.Errorf("row %d incomplete: %+v", i, r)
		}
		switch r.ctx {
		case ctxAny, ctxRoot, ctxRootless, ctxUserNSOff:
		default:
			t.Errorf("row %d: unknown context %q", i, r.ctx)
		}
	}
	if last := probeFixes[len(probeFixes)-1]; last.mech != "*" || last.err != "*" || last.ctx != ctxAny {
		t.Errorf("the last row is not the fallback: %+v", last)
	}
}

func TestFixWord(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{unix.EPERM, "EPERM"},
		{stepErr("start init", "x", fmt.Errorf("%w: clone: %w", ErrNoNamespace, unix.ENOSPC)), "ENOSPC"},
		// libcontainer's init reports as text.
		{stepErr("start init", "x", fmt.Errorf(`error mounting "sysfs" to rootfs at "/sys": operation not permitted`)), "EPERM"},
		{stepErr("start init", "x", fmt.Errorf("open /x: read-only file system")), "EROFS"},
		{stepErr("start init", "x", &ProcMaskedError{Masked: []string{"/proc/kcore"}, Err: fmt.Errorf("operation not permitted")}), "proc-masked"},
		{stepErr("network policy", "allow-list", fmt.Errorf("setns: %w", netpolicy.ErrNeedPrivilege)), "need-privilege"},
		{fmt.Errorf("trial subject exited 1"), ""},
	} {
		if got := fixWord(c.err); got != c.want {
			t.Errorf("fixWord(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if got := detail(stepErr("start init", "id", unix.ENOENT)); got != "ENOENT at start init" {
		t.Errorf("detail: %q", got)
	}
	if got := detail(stepErr("start init", "id", &ProcMaskedError{Masked: []string{"/proc/kcore"}, Err: unix.EPERM})); got != "proc-masked at start init" {
		t.Errorf("detail: %q", got)
	}
}
