package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvidenceWriteErrorSaysEvidence: a failed evidence write says that
// the evidence failed, whatever the file is called: the run's transcript
// is already committed by then, and an error naming only a path does not
// tell which of the two outputs went wrong.
func TestEvidenceWriteErrorSaysEvidence(t *testing.T) {
	// Not t.TempDir: its name would carry the test's, and so the word.
	dir, err := os.MkdirTemp("", "tv-out-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	dst, err := openOutDir("evidence", filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.close()
	// The directory goes away under its open descriptor: no file can be
	// made in it.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	err = newEvidence(&Request{RunID: "r"}).write(dst)
	if err == nil || !strings.Contains(err.Error(), "evidence") {
		t.Errorf("evidence write into a removed directory: %v, want an error that says evidence", err)
	}
}
