package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestWantsCompletionCmd: cobra's `completion` command is built for every
// invocation except one of our own subcommands (its cost is on exec's and
// run's critical path), and still works where it is asked for.
func TestWantsCompletionCmd(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--help"}, true},
		{[]string{"-h"}, true},
		{[]string{"help"}, true},
		{[]string{"help", "run"}, true},
		{[]string{"completion", "bash"}, true},
		{[]string{"__complete", "r"}, true},
		{[]string{"no-such-command"}, true},
		{[]string{"run", "--request", "r.json"}, false},
		{[]string{"exec", "--", "/bin/true"}, false},
		{[]string{"validate", "t.jsonl"}, false},
		{[]string{"version"}, false},
	} {
		if got := wantsCompletionCmd(newRootCmd(), tc.args); got != tc.want {
			t.Errorf("wantsCompletionCmd(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
	// Where it is wanted it is there: the bash script and the command list.
	for _, args := range [][]string{{"completion", "bash"}, {"--help"}} {
		root := newRootCmd()
		root.CompletionOptions.DisableDefaultCmd = !wantsCompletionCmd(root, args)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		want := map[string]string{"completion": "bash completion V2", "--help": "completion"}[args[0]]
		if !strings.Contains(out.String(), want) {
			t.Errorf("%q: output lacks %q:\n%s", args, want, out.String())
		}
	}
	// And where it is not, it is absent.
	root := newRootCmd()
	root.CompletionOptions.DisableDefaultCmd = !wantsCompletionCmd(root, []string{"version"})
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			t.Errorf("a `version` invocation built the completion command")
		}
	}
}
