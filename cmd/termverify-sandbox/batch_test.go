package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/batch"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// batchDir is a directory every user can read holding the example request
// and inputs, root/ with the echo subject of root, and a manifest of
// lines (entries with relative paths, as a user writes them).
func batchDir(t *testing.T, root string, lines ...string) string {
	t.Helper()
	dir := publicTempDir(t, 0o755)
	if err := os.Mkdir(filepath.Join(dir, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{
		"../../examples/request.json": "request.json",
		"../../examples/inputs.jsonl": "inputs.jsonl",
		root + "/echo-subject":        "root/echo-subject",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "m.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// entryLine is a manifest line for the example run with subject argv.
func entryLine(name string, subject ...string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "request": "request.json", "inputs": "inputs.jsonl",
		"roots": []string{"app=root"}, "subject": subject})
	return string(b)
}

func readSummary(t *testing.T, path string) batch.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s batch.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

func readJUnit(t *testing.T, path string) batch.JUnitSuites {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j batch.JUnitSuites
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return j
}

// TestBatchCommand drives the real binary: -j 2 runs overlap (by the
// summary's timestamps), the reports agree, the shards of a matrix cover
// every entry once, no progress line off a terminal, and the usage errors.
func TestBatchCommand(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	root := echoSubjectRoot(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	var lines []string
	for i := range 5 {
		lines = append(lines, entryLine(fmt.Sprintf("ok%d", i), "./echo-subject"))
	}
	lines = append(lines, entryLine("exit3", "./echo-subject", "exit-mid-epoch", "3"))
	dir := batchDir(t, root, lines...)
	batchCmd := func(extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"batch", "m.jsonl", "--state-dir", state}, extra...)...)
		cmd.Dir = dir
		return cmd
	}

	_, stderr, code := run(t, batchCmd("--out", "out", "-j", "2", "--junit", "j.xml", "--summary", "s.json"))
	if code != exitFailed || strings.Contains(stderr, "\x1b[K") || !strings.Contains(stderr, "6 entries: 5 passed, 1 failed") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	sum := readSummary(t, filepath.Join(dir, "s.json"))
	if sum.Format != batch.Format || sum.Jobs != 2 || sum.ExitStatus != exitFailed || len(sum.Entries) != 6 {
		t.Fatalf("summary %+v", sum)
	}
	overlap := false
	for i, a := range sum.Entries {
		if _, err := os.Stat(filepath.Join(dir, "out", a.Name+".jsonl")); err != nil {
			t.Errorf("transcript of %s: %v", a.Name, err)
		}
		for _, b := range sum.Entries[i+1:] {
			overlap = overlap || a.StartedAt.Before(*b.EndedAt) && b.StartedAt.Before(*a.EndedAt)
		}
	}
	if !overlap {
		t.Errorf("-j 2: no two runs overlap: %+v", sum.Entries)
	}
	j := readJUnit(t, filepath.Join(dir, "j.xml"))
	if j.Tests != 6 || j.Failures != 1 || len(j.Suites) != 1 || len(j.Suites[0].Cases) != 6 {
		t.Fatalf("junit %+v", j)
	}
	if c := j.Suites[0].Cases[5]; c.Failure == nil || !strings.Contains(c.SystemOut, "[[ATTACHMENT|out/exit3.jsonl]]") {
		t.Errorf("exit3 case %+v", c)
	}

	// A matrix of three shards: every entry in exactly one.
	seen := map[string]int{}
	for i := range 3 {
		s := fmt.Sprintf("shard%d.json", i)
		run(t, batchCmd("--out", "shards", "--shard", fmt.Sprintf("%d/3", i), "--summary", s))
		for _, e := range readSummary(t, filepath.Join(dir, s)).Entries {
			seen[e.Name]++
			if e.Index%3 != i {
				t.Errorf("entry %d in shard %d/3", e.Index, i)
			}
		}
	}
	for i := range 6 {
		name := sum.Entries[i].Name
		if seen[name] != 1 {
			t.Errorf("%s in %d shards", name, seen[name])
		}
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no --out", nil},
		{"bad shard", []string{"--out", "x", "--shard", "3/3"}},
		{"jobs 0", []string{"--out", "x", "-j", "0"}},
		{"a per-run flag", []string{"--out", "x", "--transcript", "t.jsonl"}},
		{"relative state dir", []string{"--out", "x", "--state-dir", "rel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, stderr, code := run(t, batchCmd(tc.args...)); code != exitUsage {
				t.Errorf("exit %d, want 2: %s", code, stderr)
			}
		})
	}
	t.Run("name collision", func(t *testing.T) {
		d := batchDir(t, root, entryLine("same", "./echo-subject"), entryLine("same", "./echo-subject"))
		cmd := exec.Command(bin, "batch", "m.jsonl", "--out", "out", "--state-dir", state)
		cmd.Dir = d
		if _, stderr, code := run(t, cmd); code != exitUsage || !strings.Contains(stderr, "same") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if _, err := os.Stat(filepath.Join(d, "out")); err == nil {
			t.Error("a refused batch made its output directory")
		}
	})
}

