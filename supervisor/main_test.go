package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// env is what the whole test binary shares: the example subjects built
// once into a root every case maps read-write (none of them writes), and a
// state directory of its own so leftovers are visible.
var env struct {
	root, stateDir string
	buildErr       error
	mu             sync.Mutex
	sandboxes      []string
}

// TestMain makes the test binary a sandbox binary too, as runc's
// integration/init_test.go does: libcontainer re-executes it with argv[1]
// == "init" (its PID-1 reaper mode is C, run before the Go runtime). A mode,
// the supervisor child, lets the signal tests SIGTERM and SIGKILL a real
// supervisor process.
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == sandbox.InitArg {
		sandbox.LibcontainerInit()
	}
	if os.Getenv(childEnv) != "" {
		os.Exit(supervisorChild())
	}
	if os.Getenv(pingEnv) != "" {
		os.Exit(pingChild())
	}
	// libcontainer leaves a locked thread in each container's mount
	// namespace; keep the main goroutine's thread out of that.
	runtime.LockOSThread()
	if fuzzWorker() {
		// go test -fuzz runs the fuzz target in worker processes of this
		// binary and kills them when the fuzz time is up, so a worker
		// never reaches the RemoveAll below: the directory and subjects
		// made here were left in the temporary directory (one was, by
		// make test's short fuzz run). FuzzRecordBound needs none of it.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "supervisor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Isolation none runs the subject as 65534 on the host: it must be
	// able to traverse to the mapped root (which buildSubjects leaves
	// readable), not list or write the test's directory.
	if err := os.Chmod(dir, 0o711); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	env.root, env.stateDir = filepath.Join(dir, "root"), filepath.Join(dir, "state")
	env.buildErr = buildSubjects(env.root)
	base := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		code = checkGoroutines(base)
	}
	if code == 0 && os.Geteuid() == 0 {
		if leaks := ourLeaks(); len(leaks) > 0 {
			fmt.Fprintf(os.Stderr, "leftovers after the tests:\n  %s\n", strings.Join(leaks, "\n  "))
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// ourLeaks is what the tests left on the host (see leaks): the ids are
// those of every sandbox a test run started (Result.Sandboxes).
func ourLeaks() []string {
	env.mu.Lock()
	ids := slices.Clone(env.sandboxes)
	env.mu.Unlock()
	return leaks(env.stateDir, leakMarker, ids)
}

// leaks is sandboxtest.Leaks (entries of stateDir and their cgroups,
// mounts naming stateDir, processes carrying marker) plus the cgroups of
// the sandboxes ids, which Leaks cannot find once a sandbox's state entry
// is gone: a Destroy that removes its state but not its cgroups. Only
// these ids are looked up: other supervisors (other packages' tests) may
// run on the host at the same time, and their live cgroups are not ours.
func leaks(stateDir, marker string, ids []string) []string {
	out := sandboxtest.Leaks(stateDir, marker)
	for _, cg := range cgroupsOf(ids) {
		if l := "cgroup " + cg; !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// cgroupsOf lists the cgroup directories of the sandboxes ids (named by
// id, under a termverify-sandbox parent) in every hierarchy, in one walk.
func cgroupsOf(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if filepath.Base(filepath.Dir(p)) == cgroupParent && slices.Contains(ids, d.Name()) {
			found = append(found, p)
			return filepath.SkipDir
		}
		return nil
	})
	return found
}

// cgroupParent is the sandbox package's parent cgroup in every hierarchy.
const cgroupParent = "termverify-sandbox"

// noteSandboxes remembers the ids a run started, for ourLeaks.
func noteSandboxes(ids []string) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.sandboxes = append(env.sandboxes, ids...)
}

// leakMarker is an extra argument every test subject gets (the subjects
// ignore it), so a surviving process is findable by its command line. It
// names this test process: another run of these tests on the host at the
// same time has live subjects of its own, which are not our leftovers.
var leakMarker = "tv-supervisor-test-subject-" + strconv.Itoa(os.Getpid())

// checkGoroutines is the leak check: once every run has returned, no
// goroutine of ours may be left (a few runtime ones come and go).
func checkGoroutines(base int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base+1 {
			return 0
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines, %d at start\n%s\n", n, base, buf)
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func buildSubjects(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"echo-subject", "probe-subject"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(root, name), "../examples/"+name)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
	}
	py, err := os.ReadFile("../examples/upstream-subject/subject.py")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "subject.py"), py, 0o755)
}

// needSandbox skips a test that needs root and the example subjects.
func needSandbox(t *testing.T) {
	t.Helper()
	sandboxtest.RequireRoot(t)
	if env.buildErr != nil {
		t.Fatalf("example subjects: %v", env.buildErr)
	}
}

