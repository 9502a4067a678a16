package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// liveBox starts spec with its stdout on a pipe and waits for the
// subject's first line ("ready"): the sandbox runs until the test ends.
func liveBox(t *testing.T, spec Spec) *Sandbox {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	spec.Stdout = outW
	sb, err := Start(context.Background(), spec)
	outW.Close()
	if err != nil {
		outR.Close()
		t.Fatalf("start %v: %v", spec.Args, err)
	}
	t.Cleanup(func() {
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
		outR.Close()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(outR).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case l := <-line:
		if l != "ready" {
			t.Fatalf("subject of %s said %q, want ready", sb.ID(), l)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("subject of %s never got ready", sb.ID())
	}
	return sb
}

// subjectHostPID is the host pid of the only child of a sandbox's
// reaper: the subject.
func subjectHostPID(t *testing.T, sb *Sandbox) int {
	t.Helper()
	init := sb.Evidence().InitPID
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", init, init))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("reaper %d has children %q, want exactly the subject", init, f)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// hostUID is the real uid of pid as the host sees it.
func hostUID(t *testing.T, pid int) int {
	t.Helper()
	st, err := procStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(st["Uid"])
	if len(f) != 4 {
		t.Fatalf("pid %d: Uid %q", pid, st["Uid"])
	}
	uid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

// holdScript makes the subject leave a private file in its working
// directory, say ready, and stay.
const holdScript = `echo secret > mine && chmod 600 mine && echo ready && exec sleep 60`

// TestUIDPerSandboxAttack is the shared-uid attack, as root without a
// user namespace: subjects are dumpable, so two of the same host uid
// (65534 for every sandbox, say, and any host "nobody" daemon) pass the
// kernel's same-uid check for /proc/<pid>/root: an isolation-none subject
// could read and write an os sandbox's /sandbox through
// /proc/<subject>/root/sandbox and SIGKILL its PID-1 reaper. Every
// sandbox has a uid of its own, so neither works.
func TestUIDPerSandboxAttack(t *testing.T) {
	fa := newFixture(t)    // the victim, isolation os
	fb := directFixture(t) // the attacker, isolation none
	fb.withEscape(t)

	// Started concurrently, as two supervisors would.
	var a, b *Sandbox
	var wg sync.WaitGroup
	wg.Go(func() { a = liveBox(t, fa.isoSpec(IsolationOS, "/bin/sh", "-c", holdScript)) })
	wg.Go(func() { b = liveBox(t, fb.isoSpec(IsolationNone, "/bin/sh", "-c", holdScript)) })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	aPID, bPID := subjectHostPID(t, a), subjectHostPID(t, b)
	aUID, bUID := hostUID(t, aPID), hostUID(t, bPID)
	t.Logf("os subject: host pid %d uid %d (evidence %d); none subject: host pid %d uid %d (evidence %d)",
		aPID, aUID, a.Evidence().UID, bPID, bUID, b.Evidence().UID)
	if aUID == bUID {
		t.Errorf("both subjects run as host uid %d", aUID)
	}
	for _, u := range []int{aUID, bUID} {
		if u == 0 || u == 65534 {
			t.Errorf("a subject runs as host uid %d", u)
		}
	}
	if aUID != a.Evidence().UID || bUID != b.Evidence().UID {
		t.Errorf("evidence uids %d %d, host uids %d %d", a.Evidence().UID, b.Evidence().UID, aUID, bUID)
	}

	victim := fmt.Sprintf("/proc/%d/root%s", aPID, Workdir)
	// A host daemon running as nobody (65534) is no closer.
	cmd := exec.Command(filepath.Join(fb.root, "escape"), "read", victim+"/mine")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if got, _ := cmd.Output(); strings.TrimSpace(string(got)) != "ERR EACCES" {
		t.Errorf("host uid 65534 reading %s/mine: %q, want ERR EACCES", victim, got)
	}
	script := strings.Join([]string{
		"./escape read " + victim + "/mine",
		"./escape write " + victim + "/planted",
		"./escape read " + filepath.Join(fmt.Sprintf("/proc/%d/cwd", aPID), "mine"),
		fmt.Sprintf("./escape kill %d", a.Evidence().InitPID),
	}, "; ")
	ex, out, stderr, _ := runBox(t, fb.isoSpec(IsolationNone, "/bin/sh", "-c", script), 20*time.Second)
	want := "ERR EACCES\nERR EACCES\nERR EACCES\nERR EPERM"
	if out != want {
		t.Errorf("isolation-none attacker against the os sandbox:\n%s\n(exit %+v, stderr %q), want\n%s", out, ex, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(fa.root, "planted")); err == nil {
		t.Errorf("the attacker wrote into the os sandbox's /sandbox")
	}

	// A SIGKILLed PID 1 takes a moment to die: it first kills and waits
	// for its namespace. Watch the reapers for a while.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, sb := range []*Sandbox{a, b} {
			pid := sb.Evidence().InitPID
			if st, _, err := procStat(pid); err != nil || st == "Z" || st == "X" {
				t.Fatalf("sandbox %s: its reaper %d died of the attack (state %q %v)", sb.ID(), pid, st, err)
			}
		}
	}
}

// TestUIDPerSandboxOS: two os sandboxes started at once run as different
// host uids, neither 65534, each the one its evidence records.
func TestUIDPerSandboxOS(t *testing.T) {
	f1, f2 := newFixture(t), newFixture(t)
	var a, b *Sandbox
	var wg sync.WaitGroup
	wg.Go(func() { a = liveBox(t, f1.spec("/bin/sh", "-c", holdScript)) })
	wg.Go(func() { b = liveBox(t, f2.spec("/bin/sh", "-c", holdScript)) })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	aUID, bUID := hostUID(t, subjectHostPID(t, a)), hostUID(t, subjectHostPID(t, b))
	t.Logf("host uids %d and %d", aUID, bUID)
	if aUID == bUID || aUID == 65534 || bUID == 65534 {
		t.Errorf("host uids %d and %d: want two different ids, neither 65534", aUID, bUID)
	}
	if aUID != a.Evidence().UID || bUID != b.Evidence().UID {
		t.Errorf("evidence uids %d %d, host uids %d %d", a.Evidence().UID, b.Evidence().UID, aUID, bUID)
	}
	// The private file each subject made belongs to its own uid.
	for _, c := range []struct {
		f   *fixture
		uid int
	}{{f1, aUID}, {f2, bUID}} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(c.f.root, "mine"), &st); err != nil || int(st.Uid) != c.uid {
			t.Errorf("%s/mine: owner %d (%v), want %d", c.f.root, st.Uid, err, c.uid)
		}
	}
}

// TestUIDPerSandboxScratch: an isolation-none subject's scratch workdir
// is its uid's, 0700, on a host path others can traverse to; another
// none subject must not enter it (with one shared uid it could).
func TestUIDPerSandboxScratch(t *testing.T) {
	f := directFixture(t)
	f.withEscape(t)
	spec := f.isoSpec(IsolationNone, "/bin/sh", "-c", holdScript)
	spec.Root, spec.ScratchRoot = "", true
	victim := liveBox(t, spec)
	work := victim.Evidence().HostRoot
	script := "./escape read " + work + "/mine; ./escape write " + work + "/planted"
	ex, out, stderr, _ := runBox(t, f.isoSpec(IsolationNone, "/bin/sh", "-c", script), 20*time.Second)
	if want := "ERR EACCES\nERR EACCES"; out != want {
		t.Errorf("another none subject in %s:\n%s\n(exit %+v, stderr %q), want\n%s", work, out, ex, stderr, want)
	}
}

// TestSandboxIDRange: the per-sandbox range holds no account a
// distribution hands out, stays below 2^31 and does not overlap the host
// ids of a root supervisor's user-namespace mapping.
func TestSandboxIDRange(t *testing.T) {
	lo, hi := sandboxIDBase, sandboxIDBase+sandboxIDCount-1
	if lo <= 65535 || hi >= 1<<31 {
		t.Errorf("range %d..%d", lo, hi)
	}
	if nsLo, nsHi := userNSBase, userNSBase+65535; lo <= nsHi && nsLo <= hi {
		t.Errorf("range %d..%d overlaps the user-namespace mapping %d..%d", lo, hi, nsLo, nsHi)
	}
	for _, id := range []int{0, 65534, lo - 1, hi + 1, userNSBase + 65534} {
		if inSandboxIDRange(id) {
			t.Errorf("%d counted as a per-sandbox id", id)
		}
	}
	// A caller's explicit id there could be a live sandbox's: refused.
	for _, s := range []Spec{{UID: lo}, {GID: hi}, {UID: 1000, GID: lo + 7}} {
		s.Args, s.Root = []string{"true"}, t.TempDir()
		if err := s.Validate(); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("uid %d gid %d: %v, want ErrInvalidSpec", s.UID, s.GID, err)
		}
	}
}

