package termverifysandbox_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs fails when a package directory has no package doc comment,
// or has one in more than one file, so every package states its contract.
func TestPackageDocs(t *testing.T) {
	dirs := map[string][]string{} // dir -> files with a package doc
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		seen[dir] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Doc != nil {
			dirs[dir] = append(dirs[dir], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range seen {
		if dir == "." {
			continue
		}
		switch n := len(dirs[dir]); {
		case n == 0:
			t.Errorf("package in %s has no package doc comment", dir)
		case n > 1:
			t.Errorf("package in %s has a package doc in %d files: %v", dir, n, dirs[dir])
		}
	}
}
