package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// sharedDir is ../shared beside the repository root (internal/sharedtest).
func sharedDir(t testing.TB) string { return sharedtest.Dir(t) }

// repoRoot is the directory holding go.mod.
func repoRoot(t testing.TB) string { return sharedtest.RepoRoot(t) }

type corpusCase struct {
	Verdict string `json:"verdict"`
	Error   string `json:"error"`
	File    string `json:"file"`
}

func loadCorpus(t testing.TB) (dir string, cases []corpusCase) {
	t.Helper()
	dir = filepath.Join(sharedDir(t), "conformance", "upstream", "transcript")
	f, err := os.Open(filepath.Join(dir, "manifest.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("upstream corpus not present: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("manifest: %v", err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return dir, cases
}

// deviations lists corpus cases where we deliberately differ from
// upstream's verdict, with the reason (see docs/TRANSCRIPT.md). Empty: we
// agree with upstream on every case.
var deviations = map[string]string{}

// TestConformance asserts upstream's verdict on every labelled transcript.
func TestConformance(t *testing.T) {
	dir, cases := loadCorpus(t)
	if len(cases) != 563 {
		t.Errorf("manifest has %d cases, want 563", len(cases))
	}
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, c.File))
			if err != nil {
				t.Fatal(err)
			}
			want := c.Verdict == "accept"
			if reason, ok := deviations[c.File]; ok {
				t.Logf("deliberate deviation: %s", reason)
				want = !want
			}
			tr, err := Parse(data)
			switch {
			case want && err != nil:
				t.Fatalf("rejected, upstream accepts: %v", err)
			case !want && err == nil:
				t.Fatalf("accepted, upstream rejects: %s", c.Error)
			case !want:
				if _, ok := errors.AsType[*Error](err); !ok {
					t.Fatalf("error is %T, not *transcript.Error: %v", err, err)
				}
				return
			}
			out, err := Encode(tr)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Normalized) == 0 && !bytes.Equal(out, data) {
				t.Fatalf("re-encode differs from input")
			}
			if _, err := Parse(out); err != nil {
				t.Fatalf("re-encoded transcript rejected: %v", err)
			}
		})
	}
}

// TestReferenceFixtures checks upstream's own valid and invalid fixtures.
func TestReferenceFixtures(t *testing.T) {
	base := filepath.Join(sharedDir(t), "reference", "termverify-upstream", "transcripts", "v1")
	for _, verdict := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join(base, verdict, "*.jsonl"))
		if len(files) == 0 {
			t.Skipf("reference fixtures not present under %s", base)
		}
		for _, f := range files {
			t.Run(verdict+"/"+filepath.Base(f), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				_, err = Parse(data)
				if (err == nil) != (verdict == "valid") {
					t.Fatalf("verdict %s, got %v", verdict, err)
				}
			})
		}
	}
}
