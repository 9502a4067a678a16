package termverifysandbox_test

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/termverify/termverify-sandbox/"

// TestArchitectureMap holds docs/ARCHITECTURE.md's arrows to the code: every
// import between the project's packages (tests, examples and scripts
// excluded) is listed there, and every arrow listed is an import. A package
// the map does not list may import no package of the project.
func TestArchitectureMap(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	want := mapArrows(t, string(doc))
	got := codeArrows(t)
	keys := mapsKeys(got, want)
	slices.Sort(keys)
	for _, pkg := range keys {
		g, w := got[pkg], want[pkg]
		for _, dep := range g {
			if !slices.Contains(w, dep) {
				t.Errorf("%s imports %s, which docs/ARCHITECTURE.md's arrows do not list", pkg, dep)
			}
		}
		for _, dep := range w {
			if !slices.Contains(g, dep) {
				t.Errorf("docs/ARCHITECTURE.md says %s -> %s, but %s does not import it", pkg, dep, pkg)
			}
		}
	}
}

// mapArrows reads the code block under "## Arrows": "pkg -> a, b" lines,
// a line that starts with spaces continuing the one before.
func mapArrows(t *testing.T, doc string) map[string][]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "## Arrows")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "## Arrows" section`)
	}
	_, rest, ok = strings.Cut(rest, "```\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/ARCHITECTURE.md's arrows are not in a code block")
	}
	arrows := map[string][]string{}
	var from string
	for line := range strings.Lines(block) {
		deps := line
		if !strings.HasPrefix(line, " ") {
			var ok bool
			from, deps, ok = strings.Cut(line, "->")
			if !ok {
				t.Fatalf("arrow line %q has no ->", line)
			}
			from = strings.TrimSpace(from)
		}
		for d := range strings.SplitSeq(deps, ",") {
			if d = strings.TrimSpace(d); d != "" {
				arrows[from] = append(arrows[from], d)
			}
		}
	}
	for k := range arrows {
		slices.Sort(arrows[k])
	}
	return arrows
}

// codeArrows is every package's imports of the project's packages, by the
// names the map uses (cmd for cmd/termverify-sandbox).
func codeArrows(t *testing.T) map[string][]string {
	t.Helper()
	name := func(path string) string {
		n := strings.TrimPrefix(path, module)
		if n == "cmd/termverify-sandbox" {
			return "cmd"
		}
		return n
	}
	arrows := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || path == "examples" || path == "scripts" || path == "bin") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		if path == "." {
			return nil
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				arrows[name(module+filepath.ToSlash(path))] = append(arrows[name(module+filepath.ToSlash(path))], name(imp))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range arrows {
		slices.Sort(arrows[k])
	}
	return arrows
}

func mapsKeys(ms ...map[string][]string) []string {
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}
