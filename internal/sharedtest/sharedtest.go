// Package sharedtest finds ../shared, the references CI keeps beside the
// repository (the upstream conformance corpus, registries and fixture
// transcripts), for tests in any package of the module.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot is the directory holding go.mod, found by walking up from the
// test's working directory (its package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// Dir is ../shared beside the repository root.
func Dir(t testing.TB) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), "..", "shared")
}
