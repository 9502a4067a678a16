package transcript

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// memChildEnv names the transcript a re-executed test binary validates
// and reports its peak RSS for (TestLongLineMemory's child).
const memChildEnv = "TRANSCRIPT_MEMORY_CHILD"

// TestLongLineMemory holds ValidateReader to its memory bound, a
// correctness property of `validate` (issue 12): peak RSS at most 32 MiB
// plus 4x the longest line, whatever the transcript. Its case is the
// one where a decoded tree costs most: lines of ~3.8 MB holding ~99,000
// JSON values each, nearly all in an observation's state, as valid
// records, as non-canonical ones (decodable) and as lines that do not
// decode at all. Each is validated in a child process (this binary,
// re-executed, with GOMAXPROCS=8: the most checking goroutines
// ValidateReader starts) that reads its own VmHWM from /proc/self/status
// when done; the child's floor (the test binary itself) is inside the
// 32 MiB.
func TestLongLineMemory(t *testing.T) {
	if name := os.Getenv(memChildEnv); name != "" {
		memChild(t, name)
		return
	}
	if testing.Short() {
		t.Skip("builds ~80 MB of transcripts")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc/self/status")
	}
	valid := longLineTranscript(t, 7)
	var longest int
	for line := range bytes.Lines(valid) {
		longest = max(longest, len(line)-1)
	}
	// The same lines broken after all their values: a blank before the
	// closing brace (decodes, not canonical), a byte after it (does not
	// decode).
	breakLong := func(with func(line []byte) []byte) []byte {
		var out []byte
		for line := range bytes.Lines(valid) {
			line = bytes.TrimSuffix(line, []byte("\n"))
			if len(line) > 1<<20 {
				line = with(bytes.Clone(line))
			}
			out = append(append(out, line...), '\n')
		}
		return out
	}
	cases := []struct {
		name string
		data []byte
		rule string
	}{
		{"valid", valid, ""},
		{"not canonical", breakLong(func(l []byte) []byte { return append(l[:len(l)-1], " }"...) }), RuleCanonical},
		{"does not decode", breakLong(func(l []byte) []byte { return append(l, 'x') }), canon.RuleSyntax},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".jsonl")
			if err := os.WriteFile(name, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			// The verdict the child must reach, from the tree path.
			_, perr := Parse(c.data)
			if rule := ruleOrEmpty(perr); rule != c.rule {
				t.Fatalf("Parse: rule %q, want %q (%v)", rule, c.rule, perr)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestLongLineMemory$", "-test.count=1")
			cmd.Env = append(withoutGCEnv(os.Environ()), memChildEnv+"="+name, "GOMAXPROCS=8")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			hwm, verdict := parseMemChild(t, out)
			want := "ok"
			if perr != nil {
				want = perr.Error()
			}
			if verdict != want {
				t.Fatalf("child's verdict %q, Parse's %q", verdict, want)
			}
			bound := 32<<20 + 4*longest
			t.Logf("peak RSS %.1f MiB, bound %.1f MiB (longest line %d bytes)", float64(hwm)/(1<<20), float64(bound)/(1<<20), longest)
			if hwm > bound {
				t.Errorf("peak RSS %d bytes (%.1f MiB) exceeds 32 MiB + 4 x %d = %.1f MiB",
					hwm, float64(hwm)/(1<<20), longest, float64(bound)/(1<<20))
			}
		})
	}
}

// memChild validates the transcript at name and prints its verdict and
// the process's peak RSS, for TestLongLineMemory.
func memChild(t *testing.T, name string) {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdict := "ok"
	if _, err := ValidateReader(f); err != nil {
		verdict = err.Error()
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	hwm := ""
	for l := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			hwm = strings.TrimSuffix(strings.TrimSpace(v), " kB")
		}
	}
	fmt.Printf("memchild hwm-kB %s\nmemchild verdict %s\n", hwm, strconv.Quote(verdict))
}

// parseMemChild reads memChild's report: peak RSS in bytes, verdict.
func parseMemChild(t *testing.T, out []byte) (int, string) {
	t.Helper()
	hwm, verdict := -1, ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "memchild hwm-kB "); ok {
			kb, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("child's VmHWM %q: %v", v, err)
			}
			hwm = kb << 10
		}
		if v, ok := strings.CutPrefix(sc.Text(), "memchild verdict "); ok {
			var err error
			if verdict, err = strconv.Unquote(v); err != nil {
				t.Fatalf("child's verdict %q: %v", v, err)
			}
		}
	}
	if hwm < 0 {
		t.Fatalf("child reported no VmHWM:\n%s", out)
	}
	return hwm, verdict
}

// withoutGCEnv drops the settings that would change how the child's
// garbage collector paces its heap: it runs as a user's validate does.
func withoutGCEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") &&
			!strings.HasPrefix(kv, "GODEBUG=") && !strings.HasPrefix(kv, "GOMAXPROCS=") {
			out = append(out, kv)
		}
	}
	return out
}

func ruleOrEmpty(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Rule
	}
	return ""
}

// longLineTranscript is a valid transcript of n observations whose
// lines are ~3.8 MB of ~99,000 values each (scripts/gentranscript -long
// writes the same lines).
func longLineTranscript(tb testing.TB, n int) []byte {
	tb.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, "long-run")
	mustWriteOpenEpoch(tb, w)
	obs := Observation{State: longState(3_800_000), Events: []Event{}, UI: UI{Regions: []Region{}}}
	for k := range n {
		if k > 0 {
			if err := w.Input(Text{Text: "x"}); err != nil {
				tb.Fatal(err)
			}
		}
		if err := w.Observe(obs); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Finish(Exit{Kind: ExitCode}); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// longState is scripts/gentranscript's LongState: rows of [string,
// float, integer, true, null, {"k": string}], 8 values and ~310 bytes
// each, up to size bytes and 12,300 rows.
func longState(size int) canon.Value {
	esc := strings.Repeat("a\x01", 30)
	key := strings.Repeat("v", 40)
	var rows []canon.Value
	for n := 20; n+310 < size && len(rows) < 12_300; n += 310 {
		k := int64(len(rows))
		f, _ := canon.FloatValue(1.2345678901234567e-7 * float64(k+1))
		rows = append(rows, canon.ArrayValue(
			canon.StringValue(esc), f, canon.IntValue(9_007_199_254_740_991-k),
			canon.BoolValue(true), canon.NullValue(),
			canon.ObjectValue(canon.M("k", canon.StringValue(key))),
		))
	}
	return canon.ObjectValue(canon.M("rows", canon.ArrayValue(rows...)))
}
