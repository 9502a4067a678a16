package sandbox

import (
	"bufio"
	"slices"
	"testing"

	"github.com/termverify/termverify-sandbox/quiesce"
)

// TestProcesses: the cgroup's listing is the sandbox's processes, the
// same set as a scan of the host's processes for its PID namespace,
// daemons that left the subject's session included; after Destroy it
// lists nothing.
func TestProcesses(t *testing.T) {
	f := newFixture(t)
	sb, in, out := startPiped(t, f.spec("/bin/sh", "-c", "setsid sleep 30 & sleep 30 & echo ready; read x"))
	defer in.Close()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("subject said %q, %v", line, err)
	}
	got, ok, err := sb.Processes()
	if !ok || err != nil {
		t.Fatalf("Processes: ok %v, %v; want the cgroup's listing", ok, err)
	}
	want, err := quiesce.TasksInPIDNamespace(sb.Evidence().Namespaces["pid"])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	// The reaper, sh and two sleeps at least.
	if len(got) < 4 || !slices.Equal(got, want) {
		t.Errorf("cgroup lists %v, the PID namespace holds %v", got, want)
	}
	if err := sb.Destroy(); err != nil {
		t.Fatal(err)
	}
	if pids, _, err := sb.Processes(); err == nil {
		t.Errorf("after Destroy: %v, want an error", pids)
	}
}
