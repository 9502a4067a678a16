package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/receipts"
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
}
