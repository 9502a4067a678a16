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

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
)

// memChildEnv names the transcript a re-executed test binary validates
// and reports its peak RSS for (TestLongLineMemory's child).
const memChildEnv = "TRANSCRIPT_MEMORY_CHILD"

// TestLongLineMemory holds ValidateReader to its memory bound, a
// correctness property of `validate` (docs/TRANSCRIPT.md): peak RSS at most 32 MiB
// plus 4x the longest line, whatever the transcript, here with a margin:
// at most 85% of it. Its cases are the ones where a decoded tree costs
// most, seven observations a line each (longObservation's shapes, which
// scripts/gentranscript -long 7 -shape S writes): ~3.8 MB lines holding
// ~99,000 JSON values nearly all in their state, which no check reads;
// and lines packed with the typed values checkObservation checks one by
// one: 11,000 UI regions, 16,384 events, 16,384 frame lines. Each shape
// is validated as valid records, as non-canonical ones (decodable) and
// as lines that do not decode at all, in a child process (this binary,
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
	type memCase struct {
		name string
		data []byte
		rule string
	}
	var cases []memCase
	longest := map[string]int{}
	for _, shape := range []string{"state", "regions", "events", "lines"} {
		valid := longLineTranscript(t, 7, shape)
		for line := range bytes.Lines(valid) {
			longest[shape] = max(longest[shape], len(line)-1)
		}
		// The same lines broken after all their values: a blank before the
		// closing brace (decodes, not canonical), a byte after it (does not
		// decode).
		breakLong := func(with func(line []byte) []byte) []byte {
			var out []byte
			for line := range bytes.Lines(valid) {
				line = bytes.TrimSuffix(line, []byte("\n"))
				if len(line) > 64<<10 {
					line = with(bytes.Clone(line))
				}
				out = append(append(out, line...), '\n')
			}
			return out
		}
		cases = append(cases,
			memCase{shape + "/valid", valid, ""},
			memCase{shape + "/not canonical", breakLong(func(l []byte) []byte { return append(l[:len(l)-1], " }"...) }), RuleCanonical},
			memCase{shape + "/does not decode", breakLong(func(l []byte) []byte { return append(l, 'x') }), canon.RuleSyntax},
		)
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-").Replace(c.name)+".jsonl")
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
			n := longest[strings.Split(c.name, "/")[0]]
			bound := 32<<20 + 4*n
			t.Logf("peak RSS %.1f MiB, bound %.1f MiB (longest line %d bytes)", float64(hwm)/(1<<20), float64(bound)/(1<<20), n)
			if hwm > bound*85/100 {
				t.Errorf("peak RSS %d bytes (%.1f MiB) exceeds 85%% of 32 MiB + 4 x %d = %.1f MiB",
					hwm, float64(hwm)/(1<<20), n, float64(bound)/(1<<20))
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

// longLineTranscript is a valid transcript of n observations of the
// given shape (longObservation; scripts/gentranscript -long n -shape
// writes the same lines).
func longLineTranscript(tb testing.TB, n int, shape string) []byte {
	tb.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, "long-run")
	mustWriteOpenEpoch(tb, w)
	obs := longObservation(tb, shape)
	for k := range n {
		if k > 0 {
			if err := w.Input(input.Text{Text: "x"}); err != nil {
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

// longObservation is scripts/gentranscript's LongObservation: its state
// ~3.8 MB of ~99,000 values (state), or 11,000 UI regions (regions),
// 16,384 events (events) or a frame of 16,384 lines (lines).
func longObservation(tb testing.TB, shape string) Observation {
	obs := Observation{State: canon.ObjectValue(), Events: []Event{}, UI: UI{Regions: []Region{}}}
	switch shape {
	case "state":
		obs.State = longState(3_800_000)
	case "regions":
		for k := range int64(11_000) {
			obs.UI.Regions = append(obs.UI.Regions, Region{ID: fmt.Sprintf("region-%05d", k), Role: "pane",
				Bounds: Bounds{Column: k % 200, Row: k / 200, Columns: 1 + k%7, Rows: 1 + k%5}})
		}
		focus := "region-10999"
		obs.UI.Focus = &focus
	case "events":
		for k := range 16_384 {
			obs.Events = append(obs.Events, Event{Type: "out", Data: canon.IntValue(int64(k))})
		}
	case "lines":
		f := &Frame{Columns: 12, Rows: 16_384}
		for k := range 16_384 {
			f.Lines = append(f.Lines, fmt.Sprintf("line %06d", k))
		}
		obs.Frame = f
	default:
		tb.Fatalf("unknown shape %q", shape)
	}
	return obs
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
