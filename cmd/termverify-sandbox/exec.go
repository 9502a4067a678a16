package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/netpolicy"
	"github.com/termverify/termverify-sandbox/sandbox"
)

// execOptions are exec's flags.
type execOptions struct {
	root    string
	rootfs  string
	network string
	allow   []string
	limits  limitFlags
	// scratchSize is the scratch root's size (--scratch-size), used
	// without --root and --rootfs.
	scratchSize string
	userns      bool
	stateDir    string
	verbose     bool
}

func newExecCmd() *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec [--root DIR | --rootfs DIR] [--network deny | --allow HOST:PORT ...] [--memory SIZE] [--pids N] -- CMD [ARGS...]",
		Short: "Run a command inside the sandbox run uses, its stdio relayed (a pty of its own on a terminal)",
		Long: `exec runs CMD inside exactly the sandbox that run builds: fresh root, the
mapped root read-write at /sandbox (the working directory), denied or
allow-listed network, dropped privileges, seccomp, cgroup limits. It prints
nothing of its own unless --verbose; its exit status is CMD's, or 128+N when
CMD died of signal N. Without --root or --rootfs the subject gets an empty
scratch root: a tmpfs of --scratch-size in the sandbox's own mount
namespace, on no host filesystem, gone when the sandbox ends (a crash of
exec included).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return &exitError{Code: exitUsage, Err: errors.New("exec: give the command after --")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.root, "root", "", "host directory mapped read-write at "+sandbox.Workdir)
	f.StringVar(&o.rootfs, "rootfs", "", "complete root filesystem (read-only) instead of the host's system directories")
	f.StringVar(&o.network, "network", "deny", "network policy: deny (allow-list is implied by --allow)")
	f.StringArrayVar(&o.allow, "allow", nil, "allow TCP to HOST:PORT (repeatable; implies the allow-list policy)")
	o.limits.register(f)
	f.StringVar(&o.scratchSize, "scratch-size", strconv.FormatInt(sandbox.DefaultLimits().ScratchBytes, 10), "size of the scratch root (a tmpfs at "+sandbox.Workdir+", charged to --memory) without --root and --rootfs; 0 for the tmpfs default (half of RAM)")
	f.BoolVar(&o.userns, "userns", false, "use a user namespace even as root (always used when not root)")
	f.StringVar(&o.stateDir, "state-dir", "", "state directory (default "+sandbox.DefaultStateDir()+")")
	f.BoolVar(&o.verbose, "verbose", false, "print what was applied (to stderr)")
	return cmd
}

// runExec turns the options into a sandbox.Spec and runs it.
func runExec(cmd *cobra.Command, o execOptions, args []string) error {
	spec, err := o.spec(args)
	if err != nil {
		return &exitError{Code: exitUsage, Err: termsafe.Error(err)}
	}
	errOut := cmd.ErrOrStderr()
	// After o.spec: the subject's environment is the caller's, as read.
	singlePInit()
	// Leftovers of a supervisor that was killed go first; our own live
	// sandboxes and other supervisors' are skipped by owner.
	if _, err := sandbox.Sweep(spec.StateDir); err != nil && o.verbose {
		fmt.Fprintf(errOut, "exec: sweep: %v\n", termsafe.Error(err))
	}
	// SIGINT, SIGTERM and SIGHUP do not end exec by their default action,
	// which would skip every cleanup: the first is passed on to the
	// subject (as a shell passes it to its foreground job), a second kills
	// the sandbox, and exec then ends as usual with the subject's status.
	// Registered before Start so that none is lost while the sandbox
	// starts. (SIGKILL cannot be caught: the next start's sweep removes
	// what it leaves.)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(sigs)
	// A write to a caller's stdout or stderr that nobody reads any more
	// must fail with EPIPE, not kill exec by SIGPIPE's default action
	// (which Go applies to fds 1 and 2): the relay then stops reading, so
	// the subject's next write fails as it would have without us.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, unix.SIGPIPE)
	defer signal.Stop(pipes)

	// The caller's stdio are never handed to the subject: libcontainer's
	// init fchowns whatever it gets as fds 0-2 to the subject's uid (a
	// root-only file redirected into exec became the subject's, and so did
	// the operator's terminal) and the subject's stty would change the
	// caller's terminal for good. exec relays instead, through pipes, or
	// through a pty of the sandbox's own when it runs on a terminal.
	relay, err := newStdioRelay(&spec, cmd.InOrStdin(), cmd.OutOrStdout(), errOut)
	if err != nil {
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", termsafe.Error(err))}
	}
	defer relay.close(errOut)
	box, err := sandbox.Start(context.Background(), spec)
	relay.started()
	if err != nil {
		if ee, ok := errors.AsType[*sandbox.ExecError](err); ok {
			return &exitError{Code: ee.Code, Err: termsafe.Error(err)}
		}
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", termsafe.Error(err))}
	}
	defer box.Destroy()
	done := make(chan struct{})
	defer close(done)
	go forwardSignals(box, sigs, done)
	// Said before the relay may put the caller's terminal in raw mode.
	for _, m := range box.Applied().Unenforced() {
		fmt.Fprintf(errOut, "exec: limit not enforced: %s (%s); --limits enforce refuses instead\n", m.Name, m.Reason)
	}
	if o.verbose {
		enc := json.NewEncoder(errOut)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Applied  sandbox.Applied  `json:"applied"`
			Evidence sandbox.Evidence `json:"evidence"`
		}{box.Applied(), box.Evidence()})
	}
	if err := relay.start(box); err != nil {
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", termsafe.Error(err))}
	}
	exit, err := box.Wait()
	if err != nil {
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", termsafe.Error(err))}
	}
	// Every process of the sandbox is gone once Wait returns (the init's
	// exit kills its PID namespace): what they wrote is in the pipes or the
	// pty, and is relayed before Destroy closes the pty.
	relay.drain()
	if err := box.Destroy(); err != nil {
		return &exitError{Code: 125, Err: fmt.Errorf("exec: %w", termsafe.Error(err))}
	}
	relay.close(errOut)
	if o.verbose {
		b, _ := json.Marshal(exit)
		fmt.Fprintf(errOut, "exec: subject exit %s\n", b)
	}
	if st := exit.ShellStatus(); st != 0 {
		return &exitError{Code: st}
	}
	return nil
}

// spec builds the sandbox.Spec.
func (o execOptions) spec(args []string) (sandbox.Spec, error) {
	s := sandbox.Spec{
		Args:          args,
		Env:           os.Environ(),
		StateDir:      o.stateDir,
		UserNamespace: o.userns,
	}
	s.Env = sandboxEnv(s.Env)
	var err error
	if s.Limits, err = o.limits.limits(); err != nil {
		return s, err
	}
	if s.Limits.ScratchBytes, err = parseSize(o.scratchSize); err != nil {
		return s, fmt.Errorf("--scratch-size: %w", err)
	}
	switch {
	case len(o.allow) > 0:
		if o.network != "deny" && o.network != string(netpolicy.AllowList) {
			return s, fmt.Errorf("--allow and --network %s conflict", o.network)
		}
		s.Network.Mode = netpolicy.AllowList
		for _, a := range o.allow {
			hp, err := netpolicy.ParseHostPort(a)
			if err != nil {
				return s, fmt.Errorf("--allow: %w", err)
			}
			s.Network.Allowed = append(s.Network.Allowed, hp)
		}
	case o.network == "deny":
		s.Network.Mode = netpolicy.Deny
	default:
		return s, fmt.Errorf("--network %q: want deny, or --allow HOST:PORT", o.network)
	}
	// Without --root or --rootfs the subject gets an empty scratch root
	// that lives and dies with the sandbox's state (swept after a crash).
	s.ScratchRoot = o.root == "" && o.rootfs == ""
	for _, p := range []*string{&o.root, &o.rootfs} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return s, err
			}
		}
	}
	s.Root, s.RootFS = o.root, o.rootfs
	return s, s.Validate()
}

// sandboxEnv keeps the caller's environment except what names host
// places the sandbox cannot see or should not learn.
func sandboxEnv(env []string) []string {
	var out []string
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		switch k {
		case "HOME", "PWD", "OLDPWD", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "TMPDIR":
			continue
		}
		out = append(out, e)
	}
	return append(out, "HOME="+sandbox.Workdir, "PWD="+sandbox.Workdir)
}

// singlePInit has libcontainer's container-setup process (this binary
// again, argv[1] == "init") start its Go runtime with one P. libcontainer
// passes our GOMAXPROCS to that process for this purpose, and its Init
// sets one P anyway, but only once the runtime and every package's init
// have run with one P per CPU. Until then each goroutine hand-off can
// wake a thread onto an idle vCPU, which a process this short pays for
// in wall time (docs/BENCHMARKS.md, "Start above libcontainer's floor").
// Only libcontainer reads the variable after this: exec calls it once the
// subject's environment (the caller's) was read; run, replay and batch
// never give the subject the caller's environment. This process's runtime
// read the variable at start. A GOMAXPROCS the caller set is left alone.
func singlePInit() {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		_ = os.Setenv("GOMAXPROCS", "1")
	}
}

// forwardSignals passes the first signal to the subject and kills the
// sandbox on the second, until done is closed.
func forwardSignals(box *sandbox.Sandbox, sigs <-chan os.Signal, done <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		case sig := <-sigs:
			if n == 0 {
				_ = box.Signal(sig.(unix.Signal))
			} else {
				_ = box.Kill()
			}
		}
	}
}

// stdioRelay connects the caller's stdio to the subject without handing
// any of the caller's files or its terminal to the sandbox.
type stdioRelay interface {
	// started runs right after sandbox.Start, successful or not: it drops
	// our copies of the subject's ends.
	started()
	// start begins relaying once the subject runs.
	start(box *sandbox.Sandbox) error
	// drain waits until the subject's output has been relayed to its end;
	// call it only after Wait returned (or Destroy).
	drain()
	// close releases everything and restores what was changed on the
	// caller's terminal, reporting a failure to restore on errOut. It is
	// idempotent.
	close(errOut io.Writer)
}

// newStdioRelay picks the relay and sets spec's stdio (or terminal) to
// the subject's side of it: a pty of the sandbox's own when both the
// caller's stdin and stdout are terminals (an interactive session), pipes
// otherwise. A terminal only on stdin (exec -- cmd > file) gets pipes: a
// pty would echo the typed input into the file and turn its newlines into
// CRLF.
func newStdioRelay(spec *sandbox.Spec, in io.Reader, out, errOut io.Writer) (stdioRelay, error) {
	inF, inOK := in.(*os.File)
	outF, outOK := out.(*os.File)
	if inOK && outOK && isTerminal(inF) && isTerminal(outF) {
		r, err := newTermRelay(inF, outF)
		if err != nil {
			return nil, err
		}
		spec.Terminal = r.size()
		return r, nil
	}
	r, err := newPipeRelay(in, out, errOut)
	if err != nil {
		return nil, err
	}
	spec.Stdin, spec.Stdout, spec.Stderr = r.subject[0], r.subject[1], r.subject[2]
	return r, nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// pipeRelay copies the caller's stdin into a pipe whose read end is the
// subject's stdin, and the subject's stdout and stderr pipes to the
// caller's. The subject's stdin is closed at the caller's EOF.
type pipeRelay struct {
	in          io.Reader
	out, errOut io.Writer
	subject     [3]*os.File // stdin read end, stdout and stderr write ends
	stdinW      *os.File
	outR, errR  *os.File
	outputs     []*outputRelay
	closeOnce   sync.Once
}

func newPipeRelay(in io.Reader, out, errOut io.Writer) (*pipeRelay, error) {
	r := &pipeRelay{in: in, out: out, errOut: errOut}
	var err error
	if r.subject[0], r.stdinW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if r.outR, r.subject[1], err = os.Pipe(); err != nil {
		r.close(nil)
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if r.errR, r.subject[2], err = os.Pipe(); err != nil {
		r.close(nil)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return r, nil
}

func (r *pipeRelay) started() {
	// The sandbox's init has its own copies; ours would keep the output
	// pipes from reaching EOF and the subject's stdin from seeing EPIPE.
	for _, f := range r.subject {
		_ = f.Close()
	}
}

func (r *pipeRelay) start(*sandbox.Sandbox) error {
	go func() {
		// Ends at the caller's EOF, or when the subject (and so every
		// reader) is gone: EPIPE. A caller's stdin that never ends leaves
		// this goroutine blocked in a read, which does not keep exec.
		_, _ = io.Copy(r.stdinW, r.in)
		_ = r.stdinW.Close()
	}()
	r.outputs = []*outputRelay{startOutput(r.out, r.outR), startOutput(r.errOut, r.errR)}
	return nil
}

func (r *pipeRelay) drain() {
	for _, o := range r.outputs {
		o.finish()
	}
}

func (r *pipeRelay) close(io.Writer) {
	r.closeOnce.Do(func() {
		for _, f := range append(r.subject[:], r.stdinW, r.outR, r.errR) {
			if f != nil {
				_ = f.Close()
			}
		}
	})
}

// outputRelay copies the subject's output (a pipe's read end, or the
// pty master) to the caller.
type outputRelay struct {
	dst    io.Writer
	src    *os.File
	buf    []byte
	done   chan struct{}
	failed bool // dst failed and src is closed; set before done closes
}

// startOutput relays src to dst in a goroutine until src ends or dst
// fails. When dst fails (its reader went away) src is closed at once, so
// the subject's next write gets EPIPE (SIGPIPE) as it would have on the
// caller's own pipe.
func startOutput(dst io.Writer, src *os.File) *outputRelay {
	o := &outputRelay{dst: dst, src: src, buf: make([]byte, 32<<10), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for {
			n, err := src.Read(o.buf)
			if n > 0 {
				if _, werr := dst.Write(o.buf[:n]); werr != nil {
					o.failed = true
					_ = src.Close()
					return
				}
			}
			if err != nil {
				return // EOF, EIO (pty), or finish's deadline
			}
		}
	}()
	return o
}

// finish is called once every process of the sandbox has ended: it
// relays what src still holds and returns. It does not wait for EOF,
// because whoever else holds a write end (the subject can pass its stdout
// out through a unix socket in the mapped root) could withhold it for
// ever; what the sandbox's processes wrote is all in the buffer by now.
func (o *outputRelay) finish() {
	_ = o.src.SetReadDeadline(time.Now()) // wakes a blocked Read
	<-o.done
	if o.failed {
		return
	}
	_ = o.src.SetReadDeadline(time.Time{})
	rc, err := o.src.SyscallConn()
	if err != nil {
		return
	}
	for {
		var n int
		var rerr error
		// One non-blocking read per call (src is non-blocking: a pipe of
		// os.Pipe or the master as package sandbox hands it out): EAGAIN
		// means the buffer is empty, 0 or EIO that every writer is gone.
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), o.buf)
			return true
		}); err != nil || rerr != nil || n <= 0 {
			return
		}
		if _, err := o.dst.Write(o.buf[:n]); err != nil {
			return
		}
	}
}

// termRelay runs the subject on a pty of the sandbox's own devpts and
// relays between its master and the caller's terminal, which is raw while
// the subject runs (keys, ^C included, go to the subject's terminal, whose
// line discipline and modes are the subject's business) and gets its
// exact termios back afterwards. The caller's window size is passed in at
// the start and on every SIGWINCH. What the subject prints is relayed as
// is.
type termRelay struct {
	in, out   *os.File // the caller's terminal (stdin, stdout)
	inFd      int
	saved     *unix.Termios // the caller's modes, restored by close
	raw       bool
	winch     chan os.Signal
	stop      chan struct{}
	output    *outputRelay
	closeOnce sync.Once
}

func newTermRelay(in, out *os.File) (*termRelay, error) {
	fd := int(in.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("terminal modes of stdin: %w", err)
	}
	r := &termRelay{in: in, out: out, inFd: fd, saved: saved, winch: make(chan os.Signal, 1), stop: make(chan struct{})}
	// Registered before the size is read, so that no resize is missed
	// while the sandbox starts.
	signal.Notify(r.winch, unix.SIGWINCH)
	return r, nil
}

// size is the caller's terminal size (zero when the terminal does not
// know it; the sandbox's pty then keeps the kernel's default).
func (r *termRelay) size() *sandbox.TerminalSize {
	ws, err := unix.IoctlGetWinsize(r.inFd, unix.TIOCGWINSZ)
	if err != nil {
		return &sandbox.TerminalSize{}
	}
	return &sandbox.TerminalSize{Rows: ws.Row, Cols: ws.Col}
}

func (r *termRelay) started() {}

func (r *termRelay) start(box *sandbox.Sandbox) error {
	master := box.Console()
	if master == nil {
		return errors.New("the sandbox has no terminal")
	}
	raw := *r.saved
	makeRaw(&raw)
	if err := unix.IoctlSetTermios(r.inFd, unix.TCSETS, &raw); err != nil {
		return fmt.Errorf("raw mode on the caller's terminal: %w", err)
	}
	r.raw = true
	resize := func() {
		if sz := r.size(); sz.Rows != 0 && sz.Cols != 0 {
			_ = box.ResizeConsole(*sz)
		}
	}
	resize() // a resize while the sandbox started
	go func() {
		for {
			select {
			case <-r.stop:
				return
			case <-r.winch:
				resize()
			}
		}
	}()
	go func() {
		// The caller's keys to the subject. At the caller's EOF (its
		// terminal hung up) nothing is sent: closing the master would hang
		// up the subject's terminal, which SIGHUP forwarding already does.
		_, _ = io.Copy(master, r.in)
	}()
	r.output = startOutput(r.out, master)
	return nil
}

func (r *termRelay) drain() {
	if r.output != nil {
		r.output.finish()
	}
}

func (r *termRelay) close(errOut io.Writer) {
	r.closeOnce.Do(func() {
		signal.Stop(r.winch)
		close(r.stop)
		if !r.raw {
			return
		}
		if err := unix.IoctlSetTermios(r.inFd, unix.TCSETS, r.saved); err != nil && errOut != nil {
			fmt.Fprintf(errOut, "exec: restore the terminal's modes: %v\n", err)
		}
	})
}

// makeRaw is cfmakeraw(3): no input or output processing, no echo, no
// line editing, no signal characters, 8-bit characters, reads return
// after one byte.
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}