// TestBatchInterrupt SIGINTs a batch with two hanging runs in progress:
// their sandboxes are torn down, their transcripts (run.failed) and the
// finished one kept, the rest skipped, and the reports say so.
func TestBatchInterrupt(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	root := echoSubjectRoot(t)
	state := t.TempDir()
	marker := "tv-batch-test-" + strconv.Itoa(os.Getpid())
	sandboxtest.CheckNoLeaks(t, state, marker)
	dir := batchDir(t, root,
		entryLine("ok0", "./echo-subject"),
		entryLine("hang1", "./echo-subject", "hang", marker+"-hang1"),
		entryLine("hang2", "./echo-subject", "hang", marker+"-hang2"),
		entryLine("ok3", "./echo-subject"),
		entryLine("ok4", "./echo-subject"))
	cmd := exec.Command(bin, "batch", "m.jsonl", "--out", "out", "-j", "2", "--state-dir", state,
		"--epoch-timeout", "60s", "--junit", "j.xml", "--summary", "s.json")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for ok0's transcript and both hanging subjects running. Each
	// has a marker of its own: ok0's transcript is committed while its
	// sandbox is still torn down, so two sandbox entries and two
	// processes of one marker can be ok0's and hang1's alone.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		ents, _ := os.ReadDir(state)
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), "tvs-") {
				n++
			}
		}
		_, err := os.Stat(filepath.Join(dir, "out", "ok0.jsonl"))
		if err == nil && n == 2 && len(sandboxtest.PidsMatching(marker+"-hang1")) > 0 && len(sandboxtest.PidsMatching(marker+"-hang2")) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the batch never had two hanging runs: %d sandboxes; stderr %s", n, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := exitStatus(t, cmd, cmd.Wait())
	if code != exitFailed || !strings.Contains(stderr.String(), "interrupted (INT)") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	sum := readSummary(t, filepath.Join(dir, "s.json"))
	want := map[string]batch.Status{"ok0": batch.StatusPassed, "hang1": batch.StatusFailed, "hang2": batch.StatusFailed,
		"ok3": batch.StatusSkipped, "ok4": batch.StatusSkipped}
	if sum.Interrupted != "INT" || sum.Totals.Skipped != 2 {
		t.Errorf("summary %+v", sum)
	}
	for _, e := range sum.Entries {
		if e.Status != want[e.Name] {
			t.Errorf("%s: %s (%s), want %s", e.Name, e.Status, e.Message, want[e.Name])
		}
		_, err := os.Stat(filepath.Join(dir, "out", e.Name+".jsonl"))
		if ran := e.Status != batch.StatusSkipped; (err == nil) != ran {
			t.Errorf("%s: transcript present %v, want %v", e.Name, err == nil, ran)
		}
		if strings.HasPrefix(e.Name, "hang") && !strings.Contains(e.Message, "SIGINT") {
			t.Errorf("%s: message %q does not name the signal", e.Name, e.Message)
		}
	}
	j := readJUnit(t, filepath.Join(dir, "j.xml"))
	if j.Tests != 5 || j.Skipped != 2 || j.Failures != 2 {
		t.Errorf("junit totals %+v", j)
	}
}

// TestDeployCommands checks every `termverify-sandbox CMD --flag` in
// deploy/ against the command tree: the examples must not rot.
func TestDeployCommands(t *testing.T) {
	files, err := filepath.Glob("../../deploy/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/*.yaml: %v", err)
	}
	root := newRootCmd()
	invocation := regexp.MustCompile(`termverify-sandbox\s+([a-z][a-z-]*)\b([^\n]*)`)
	flag := regexp.MustCompile(`(?:^|\s)(--?[a-zA-Z][a-zA-Z0-9-]*)`)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// Shell continuation lines are one command.
			text := strings.ReplaceAll(string(b), "\\\n", " ")
			found := 0
			for _, m := range invocation.FindAllStringSubmatch(text, -1) {
				sub, _, err := root.Find([]string{m[1]})
				if err != nil || sub == root {
					t.Errorf("%s: no command %q", f, m[1])
					continue
				}
				found++
				// Flags end at "--" (the subject's argv follows).
				args, _, _ := strings.Cut(m[2], " -- ")
				for _, fm := range flag.FindAllStringSubmatch(args, -1) {
					if !hasFlag(sub, fm[1]) {
						t.Errorf("%s: %s has no flag %s", f, m[1], fm[1])
					}
				}
			}
			if found == 0 {
				t.Errorf("%s: no termverify-sandbox command found", f)
			}
		})
	}
}