// TestClaimIDExclusive: among claimers sharing a state directory no two
// live claims hold one id; a full range is an error; a released id can be
// claimed again; the claims directory goes with the last claim.
func TestClaimIDExclusive(t *testing.T) {
	state := t.TempDir()
	const base, count = 1000, 8
	var mu sync.Mutex
	held := map[int]string{}
	var claims []*idClaim
	var wg sync.WaitGroup
	for i := range count {
		wg.Go(func() {
			entry := fmt.Sprintf("tvs-%02d", i)
			c, err := claimIDIn(state, entry, base, count, randomIndex)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if other, ok := held[c.id]; ok {
				t.Errorf("id %d claimed by %s and %s", c.id, other, entry)
			}
			held[c.id] = entry
			claims = append(claims, c)
		})
	}
	wg.Wait()
	if len(held) != count {
		t.Fatalf("%d ids held, want %d", len(held), count)
	}
	for id, entry := range held {
		if got, err := os.Readlink(filepath.Join(state, uidsDir, strconv.Itoa(id))); err != nil || got != entry {
			t.Errorf("claim %d: %q %v, want %s", id, got, err, entry)
		}
	}
	if c, err := claimIDIn(state, "tvs-extra", base, count, randomIndex); err == nil {
		t.Errorf("a full range gave id %d", c.id)
	}
	if err := claims[3].release(); err != nil {
		t.Fatal(err)
	}
	c, err := claimIDIn(state, "tvs-again", base, count, randomIndex)
	if err != nil || c.id != claims[3].id {
		t.Errorf("after a release: %+v %v, want id %d", c, err, claims[3].id)
	}
	claims[3] = c
	// A stale claim object (its id since claimed by another) removes nothing.
	if err := (&idClaim{stateDir: state, id: c.id, entry: held[c.id]}).release(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(filepath.Join(state, uidsDir, strconv.Itoa(c.id))); got != "tvs-again" {
		t.Errorf("a stale release removed the new claim: %q", got)
	}
	for _, c := range claims {
		if err := c.release(); err != nil {
			t.Error(err)
		}
	}
	if ents, err := os.ReadDir(state); err != nil || len(ents) != 0 {
		t.Errorf("state dir after the last release: %v %v", ents, err)
	}
}

// TestClaimIDWithSweeps: claimers that make and remove their entries
// around their claims, as Start and Destroy do — half of them "crash",
// leaving a claim whose entry is gone for the sweep — while sweeps run:
// a sweep never frees a live claim (it decides and removes under the
// exclusive lock), so no id is ever held twice.
func TestClaimIDWithSweeps(t *testing.T) {
	state := t.TempDir()
	const base, count, workers, rounds = 2000, 8, 4, 150
	var mu sync.Mutex
	held := map[int]string{}
	stop := make(chan struct{})
	var sweeps sync.WaitGroup
	for range 2 {
		sweeps.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := sweepClaims(state); err != nil {
					t.Error(err)
				}
			}
		})
	}
	claim := func(entry string) (*idClaim, error) {
		for {
			c, err := claimIDIn(state, entry, base, count, randomIndex)
			if err == nil || !strings.Contains(err.Error(), "no free id") {
				return c, err
			}
			time.Sleep(time.Millisecond) // crashed claims not swept yet
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				entry := fmt.Sprintf("tvs-%d-%d", w, r)
				dir := filepath.Join(state, entry)
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Error(err)
					return
				}
				c, err := claim(entry)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if other, ok := held[c.id]; ok {
					t.Errorf("id %d held by %s and %s", c.id, other, entry)
				}
				held[c.id] = entry
				mu.Unlock()
				if got, err := os.Readlink(filepath.Join(state, uidsDir, strconv.Itoa(c.id))); err != nil || got != entry {
					t.Errorf("%s's claim %d: %q %v (swept while live?)", entry, c.id, got, err)
				}
				mu.Lock()
				delete(held, c.id)
				mu.Unlock()
				crash := r%2 == 1
				if !crash {
					if err := c.release(); err != nil {
						t.Error(err)
					}
				}
				if err := os.Remove(dir); err != nil {
					t.Error(err)
				}
				if crash && r%4 == 1 {
					// The dead supervisor's claim, removed by its
					// Destroy racing a sweep.
					if err := c.release(); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeps.Wait()
	if err := sweepClaims(state); err != nil {
		t.Error(err)
	}
	if ents, err := os.ReadDir(state); err != nil || len(ents) != 0 {
		t.Errorf("state dir at the end: %v %v", ents, err)
	}
}

// TestClaimsSwept: after a crash the claims of entries that no longer
// exist are removed by Sweep (a dead supervisor's entry first, then its
// claim); a live entry's claim stays; a claim that names no entry, or
// not an entry name, goes.
func TestClaimsSwept(t *testing.T) {
	state := t.TempDir()
	mkEntry := func(name, owner string) {
		dir := filepath.Join(state, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	mkEntry("tvs-live", fmt.Sprintf("%d %d\n", os.Getpid(), self))
	mkEntry("tvs-dead", fmt.Sprintf("%d %d\n", os.Getpid(), self+1)) // our pid, another start: dead
	claims := filepath.Join(state, uidsDir)
	if err := os.Mkdir(claims, 0o700); err != nil {
		t.Fatal(err)
	}
	plant := map[int]string{
		sandboxIDBase + 1: "tvs-live",
		sandboxIDBase + 2: "tvs-dead",
		sandboxIDBase + 3: "tvs-0123456789abcdef", // its entry is gone: the crash case
		sandboxIDBase + 4: "../../etc",            // not an entry name
	}
	for id, target := range plant {
		if err := os.Symlink(target, filepath.Join(claims, strconv.Itoa(id))); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Sweep(state)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Removed, []string{"tvs-dead"}) {
		t.Errorf("report %+v", rep)
	}
	names, err := os.ReadDir(claims)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != strconv.Itoa(sandboxIDBase+1) {
		t.Errorf("claims after the sweep: %v, want only the live entry's", names)
	}
	// The swept ids are free again.
	for _, id := range []int{sandboxIDBase + 2, sandboxIDBase + 3} {
		c, err := claimIDIn(state, "tvs-new", sandboxIDBase, sandboxIDCount, func(int) (int, error) { return id - sandboxIDBase, nil })
		if err != nil || c.id != id {
			t.Errorf("claim of swept id %d: %+v %v", id, c, err)
			continue
		}
		if err := c.release(); err != nil {
			t.Error(err)
		}
	}
	// Once the live entry is gone too, the sweep leaves nothing.
	if err := os.RemoveAll(filepath.Join(state, "tvs-live")); err != nil {
		t.Fatal(err)
	}
	if _, err := Sweep(state); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(state); err != nil || len(ents) != 0 {
		t.Errorf("state dir: %v %v", ents, err)
	}
}

// TestIDClaimLifecycle: a real sandbox's claim names its entry while it
// lives and is gone after Destroy, in both isolations; the mechanism's
// reason is a fixed word (Applied feeds receipts: nothing there may vary
// with the draw), the number is in the evidence; an explicit Spec.UID is
// used as given, with no claim.
func TestIDClaimLifecycle(t *testing.T) {
	f := directFixture(t)
	for _, iso := range bothIsolations {
		t.Run(string(iso), func(t *testing.T) {
			// A scratch root: a fresh directory, so a claimed random id
			// (a mapped root's id is derived from it: TestIDPerRoot).
			spec := f.isoSpec(iso, "/bin/sh", "-c", "echo ready; exec sleep 60")
			spec.Root, spec.ScratchRoot = "", true
			sb := liveBox(t, spec)
			ev := sb.Evidence()
			if !inSandboxIDRange(ev.UID) || ev.GID != ev.UID {
				t.Errorf("evidence uid %d gid %d", ev.UID, ev.GID)
			}
			claim := filepath.Join(f.stateDir, uidsDir, strconv.Itoa(ev.UID))
			if got, err := os.Readlink(claim); err != nil || got != sb.ID() {
				t.Errorf("claim %s: %q %v, want %s", claim, got, err, sb.ID())
			}
			if m, _ := sb.Applied().Mechanism("unprivileged-uid"); !m.Applied || m.Reason != "uid-per-sandbox" {
				t.Errorf("unprivileged-uid %+v", m)
			}
			if err := sb.Destroy(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(claim); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("claim after Destroy: %v", err)
			}
		})
		t.Run(string(iso)+"/explicit", func(t *testing.T) {
			spec := f.isoSpec(iso, "/bin/sh", "-c", "id -u; id -g")
			spec.UID, spec.GID = 54321, 54320
			ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
			if ex.Code != 0 || out != "54321\n54320" {
				t.Errorf("exit %+v out %q stderr %q", ex, out, stderr)
			}
			if m, _ := sb.Applied().Mechanism("unprivileged-uid"); m.Reason != "uid-54321" {
				t.Errorf("unprivileged-uid %+v", m)
			}
			if ev := sb.Evidence(); ev.UID != 54321 || ev.GID != 54320 {
				t.Errorf("evidence uid %d gid %d", ev.UID, ev.GID)
			}
		})
	}
}

// TestIDPerRoot: sandboxes of one isolation that map the same directory
// share its id (so that a later run can change what an earlier one
// created there, as a project tree mapped again and again needs); an os
// and a none sandbox on that directory do not (TestSameRootNoneCannotReachOS),
// nor do sandboxes on different directories; no such id is ever 65534 or
// a claimed random id.
func TestIDPerRoot(t *testing.T) {
	for _, iso := range bothIsolations {
		t.Run(string(iso), func(t *testing.T) {
			f := directFixture(t)
			write := "mkdir -p out && echo $(id -u) > out/f && id -u"
			var uids []string
			for i := range 2 {
				ex, out, stderr, sb := runBox(t, f.isoSpec(iso, "/bin/sh", "-c", write), 20*time.Second)
				if ex.ShellStatus() != 0 {
					t.Fatalf("run %d: exit %+v stderr %q: a later run could not rewrite what an earlier one made", i, ex, stderr)
				}
				if m, _ := sb.Applied().Mechanism("unprivileged-uid"); m.Reason != "uid-per-root" {
					t.Errorf("run %d: unprivileged-uid %+v", i, m)
				}
				uids = append(uids, out)
			}
			if uids[0] != uids[1] {
				t.Errorf("runs on one root got uids %v, want one", uids)
			}
			n, _ := strconv.Atoi(uids[0])
			if base, count := reservedWindow().rootPart(iso); n < base || n >= base+count {
				t.Errorf("per-root uid %d is not in %s's part %d+%d of the range", n, iso, base, count)
			}
			other := IsolationNone
			if iso == IsolationNone {
				other = IsolationOS
			}
			if _, out, _, _ := runBox(t, f.isoSpec(other, "/bin/sh", "-c", "id -u"), 20*time.Second); out == uids[0] {
				t.Errorf("%s and %s on one root share uid %s", iso, other, out)
			}
			if _, out, _, _ := runBox(t, directFixture(t).isoSpec(iso, "/bin/sh", "-c", "id -u"), 20*time.Second); out == uids[0] {
				t.Errorf("two roots share uid %s", out)
			}
		})
	}
}

// TestIDWindowFor: the reserved range wherever the user namespace maps
// it, else the largest range mapped for both uids and gids, without the
// system ids, nobody and the overflow id; a namespace that maps no such
// range has no window.
func TestIDWindowFor(t *testing.T) {
	const initial = "0 0 4294967295"
	cases := []struct {
		name, uids, gids string
		want             idWindow
		err              error
	}{
		{"initial namespace", initial, initial, reservedWindow(), nil},
		{"reserved range mapped", "0 0 1\n1879048192 1879048192 16777216", "0 0 4294967295", reservedWindow(), nil},
		{"rootless podman", "0 1000 1\n1 100000 65536", "0 1000 1\n1 100000 65536", idWindow{1000, 64534}, nil},
		{"gids narrower", "0 1000 1\n1 100000 65536", "0 1000 1\n1 100000 5000", idWindow{1000, 4001}, nil},
		{"above the overflow id", "0 0 1\n1 100000 65536\n100000 200000 100000", "0 0 1\n100000 200000 100000", idWindow{100000, 100000}, nil},
		{"single id", "0 1000 1", "0 1000 1", idWindow{}, ErrNoIDRange},
		{"only above 2^31", "0 0 1\n4294967293 5 2", "0 0 1\n4294967293 5 2", idWindow{}, ErrNoIDRange},
		{"straddling 2^31", "0 0 1\n2147483000 5000 10000", "0 0 1\n2147483000 5000 10000", idWindow{2147483000, 648}, nil},
		{"only system ids", "0 0 1000", "0 0 1000", idWindow{}, ErrNoIDRange},
		{"malformed", "0 1000", initial, idWindow{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := idWindowFor(c.uids, c.gids)
			if c.name == "malformed" {
				if err == nil {
					t.Fatalf("window %+v, want an error", w)
				}
				return
			}
			if !errors.Is(err, c.err) || w != c.want {
				t.Fatalf("window %+v (%v), want %+v (%v)", w, err, c.want, c.err)
			}
			if err == nil {
				rb, rc := w.rootHalf()
				cb, cc := w.claimHalf()
				if rb != w.base || rb+rc != cb || cb+cc != w.base+w.count || rc < 1 || cc < 1 {
					t.Errorf("halves %d+%d, %d+%d of %+v", rb, rc, cb, cc, w)
				}
			}
		})
	}
}
