package ptytest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLookPath: a program is looked up in the PATH it is given, never in
// the test process's, where another program of the same name comes
// first (a pyenv or venv interpreter on a developer's machine).
func TestLookPath(t *testing.T) {
	ours, given, other := t.TempDir(), t.TempDir(), t.TempDir()
	for _, dir := range []string{ours, given} {
		if err := os.WriteFile(filepath.Join(dir, "prog"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", ours)
	cases := []struct {
		name string
		env  []string
		want string // "": not found
	}{
		{"given PATH", []string{"PATH=" + given}, filepath.Join(given, "prog")},
		{"the last PATH counts", []string{"PATH=" + ours, "PATH=" + other + ":" + given}, filepath.Join(given, "prog")},
		{"not in the given PATH", []string{"PATH=" + other}, ""},
		{"relative entries ignored", []string{"PATH=.:" + other}, ""},
		{"no PATH", []string{"HOME=/"}, ""},
		{"nil env is ours", nil, filepath.Join(ours, "prog")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "relative entries ignored" {
				t.Chdir(given)
			}
			got, err := LookPath(c.env, "prog")
			if c.want == "" {
				if err == nil {
					t.Fatalf("LookPath = %q, want not found", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("LookPath = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestCommandKeepsName: the program runs from the path found in its own
// PATH, under the name it was given (what a shell passes as argv[0], and
// what an interpreter finds itself by).
func TestCommandKeepsName(t *testing.T) {
	env := []string{"PATH=/usr/bin:/bin"}
	cmd, err := Command(env, "sh", "-c", `echo "$0"`)
	if err != nil {
		t.Skipf("no sh in %s: %v", env[0], err)
	}
	if !filepath.IsAbs(cmd.Path) || cmd.Args[0] != "sh" {
		t.Fatalf("Path %q, Args[0] %q; want an absolute path and \"sh\"", cmd.Path, cmd.Args[0])
	}
	out, err := cmd.Output()
	if err != nil || string(out) != "sh\n" {
		t.Fatalf("output %q, %v; want \"sh\"", out, err)
	}
}

// TestHolders: both ends of an open pty are found, the master by its
// fdinfo's tty-index, and neither once closed.
func TestHolders(t *testing.T) {
	m, s := Open(t, 80, 24)
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	self := fmt.Sprintf("/proc/%d/fd/", os.Getpid())
	want := []string{self + strconv.Itoa(int(m.Fd())), self + strconv.Itoa(int(s.Fd()))}
	got := Holders(n)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("Holders(%d) = %v, missing %s", n, got, w)
		}
	}
	m.Close()
	s.Close()
	for _, l := range Holders(n) {
		if strings.HasPrefix(l, self) {
			t.Errorf("still held after close: %s", l)
		}
	}
}
