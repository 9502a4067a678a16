package conformance

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// replayAdapter is an in-process adapter that answers each scenario
// with its golden transcript, changed by mutate: the comparison is
// tested without a sandbox.
type replayAdapter struct {
	c      *Corpus
	mutate func(id string, data []byte) []byte
}

func (a replayAdapter) Run(_ context.Context, sc Scenario, out string) error {
	for _, cs := range a.c.Manifest.Cases {
		if (cs.Family == FamilyPTY) == sc.PTY && strings.Join(cs.Subject, "\x00") == strings.Join(sc.Subject, "\x00") {
			data, err := os.ReadFile(a.c.Path(cs.Expect.Transcript))
			if err != nil {
				return err
			}
			return os.WriteFile(out, a.mutate(cs.ID, data), 0o644)
		}
	}
	return os.ErrNotExist
}

var seqEnd = regexp.MustCompile(`("seq":\d+)\}\n`)

// TestScenarioComparison: a transcript differing from the golden one
// only in the adapter's identity and in x- members passes; one differing
// anywhere else fails, and the summary names the case, the seq and the
// member path.
func TestScenarioComparison(t *testing.T) {
	c := loadCorpus(t)
	families := []string{FamilyAdapter, FamilyPTY}
	run := func(mutate func(string, []byte) []byte) *Summary {
		t.Helper()
		s, err := Run(context.Background(), c, Options{Adapter: replayAdapter{c, mutate}, Subjects: t.TempDir(), Work: workDir(t), Families: families})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("identity and x- members are ignored", func(t *testing.T) {
		s := run(func(_ string, data []byte) []byte {
			data = []byte(strings.ReplaceAll(string(data), `"adapter":{"id":"termverify-sandbox","version":"0.1.0"}`,
				`"adapter":{"id":"another-adapter","version":"9.9"}`))
			return seqEnd.ReplaceAll(data, []byte(`$1,"x-other":{"anything":[1,2]}}`+"\n"))
		})
		if !s.OK() {
			t.Errorf("failures: %+v", s.Failures)
		}
	})
	t.Run("any other difference fails", func(t *testing.T) {
		s := run(func(id string, data []byte) []byte {
			if id == "adapter/well-behaved" {
				return []byte(strings.Replace(string(data), `"text":"hello"`, `"text":"HELLO"`, 1))
			}
			return data
		})
		if s.Failed != 1 || len(s.Failures) != 1 || s.Failures[0].ID != "adapter/well-behaved" {
			t.Fatalf("want exactly adapter/well-behaved failed, got %+v", s.Failures)
		}
		if got := s.Failures[0].Got; !strings.Contains(got, "seq ") || !strings.Contains(got, "payload.") || !strings.Contains(got, "HELLO") {
			t.Errorf("failure %q does not name the seq, the path and the value", got)
		}
	})
	t.Run("no transcript", func(t *testing.T) {
		s, err := Run(context.Background(), c, Options{Adapter: replayAdapter{c, func(string, []byte) []byte { return nil }},
			Subjects: t.TempDir(), Work: workDir(t), Families: []string{FamilyPTY}})
		if err != nil {
			t.Fatal(err)
		}
		if s.Failed != s.Total || s.Total == 0 {
			t.Errorf("an empty transcript passed: %+v", s)
		}
	})
}
