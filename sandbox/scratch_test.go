package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScratchRoot: the subject's scratch root is an empty, writable
// directory inside the sandbox's own state entry, and goes with it.
func TestScratchRoot(t *testing.T) {
	f := newFixture(t) // CheckNoLeaks: the state entry, scratch included, must be gone
	for _, iso := range bothIsolations {
		t.Run(string(iso), func(t *testing.T) {
			spec := f.isoSpec(iso, "/bin/sh", "-c", `test -z "$(ls -A)" && touch made-here`)
			spec.Root, spec.ScratchRoot = "", true
			sb, err := Start(context.Background(), spec)
			t.Cleanup(func() { _ = sb.Destroy() })
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			root := sb.Evidence().HostRoot
			if !strings.HasPrefix(root, filepath.Join(f.stateDir, sb.ID())+"/") {
				t.Errorf("scratch root %s is not inside the state entry of %s", root, sb.ID())
			}
			ex, err := sb.Wait()
			if err != nil || ex.Code != 0 {
				t.Fatalf("subject: %+v %v (the root was not empty or not writable)", ex, err)
			}
			if _, err := os.Stat(filepath.Join(root, "made-here")); err != nil {
				t.Errorf("the subject's file is not in the scratch root: %v", err)
			}
			if err := sb.Destroy(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("scratch root survives Destroy: %v", err)
			}
		})
	}
}
