package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/supervisor"
)

func TestProbe(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	out, errOut, status := run(t, exec.Command(bin, "probe", "--json", "--state-dir", state))
	if status != 0 {
		t.Fatalf("probe: %d %s", status, errOut)
	}
	var res supervisor.ProbeReport
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var order []receipts.Constraint
	for _, c := range res.Constraints {
		order = append(order, c.Constraint)
		want := receipts.Delivered
		if c.Constraint == receipts.Filesystem || c.Constraint == receipts.Network {
			want = receipts.OS
		}
		if c.Tier != want {
			t.Errorf("%s: %s (%s), want %s", c.Constraint, c.Tier, c.Reason, want)
		}
	}
	if got, want := len(order), len(receipts.Constraints()); got != want {
		t.Fatalf("%d constraints, want %d", got, want)
	}
	for i, c := range receipts.Constraints() {
		if order[i] != c {
			t.Errorf("constraint %d is %s, want %s", i, order[i], c)
		}
	}
	if res.AllowList.Tier != receipts.OS {
		t.Errorf("allow-list as root: %+v", res.AllowList)
	}
	text, _, _ := run(t, exec.Command(bin, "probe", "--state-dir", state))
	if !strings.Contains(text, "network: os (new network namespace: ok)") {
		t.Errorf("text probe:\n%s", text)
	}
	// As root here everything works: no "no" line, no fix.
	if strings.Contains(text, "fix:") || strings.Contains(text, " no ") || strings.Contains(out, `"fix"`) {
		t.Errorf("a fix where everything works:\n%s\n%s", text, out)
	}
}

// TestProbeText: a line that works reads as before; a "no" line and a
// constraint short of os carry their fix on the same line, escaped.
func TestProbeText(t *testing.T) {
	res := supervisor.ProbeReport{
		Rootless: true, RootlessReason: "root without CAP_NET_ADMIN",
		Constraints: []supervisor.ConstraintProbe{
			{Constraint: receipts.Seed, Tier: receipts.Delivered, Reason: "spawn-env"},
			{Constraint: receipts.Filesystem, Tier: receipts.Delivered, Reason: "mount namespace + pivot_root: mount-namespace EPERM", Fix: "run the container with --privileged"},
			{Constraint: receipts.Network, Tier: receipts.OS, Reason: "new network namespace: ok"},
		},
		AllowList:   supervisor.ConstraintProbe{Constraint: receipts.Network, Tier: receipts.None, Reason: "forwarder: EPERM", Fix: "use --network deny"},
		PTYTerminal: supervisor.ConstraintProbe{Constraint: receipts.Terminal, Tier: receipts.None, Reason: "run --pty needs the os sandbox: EPERM", Fix: "run the container with --privileged"},
		Mechanisms: []sandbox.MechanismProbe{
			{Name: "mount-namespace", OK: false, Detail: "EPERM", Fix: "run the container with --privileged\x1b[2J"},
			{Name: "pid-namespace", OK: true, Detail: "ok"},
			{Name: "cgroup-pids", OK: false, Detail: "rootless-not-delegated"},
		},
	}
	want := `seed: delivered (spawn-env)
filesystem: delivered (mount namespace + pivot_root: mount-namespace EPERM; fix: run the container with --privileged)
network: os (new network namespace: ok)
network allow-list: unsupported (forwarder: EPERM; fix: use --network deny)
terminal with --pty: unsupported (run --pty needs the os sandbox: EPERM; fix: run the container with --privileged)
mechanisms (rootless: root without CAP_NET_ADMIN):
  mount-namespace        no  EPERM; fix: run the container with --privileged` + termsafe.String("\x1b[2J") + `
  pid-namespace          ok  ok
  cgroup-pids            no  rootless-not-delegated
`
	if got := probeText(res); got != want {
		t.Errorf("probeText:\n%s\nwant:\n%s", got, want)
	}
}
