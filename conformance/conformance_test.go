package conformance

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// update regenerates the corpus's codec and daemon cases, the manifest
// and the golden summary of those families (gen_test.go). Review the
// diff before committing it: that review is how a change is accepted.
var update = flag.Bool("update", false, "regenerate testdata/conformance (codec and daemon families, manifest, summary)")

func corpusDir(t testing.TB) string {
	return filepath.Join(sharedtest.RepoRoot(t), "testdata", "conformance")
}

func loadCorpus(t testing.TB) *Corpus {
	t.Helper()
	c, err := Load(corpusDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// workDir is a temporary directory opened for Options.Work.
func workDir(t *testing.T) *safeout.Dir {
	d, err := safeout.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// codecFamilies are the families this package's tests run (no root, no
// sandbox); the CLI's test runs the rest.
var codecFamilies = []string{FamilyCodec, FamilyDaemon}

// TestCorpus runs the codec and daemon cases against our codecs and
// compares the summary with the golden one's same families.
func TestCorpus(t *testing.T) {
	if *update {
		generate(t)
	}
	c := loadCorpus(t)
	s, err := Run(context.Background(), c, Options{Validator: Ours{}, Families: codecFamilies, Work: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s.Failures {
		t.Errorf("%s: want %s, got %s", f.ID, f.Want, f.Got)
	}
	golden := goldenSummary(t, c, codecFamilies)
	if got := s.Encode(); !bytes.Equal(got, golden) {
		t.Errorf("summary differs from the golden one's %v:\n got %s\nwant %s", codecFamilies, got, golden)
	}
}

// goldenSummary is summary.json cut down to families.
func goldenSummary(t *testing.T, c *Corpus, families []string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Encode(), data) {
		t.Fatalf("summary.json is not in canonical form")
	}
	return s.Only(families).Encode()
}

// TestBrokenValidator: an outside validator that says every input is
// valid (a script that exits 0) fails, and the summary names every
// invalid case (and the valid ones whose kind it does not print), each
// with what it should have said.
func TestBrokenValidator(t *testing.T) {
	c := loadCorpus(t)
	acceptAll := Command{Argv: []string{"/bin/sh", "-c", "exit 0", "accept-all"}}
	s, err := Run(context.Background(), c, Options{Validator: acceptAll, Families: codecFamilies, Work: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if s.OK() {
		t.Fatal("a validator that accepts everything passed the corpus")
	}
	failed := map[string]Failure{}
	for _, f := range s.Failures {
		failed[f.ID] = f
	}
	wrong := 0
	for _, cs := range c.Manifest.Cases {
		if cs.Family != FamilyCodec && cs.Family != FamilyDaemon {
			continue
		}
		shouldFail := cs.Expect.Verdict == Invalid || cs.Expect.Kind != ""
		f, got := failed[cs.ID]
		if shouldFail != got {
			t.Errorf("%s: in failures %v, want %v", cs.ID, got, shouldFail)
		}
		if got && (f.Want != expected(cs.Expect).String() || f.Got != "valid") {
			t.Errorf("%s: failure %+v does not say want %q got valid", cs.ID, f, expected(cs.Expect).String())
		}
		if shouldFail {
			wrong++
		}
	}
	if s.Failed != wrong || s.Passed != s.Total-wrong {
		t.Errorf("counts %d failed %d passed of %d, want %d failed", s.Failed, s.Passed, s.Total, wrong)
	}
}

// TestHangingValidator: a validator that never answers fails its case
// when the case's time is up, and the run goes on.
func TestHangingValidator(t *testing.T) {
	c := loadCorpus(t)
	one := &Corpus{Dir: c.Dir, Manifest: Manifest{FixtureVersion: FixtureVersion}}
	for _, cs := range c.Manifest.Cases {
		if cs.ID == "codec/control/stop" || cs.ID == "daemon/stop" {
			one.Manifest.Cases = append(one.Manifest.Cases, cs)
		}
	}
	// Not exec: the shell's child sleep holds the output pipes, which
	// exec.CommandContext alone would wait for, so the case's timeout
	// must kill the validator's whole process group.
	const marker = "29.987"
	hang := Command{Argv: []string{"/bin/sh", "-c", `sleep ` + marker + `; exit 0`, "hang"}}
	begin := time.Now()
	s, err := Run(context.Background(), one, Options{Validator: hang, Work: workDir(t), CaseTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 15*time.Second {
		t.Errorf("two cases of a hanging validator took %v: the case timeout does not bound a validator whose child holds its pipes", took)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("the hanging validator's child survived its case: %v", left)
	}
	if s.Total != 2 || s.Failed != 2 {
		t.Fatalf("summary %s", s.Encode())
	}
	for _, f := range s.Failures {
		if !strings.HasPrefix(f.Got, "error: ") {
			t.Errorf("%s: got %q, want the validator's error", f.ID, f.Got)
		}
	}
}

// TestUnknownFixtureVersion: a manifest of another version, or none, is
// refused before any case is read.
func TestUnknownFixtureVersion(t *testing.T) {
	for _, tc := range []struct{ name, manifest string }{
		{"version 2", `{"fixtureVersion":2,"cases":[]}`},
		{"version 0", `{"fixtureVersion":0,"cases":[]}`},
		{"no version", `{"cases":[]}`},
		{"a string", `{"fixtureVersion":"1","cases":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(tc.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), "fixtureVersion") {
				t.Errorf("error %q does not name fixtureVersion", err)
			}
		})
	}
	t.Run("version 1", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"fixtureVersion":1,"cases":[]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDifferencesMarked: every case whose verdict differs from
// upstream's says why, and says it only then.
func TestDifferencesMarked(t *testing.T) {
	c := loadCorpus(t)
	n := 0
	for _, cs := range c.Manifest.Cases {
		if cs.Family == FamilyAdapter || cs.Family == FamilyPTY {
			if cs.Difference != "" && (cs.Upstream == nil || cs.Upstream.Record == "") {
				t.Errorf("%s: a difference without upstream's record", cs.ID)
			}
			if cs.Difference != "" {
				n++
			}
			continue
		}
		if cs.Upstream == nil {
			continue
		}
		differs := cs.Upstream.Verdict != cs.Expect.Verdict
		if differs != (cs.Difference != "") {
			t.Errorf("%s: upstream %s, ours %s, difference %q", cs.ID, cs.Upstream.Verdict, cs.Expect.Verdict, cs.Difference)
		}
		if differs {
			n++
		}
	}
	if n == 0 {
		t.Error("no case marks a deliberate difference from upstream")
	}
}

// processesWith lists the pids whose command line holds arg.
func processesWith(arg string) []string {
	var out []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		if b, err := os.ReadFile(c); err == nil && strings.Contains(string(b), arg) {
			out = append(out, filepath.Base(filepath.Dir(c)))
		}
	}
	return out
}