// exampleRequest is the bundled example (examples/request.json) with short
// deadlines, mapped to the shared root, subject echo-subject with args.
func exampleRequest(t *testing.T, args ...string) Request {
	t.Helper()
	rf, err := ReadRunFile("../examples/request.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../examples/inputs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inputs, err := ParseInputs(f, ModeControl)
	if err != nil {
		t.Fatal(err)
	}
	return Request{
		RunID: rf.RunID, Config: rf.Config, Subject: rf.Subject, Inputs: inputs,
		Args:      append([]string{"./echo-subject"}, withMarker(args)...),
		Roots:     map[string]string{"app": env.root},
		Isolation: receipts.IsolationAuto,
		Limits:    sandbox.Limits{MemoryBytes: 256 << 20, Pids: 128},
		StateDir:  env.stateDir,
		Deadlines: Deadlines{Handshake: 2 * time.Second, Epoch: 2 * time.Second, Run: 60 * time.Second},
		Logf:      t.Logf,
	}
}

// withMarker adds leakMarker to a misbehaviour mode's arguments where
// echo-subject ignores it: not as the mode itself, not after "hello".
func withMarker(args []string) []string {
	switch {
	case len(args) == 0:
		return nil
	case args[len(args)-1] == "hello":
		return append(append(slices.Clone(args[:len(args)-1]), leakMarker), "hello")
	}
	return append(slices.Clone(args), leakMarker)
}

// benchRequest is the example request for benchmarks (no *testing.T).
func benchRequest(iso receipts.Isolation, inputs []input.Input, out string) Request {
	rf, err := ReadRunFile("../examples/request.json")
	if err != nil {
		panic(err)
	}
	return Request{
		RunID: rf.RunID, Config: rf.Config, Subject: rf.Subject, Inputs: inputs,
		Args: []string{"./echo-subject"}, Roots: map[string]string{"app": env.root},
		Isolation: iso, StateDir: env.stateDir, TranscriptPath: out,
	}
}

// outcome is one finished run as the tests look at it.
type outcome struct {
	res   Result
	data  []byte
	tr    *transcript.Transcript
	kinds []string
}

// runCase runs req into a transcript file in a temp dir, checks that the
// transcript validates, and returns it parsed.
func runCase(t *testing.T, req Request) outcome {
	t.Helper()
	dir := t.TempDir()
	req.TranscriptPath = filepath.Join(dir, "transcript.jsonl")
	res, err := Run(context.Background(), req)
	noteSandboxes(res.Sandboxes)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	data, err := os.ReadFile(req.TranscriptPath)
	if err != nil {
		t.Fatalf("transcript: %v", err)
	}
	captureTranscript(t, data)
	tr, err := transcript.Parse(data)
	if err != nil {
		t.Fatalf("transcript does not validate: %v\n%s", err, data)
	}
	var kinds []string
	for _, r := range tr.Records {
		kinds = append(kinds, r.Kind)
	}
	if got := tr.Terminal(); got != res.Outcome {
		t.Fatalf("Result.Outcome %s, transcript ends with %s", res.Outcome, got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files beside the transcript: %v", ents)
	}
	return outcome{res: res, data: data, tr: tr, kinds: kinds}
}

// captureEnv names a directory that, when set, receives a copy of every
// transcript runCase reads, as DIR/<test name>[.N].jsonl: run the tests
// with it before and after a refactoring and diff the two directories to
// show the transcripts byte-identical.
const captureEnv = "TVS_CAPTURE_TRANSCRIPTS"

var captured sync.Map // test name → transcripts captured so far

func captureTranscript(t *testing.T, data []byte) {
	dir := os.Getenv(captureEnv)
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "__", " ", "_").Replace(t.Name())
	n, _ := captured.LoadOrStore(name, new(atomic.Int32))
	if i := n.(*atomic.Int32).Add(1); i > 1 {
		name += "." + strconv.Itoa(int(i))
	}
	if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), data, 0o644); err != nil {
		t.Errorf("%s: %v", captureEnv, err)
	}
}

// terminal returns the terminal record's payload.
func (o outcome) terminal() *canon.Value { return o.tr.Records[len(o.tr.Records)-1].Payload() }

// detail returns run.failed's error.details member as text ("" if absent).
func (o outcome) detail(name string) string {
	e, ok := o.terminal().Get("error")
	if !ok {
		return ""
	}
	d, ok := e.Get("details")
	if !ok {
		return ""
	}
	v, ok := d.Get(name)
	if !ok {
		return ""
	}
	if v.Kind == canon.String {
		return v.Str
	}
	b, _ := canon.Marshal(v)
	return string(b)
}

func (o outcome) errorCode() string {
	e, ok := o.terminal().Get("error")
	if !ok {
		return ""
	}
	c, _ := e.Get("code")
	return c.Str
}

func (o outcome) count(kind string) int {
	n := 0
	for _, k := range o.kinds {
		if k == kind {
			n++
		}
	}
	return n
}

// inputs counts the input records, of every kind.
func (o outcome) inputs() int {
	n := 0
	for _, k := range o.kinds {
		if strings.HasPrefix(k, "input.") {
			n++
		}
	}
	return n
}

// lastObservation returns the last observation payload, or nil.
func (o outcome) lastObservation() *canon.Value {
	for i := len(o.tr.Records) - 1; i >= 0; i-- {
		if o.tr.Records[i].Kind == transcript.KindObservation {
			return o.tr.Records[i].Payload()
		}
	}
	return nil
}

func jsonText(v *canon.Value) string {
	if v == nil {
		return "<none>"
	}
	b, _ := canon.Marshal(v)
	return string(b)
}

// tierOf returns constraint c's receipt as "tier" or "unsupported".
func (o outcome) tierOf(c receipts.Constraint) string {
	for _, r := range o.tr.Receipts() {
		if r.Constraint == c {
			if r.Status == receipts.Unsupported {
				return "unsupported"
			}
			return string(r.Tier)
		}
	}
	return "none"
}

// fuzzWorker says whether this process is a fuzzing worker that go test
// -fuzz started (its coordinator passes -test.fuzzworker).
func fuzzWorker() bool {
	for _, a := range os.Args[1:] {
		if a == "-test.fuzzworker" || strings.HasPrefix(a, "-test.fuzzworker=") {
			return a != "-test.fuzzworker=false"
		}
	}
	return false
}
