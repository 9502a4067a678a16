package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const ptyBash = "../../testdata/pty/bash.jsonl"

// TestExportCommand: export writes the recording the flags ask for, the
// same bytes every time, and refuses what it cannot export with exit 2
// and a reason, writing nothing.
func TestExportCommand(t *testing.T) {
	dir := t.TempDir()
	cast := filepath.Join(dir, "run.cast")
	out, msg, code := runCLI(t, nil, "export", "--asciicast", cast, ptyBash)
	if code != exitOK || !strings.Contains(out, "asciicast v2") {
		t.Fatalf("export: %d %q %q", code, out, msg)
	}
	first, err := os.ReadFile(cast)
	if err != nil || !bytes.HasPrefix(first, []byte(`{"version":2,"width":64,"height":14,`)) {
		t.Fatalf("v2 file: %v %q", err, first[:min(len(first), 80)])
	}
	if _, _, code := runCLI(t, nil, "export", "--asciicast", cast, ptyBash); code != exitOK {
		t.Fatal("second export failed")
	}
	if again, _ := os.ReadFile(cast); !bytes.Equal(first, again) {
		t.Error("two exports of one transcript differ")
	}
	v3 := filepath.Join(dir, "run3.cast")
	if _, msg, code := runCLI(t, nil, "export", "--asciicast", v3, "--v3", "--pace", "250ms", ptyBash); code != exitOK {
		t.Fatalf("--v3: %d %s", code, msg)
	}
	if data, _ := os.ReadFile(v3); !bytes.HasPrefix(data, []byte(`{"version":3,"term":{"cols":64,"rows":14,"type":"xterm-256color"}`)) ||
		!bytes.HasSuffix(data, []byte("\"x\", \"3\"]\n")) {
		t.Errorf("v3 file: %q", data[:min(len(data), 100)])
	}

	// The unsupported example ends before any observation: nothing to draw.
	noFrames := unsupported
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no --asciicast", []string{"export", ptyBash}, "--asciicast FILE is required"},
		{"both versions", []string{"export", "--asciicast", filepath.Join(dir, "a"), "--v2", "--v3", ptyBash}, "v2 v3"},
		{"bad pace", []string{"export", "--asciicast", filepath.Join(dir, "b"), "--pace", "0s", ptyBash}, "--pace 0s: want from 1ms"},
		{"invalid transcript", []string{"export", "--asciicast", filepath.Join(dir, "c"), "export_test.go"}, "export_test.go: "},
		{"no frames", []string{"export", "--asciicast", filepath.Join(dir, "d"), noFrames}, "none of its 0 observations carries a frame"},
		{"directory missing", []string{"export", "--asciicast", filepath.Join(dir, "nope", "e"), ptyBash}, "directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, msg, code := runCLI(t, nil, c.args...)
			if code != exitUsage || !strings.Contains(msg, c.want) {
				t.Errorf("exit %d, %q; want 2 and %q", code, msg, c.want)
			}
		})
	}
	for _, f := range []string{"a", "b", "c", "d"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a refused export left %s", f)
		}
	}
}

// TestExportNoSymlink: the recording is never written through a
// symbolic link planted at its name.
func TestExportNoSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	must(t, os.WriteFile(victim, []byte("keep"), 0o644))
	link := filepath.Join(dir, "sub")
	must(t, os.Symlink(dir, link))
	if _, _, code := runCLI(t, nil, "export", "--asciicast", filepath.Join(link, "victim"), ptyBash); code != exitUsage {
		t.Errorf("export through a symlinked directory: exit %d, want 2", code)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep" {
		t.Error("the file behind the symlink was written")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