func hasFlag(cmd *cobra.Command, f string) bool {
	if name, ok := strings.CutPrefix(f, "--"); ok {
		return cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
	}
	short := strings.TrimPrefix(f, "-")
	return len(short) == 1 && (cmd.Flags().ShorthandLookup(short) != nil || slices.Contains([]string{"h"}, short))
}

// shLine is a manifest line whose subject is a shell script: it does its
// work in the sandbox and exits without speaking control/v1 (the run
// fails its handshake, and the batch goes on).
func shLine(name, script string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "request": "request.json", "inputs": "inputs.jsonl",
		"roots": []string{"app=root"}, "subject": []string{"/bin/sh", "-c", script}})
	return string(b)
}

// rootOnlyDir is a directory only root can reach: where an attack tries
// to make root write.
func rootOnlyDir(t *testing.T) string {
	t.Helper()
	target := filepath.Join(t.TempDir(), "root-only")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	return target
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestBatchOutputAttacks are the attacks on batch's own outputs, as the
// subject or a local user makes them, on the real binary:
//   - reports: --junit and --summary in a reports/ directory of the mapped
//     root, which the subject replaces by a symlink to a root-only
//     directory before the batch writes them (old code: both reports
//     written into the root-only directory);
//   - out symlink: --out below a planted symlink (old code: root made the
//     directory in the symlink's target);
//   - forge: --out inside the mapped root, where a later entry renames it
//     away and writes a forged transcript of an earlier entry at the path
//     the summary names (old code: the summary pointed at the forgery).
func TestBatchOutputAttacks(t *testing.T) {
	sandboxtest.RequireRoot(t)
	bin := buildBinary(t)
	root := echoSubjectRoot(t)
	state := t.TempDir()
	sandboxtest.CheckNoLeaks(t, state, "")
	batchIn := func(dir string, args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"batch", "m.jsonl", "--state-dir", state, "-j", "1"}, args...)...)
		cmd.Dir = dir
		_, stderr, code := run(t, cmd)
		return stderr, code
	}
	// The subject must be able to write its root, as in a CI workspace.
	writable := func(t *testing.T, dir string) {
		if err := os.Chmod(filepath.Join(dir, "root"), 0o777); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("reports dir swapped by the subject", func(t *testing.T) {
		target := rootOnlyDir(t)
		dir := batchDir(t, root, shLine("swap", "rmdir /sandbox/reports && ln -s "+target+" /sandbox/reports"))
		writable(t, dir)
		if err := os.Mkdir(filepath.Join(dir, "root", "reports"), 0o777); err != nil {
			t.Fatal(err)
		}
		stderr, code := batchIn(dir, "--out", "out", "--junit", "root/reports/j.xml", "--summary", "root/reports/s.json")
		if got := dirNames(t, target); len(got) != 0 {
			t.Fatalf("root wrote %v into the root-only directory through the subject's symlink (exit %d: %s)", got, code, stderr)
		}
		if code != exitUsage || !strings.Contains(stderr, "inside root app=") {
			t.Errorf("exit %d, want a usage error naming the root: %s", code, stderr)
		}
	})

	t.Run("out below a planted symlink", func(t *testing.T) {
		target := rootOnlyDir(t)
		dir := batchDir(t, root, entryLine("ok", "./echo-subject"))
		if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		stderr, code := batchIn(dir, "--out", "link/new/out")
		if got := dirNames(t, target); len(got) != 0 {
			t.Fatalf("root created %v in the symlink's target (exit %d: %s)", got, code, stderr)
		}
		if code != exitUsage || !strings.Contains(stderr, "symbolic link") {
			t.Errorf("exit %d, want a usage error about the symlink: %s", code, stderr)
		}
	})

	for _, out := range []string{"root/out", "root/../root/out", "./root//out/"} {
		t.Run("forge with --out "+out, func(t *testing.T) {
			dir := batchDir(t, root, entryLine("A", "./echo-subject"),
				shLine("B", "mv /sandbox/out /sandbox/old && mkdir /sandbox/out && echo forged > /sandbox/out/A.jsonl"))
			writable(t, dir)
			stderr, code := batchIn(dir, "--out", out, "--summary", "s.json")
			if b, err := os.ReadFile(filepath.Join(dir, "root", "out", "A.jsonl")); err == nil && strings.Contains(string(b), "forged") {
				t.Fatalf("the summary's out/A.jsonl is entry B's forgery (exit %d: %s)", code, stderr)
			}
			if code != exitUsage || !strings.Contains(stderr, "--out") || !strings.Contains(stderr, "inside root app=") ||
				!strings.Contains(stderr, "outside every --root") {
				t.Errorf("exit %d, want a usage error that says why and what to do: %s", code, stderr)
			}
			if got := dirNames(t, filepath.Join(dir, "root")); slices.Contains(got, "out") {
				t.Errorf("a refused batch made its output directory: %v", got)
			}
		})
	}
}
