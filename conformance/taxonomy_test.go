package conformance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sharedtest"
	"github.com/termverify/termverify-sandbox/transcript"
)

// notScenarios are the failure classes no subject behaviour can cause,
// each with the reason it has no adapter scenario.
var notScenarios = map[string]string{
	"sandbox-failed":  "a host fault: the os sandbox failing after its trial passed",
	"interrupted":     "a signal to the supervisor, not anything the subject does",
	"exit-unobserved": "the sandbox's init vanishing without a report: not a subject behaviour",
	"transcript-rule": "subject evidence the control codec accepts and the transcript refuses: the two codecs share their rules, so no echo-subject mode reaches it",
}

// failureClasses enumerates supervisor's Failure* constants (its
// details.failure codes) from the source.
func failureClasses(t *testing.T) []string { return supervisorConsts(t, "Failure", 5) }

// violations enumerates supervisor's peer-lifecycle violations
// (details.violation) from the source.
func violations(t *testing.T) []string { return supervisorConsts(t, "viol", 5) }

// supervisorConsts are the string constants of supervisor/ending.go
// whose names begin with prefix; fewer than least means the enumeration
// broke.
func supervisorConsts(t *testing.T, prefix string, least int) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(sharedtest.RepoRoot(t), "supervisor", "ending.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, prefix) {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out = append(out, s)
				}
			}
		}
		return true
	})
	if len(out) < least {
		t.Fatalf("found %d %s constants: the enumeration is broken", len(out), prefix)
	}
	sort.Strings(out)
	return out
}

// TestTaxonomyCovered: every failure class of the supervisor's taxonomy
// ends at least one adapter scenario's golden transcript (details.failure
// of its run.failed), except the exempt ones, and so does every
// peer-lifecycle violation (details.violation); and every scenario's
// golden transcript is valid and ends as the manifest says.
func TestTaxonomyCovered(t *testing.T) {
	c := loadCorpus(t)
	seen, violated := map[string]bool{}, map[string]bool{}
	for _, cs := range c.Manifest.Cases {
		if cs.Family != FamilyAdapter && cs.Family != FamilyPTY {
			continue
		}
		data, err := os.ReadFile(c.Path(cs.Expect.Transcript))
		if err != nil {
			t.Errorf("%s: %v (record it: make conformance-golden)", cs.ID, err)
			continue
		}
		tr, err := transcript.Parse(data)
		if err != nil {
			t.Errorf("%s: golden transcript: %v", cs.ID, err)
			continue
		}
		if got := tr.Terminal(); got != cs.Expect.Terminal {
			t.Errorf("%s: golden ends with %s, the manifest says %s", cs.ID, got, cs.Expect.Terminal)
		}
		last := tr.Records[len(tr.Records)-1].Payload()
		if e, ok := last.Get("error"); ok {
			if d, ok := e.Get("details"); ok {
				if f, ok := d.Get("failure"); ok {
					seen[f.Str] = true
				}
				if v, ok := d.Get("violation"); ok {
					violated[v.Str] = true
				}
			}
		}
	}
	for _, class := range failureClasses(t) {
		_, exempt := notScenarios[class]
		switch {
		case exempt && seen[class]:
			t.Errorf("exempt class %s has a scenario after all: drop it from notScenarios", class)
		case !exempt && !seen[class]:
			t.Errorf("failure class %s ends no adapter scenario", class)
		}
	}
	for _, v := range violations(t) {
		if !violated[v] {
			t.Errorf("peer-lifecycle violation %s ends no adapter scenario", v)
		}
	}
}
