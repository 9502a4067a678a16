package main

import (
	"os"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// init is the binary's only init(): before cobra or main run, it hands the
// process to libcontainer's container setup (argv[1] == "init", after the
// cgo nsenter constructor has already joined the namespaces) or to our
// PID-1 reaper. Neither returns.
func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case sandbox.InitArg:
		sandbox.LibcontainerInit()
	case sandbox.ReaperArg:
		sandbox.ReaperMain()
	}
}
