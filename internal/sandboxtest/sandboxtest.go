package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireRoot skips the test unless it runs as root, naming the uid.
func RequireRoot(t testing.TB) {
	t.Helper()
	if uid := os.Geteuid(); uid != 0 {
		t.Skipf("needs root: running as uid %d", uid)
	}
}

// CanUnshare reports whether a child can be cloned into new namespaces of
// the given kinds (CLONE_NEW* flags), and the errno when not.
func CanUnshare(flags uintptr) error {
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.SysProcAttr = &unix.SysProcAttr{Cloneflags: flags}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("clone %#x: %w", flags, err)
	}
	return nil
}

// BuildEscape compiles the escape helper statically into dir and returns
// its path.
func BuildEscape(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "escape")
	cmd := exec.Command("go", "build", "-o", out, "github.com/termverify/termverify-sandbox/internal/sandboxtest/escape")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build escape helper: %v\n%s", err, b)
	}
	return out
}

// CheckNoLeaks registers a cleanup that fails the test if anything of
// ours survives it: an entry in stateDir (and the cgroups of its id), a
// mount naming stateDir, or a process whose command line contains marker
// (when not empty). Sandboxes destroyed cleanly leave no entry; check
// their cgroups by id with CheckNoCgroups.
func CheckNoLeaks(t testing.TB, stateDir, marker string) {
	t.Helper()
	t.Cleanup(func() {
		for _, leak := range Leaks(stateDir, marker) {
			t.Errorf("leak: %s", leak)
		}
	})
}

// CheckNoCgroups registers a cleanup that fails the test if a cgroup of
// sandbox id is left in any hierarchy.
func CheckNoCgroups(t testing.TB, id string) {
	t.Helper()
	t.Cleanup(func() {
		for _, leak := range CgroupsOf(id) {
			t.Errorf("leak: cgroup %s", leak)
		}
	})
}

// Leaks lists what of ours is still on the host; see CheckNoLeaks.
func Leaks(stateDir, marker string) []string {
	var leaks []string
	if ents, err := os.ReadDir(stateDir); err == nil {
		for _, e := range ents {
			leaks = append(leaks, "state entry "+filepath.Join(stateDir, e.Name()))
			for _, cg := range CgroupsOf(e.Name()) {
				leaks = append(leaks, "cgroup "+cg)
			}
		}
	}
	if b, err := readOwnMountinfo(); err == nil && stateDir != "" {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, stateDir) {
				leaks = append(leaks, "mount "+line)
			}
		}
	}
	if marker != "" {
		for _, pid := range PidsMatching(marker) {
			leaks = append(leaks, fmt.Sprintf("process %d (%s)", pid, marker))
		}
	}
	return leaks
}

// CgroupsOf lists the cgroup directories of sandbox id (named id, under a
// termverify-sandbox parent) in every hierarchy.
func CgroupsOf(id string) []string {
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() == id && filepath.Base(filepath.Dir(p)) == "termverify-sandbox" {
			found = append(found, p)
			return filepath.SkipDir
		}
		return nil
	})
	return found
}

// SleepMarker is a sleep duration in seconds that names one test's
// processes for PidsMatching: unique to the call site (site) and to this
// test process (its pid), since other packages' tests (and other runs of
// these) use sleeps too, and a shared marker once made a test see another
// package's sleeps as its own subject and kill its supervisor too early.
func SleepMarker(site int) string { return fmt.Sprintf("%d.%d", 100+site, os.Getpid()) }

// PidsMatching lists host processes whose command line contains s.
func PidsMatching(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readOwnMountinfo reads the mount table of this thread's namespace on a
// locked thread: /proc/self names the main thread, which libcontainer may
// have left inside a container's mount namespace.
func readOwnMountinfo() ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return os.ReadFile("/proc/thread-self/mountinfo")
}
