package sandbox

import (
	"maps"
	"testing"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
)

// TestCgroupPathsAsManager: sandboxCgroupPaths, which reads
// /proc/self/cgroup once, must give exactly the paths libcontainer's
// manager.New computes (reading it once per subsystem): the cgroup is
// made, joined and removed there. A libcontainer upgrade that changes
// its subsystems or path rules fails here.
func TestCgroupPathsAsManager(t *testing.T) {
	const id = "tvs-0123456789abcdef"
	m, err := manager.New(&cgroups.Cgroup{Path: cgroupParent + "/" + id, Resources: &cgroups.Resources{SkipDevices: true}})
	if err != nil {
		t.Skipf("no cgroup manager here: %v", err)
	}
	got, err := sandboxCgroupPaths(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d paths: %v", len(got), got)
	if want := m.GetPaths(); !maps.Equal(got, want) {
		t.Errorf("paths\n%v\nwant (manager.New)\n%v", got, want)
	}
}
