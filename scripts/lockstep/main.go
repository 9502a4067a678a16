// Command lockstep is the floor of driving a control/v1 subject in
// lockstep on this machine, for scripts/bench-wholerun.sh: it starts the
// subject with pipes, writes each line of a file to its stdin and waits
// for one line of its stdout before it writes the next, as a supervisor
// must (an input goes only after the previous epoch closed). Nothing else:
// no sandbox, no cgroup, no verification, no transcript, no receipts, no
// deadline. What `run --isolation none` costs beyond it is ours; what it
// costs beyond feeding the same lines from a file is the lockstep's own
// price (two process wake-ups per epoch) plus one small Go program's
// start.
//
//	lockstep LINES-FILE CMD [ARGS...]
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: lockstep LINES-FILE CMD [ARGS...]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep:", err)
		os.Exit(1)
	}
}

func run(linesFile string, argv []string) error {
	data, err := os.ReadFile(linesFile)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	r := bufio.NewReaderSize(stdout, 1<<16)
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		if _, err := stdin.Write(append(line, '\n')); err != nil {
			return err
		}
		// One reply line per line sent: session.ready for the hello, an
		// observation for each input (input.stop's run.finished follows
		// it and is read at the end).
		if _, err := r.ReadSlice('\n'); err != nil {
			return fmt.Errorf("reply: %w", err)
		}
	}
	stdin.Close()
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	return cmd.Wait()
}
