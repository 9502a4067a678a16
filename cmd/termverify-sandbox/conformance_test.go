package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/conformance"
	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
	"github.com/termverify/termverify-sandbox/transcript"
)

// updateGolden rewrites the adapter and PTY golden transcripts and
// summary.json (make conformance-golden). Review the diff before
// committing: that review is how a changed golden result is accepted.
var updateGolden = flag.Bool("update", false, "record testdata/conformance's golden transcripts and summary.json with our adapter")

const conformanceCorpus = "../../testdata/conformance"

// TestConformanceCorpus runs the whole corpus with the real binary, our
// codecs and our adapter (run), and compares the parity summary with
// the checked-in golden one byte for byte.
func TestConformanceCorpus(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	subjects := echoSubjectRoot(t)
	if *updateGolden {
		recordGoldens(t, bin, subjects)
	}
	golden, err := os.ReadFile(filepath.Join(conformanceCorpus, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(bin, "conformance", "--corpus", conformanceCorpus, "--subjects", subjects, "--json")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stdout, stderr, code := run(t, cmd)
	if code != exitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("conformance left %d entries in its temporary directory: %v", len(left), left)
	}
	if stdout != string(golden) {
		t.Errorf("summary differs from the golden one:\n got %s\nwant %s", stdout, golden)
	}
}

// recordGoldens runs every scenario twice with our adapter, requires the
// two transcripts byte-equal (deterministic: the manual clock) and the
// terminal record the manifest names, and writes the golden transcript;
// then the summary.
func recordGoldens(t *testing.T, bin, subjects string) {
	c, err := conformance.Load(conformanceCorpus)
	if err != nil {
		t.Fatal(err)
	}
	ours := conformance.CommandAdapter{Argv: []string{bin, "run"}}
	work, err := safeout.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	for _, cs := range c.Manifest.Cases {
		if cs.Family != conformance.FamilyAdapter && cs.Family != conformance.FamilyPTY {
			continue
		}
		first, err := conformance.Transcript(context.Background(), c, cs, ours, subjects, work)
		if err != nil {
			t.Fatalf("%s: %v", cs.ID, err)
		}
		second, err := conformance.Transcript(context.Background(), c, cs, ours, subjects, work)
		if err != nil {
			t.Fatalf("%s: %v", cs.ID, err)
		}
		if !bytes.Equal(first, second) {
			t.Errorf("%s: two runs gave different transcripts: not a deterministic golden", cs.ID)
			continue
		}
		tr, err := transcript.Parse(first)
		if err != nil {
			t.Fatalf("%s: %v", cs.ID, err)
		}
		if got := tr.Terminal(); got != cs.Expect.Terminal {
			t.Errorf("%s: ends with %s, the manifest expects %s", cs.ID, got, cs.Expect.Terminal)
			continue
		}
		if err := os.WriteFile(c.Path(cs.Expect.Transcript), first, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	stdout, stderr, code := run(t, exec.Command(bin, "conformance", "--corpus", conformanceCorpus, "--subjects", subjects, "--json"))
	if code != exitOK {
		t.Fatalf("the corpus fails against the goldens just recorded: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if err := os.WriteFile(filepath.Join(conformanceCorpus, "summary.json"), []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConformanceContract runs the codec and daemon families through the
// outside-validator contract: our own codecs behind `conformance
// validate` give the golden summary; a validator that says every input
// is valid fails with each wrong case named; a corpus of an unknown
// fixtureVersion is refused.
func TestConformanceContract(t *testing.T) {
	bin := buildBinary(t)
	golden, err := os.ReadFile(filepath.Join(conformanceCorpus, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := conformance.DecodeSummary(golden)
	if err != nil {
		t.Fatal(err)
	}
	only := []string{conformance.FamilyCodec, conformance.FamilyDaemon}
	t.Run("our codecs as an outside validator", func(t *testing.T) {
		stdout, stderr, code := run(t, exec.Command(bin, "conformance", "--corpus", conformanceCorpus, "--only", "codec,daemon",
			"--validator", bin+" conformance validate", "--json"))
		if code != exitOK {
			t.Errorf("exit %d, want 0: %s", code, stderr)
		}
		if w := string(want.Only(only).Encode()); stdout != w {
			t.Errorf("summary:\n got %s\nwant %s", stdout, w)
		}
	})
	t.Run("a validator that accepts everything", func(t *testing.T) {
		accept := filepath.Join(t.TempDir(), "accept-all")
		if err := os.WriteFile(accept, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		stdout, _, code := run(t, exec.Command(bin, "conformance", "--corpus", conformanceCorpus, "--only", "codec,daemon", "--validator", accept, "--json"))
		if code != exitFailed {
			t.Errorf("exit %d, want 1", code)
		}
		s, err := conformance.DecodeSummary([]byte(stdout))
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, f := range s.Failures {
			ids[f.ID] = true
		}
		for _, id := range []string{"codec/control/integer-2^53", "codec/transcript/no-final-lf", "codec/inputs/after-stop", "daemon/frame-oversized", "daemon/stop"} {
			if !ids[id] {
				t.Errorf("the summary does not name %s", id)
			}
		}
		if s.Failed == 0 || s.Failed != len(s.Failures) || s.Passed+s.Failed != s.Total {
			t.Errorf("counts: %d failed (%d listed), %d passed, %d total", s.Failed, len(s.Failures), s.Passed, s.Total)
		}
	})
	t.Run("unknown fixtureVersion", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, conformance.ManifestName), []byte(`{"fixtureVersion":2,"cases":[]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := run(t, exec.Command(bin, "conformance", "--corpus", dir))
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "fixtureVersion 2 is unknown") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 and the version named", code, stdout, stderr)
		}
	})
}
