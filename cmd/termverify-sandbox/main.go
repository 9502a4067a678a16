// Command termverify-sandbox is the OS tier for termverify: it runs a subject
// inside Linux namespaces, drives it over termverify.control/v1 and records a
// termverify.transcript/v1 transcript with honest capability receipts.
//
// This file only decides the process exit status; every command lives in its
// own file and returns errors (or an *exitError) instead of exiting.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a command's chosen exit status to main, the one place
// that calls os.Exit. A nil Err means the command already said what it had to.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// Exit statuses shared by the commands. A command may also return the
// subject's own status (exec) through an *exitError.
const (
	exitOK     = 0
	exitFailed = 1 // the checked thing was invalid, the run failed, policy not met
	exitUsage  = 2 // bad flags or arguments, or a host/I-O error with no result
)

func main() {
	root := newRootCmd()
	root.CompletionOptions.DisableDefaultCmd = !wantsCompletionCmd(root, os.Args[1:])
	err := root.Execute()
	if err == nil {
		os.Exit(exitOK)
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		if ee.Err != nil {
			fmt.Fprintf(os.Stderr, "termverify-sandbox: %v\n", ee.Err)
		}
		os.Exit(ee.Code)
	}
	fmt.Fprintf(os.Stderr, "termverify-sandbox: %v\n", err)
	os.Exit(exitUsage)
}

// wantsCompletionCmd says whether cobra's default `completion` command
// should exist for this invocation: always, except when args name one of
// our own subcommands (as cobra's own Find resolves them). Cobra builds
// that command (four shells, their help texts and flags) on every Execute,
// touching dozens of fresh pages on every start of this binary, which exec
// and run pay on their critical path. `completion`, help, completion
// requests (`__complete`) and a bare invocation keep it (none of them is
// a command yet when this runs), so the scripts and the command list are
// unchanged.
func wantsCompletionCmd(root *cobra.Command, args []string) bool {
	c, _, err := root.Find(args)
	return err != nil || c == root
}
