package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/netpolicy"
	"github.com/termverify/termverify-sandbox/term"
	"github.com/termverify/termverify-sandbox/vt"
)

// termStartWait bounds how long `term start` waits for its daemon to
// listen; it answers within 2 s on a healthy host (docs/TERM.md), and a slow host gets
// the rest of the margin before the start counts as failed.
const termStartWait = 5 * time.Second

func newTermCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "term",
		Short: "Drive an interactive program inside the sandbox over interminai's socket protocol",
		Long: `term runs one interactive program (vim, git rebase -i, gdb, a REPL) on a
terminal inside the OS sandbox, behind a Unix socket that speaks
interminai's protocol. "term start" starts the daemon; the other
subcommands are its clients.`,
	}
	// Every term error is "Error: …" on stderr with status 1, as
	// interminai's are, flag errors included.
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return termFail(cmd, err) })
	c.AddCommand(newTermStartCmd(), newTermInputCmd(), newTermOutputCmd(), newTermStatusCmd(),
		newTermWaitCmd(), newTermKillCmd(), newTermResizeCmd(), newTermDebugCmd(), newTermReceiptsCmd(), newTermStopCmd(), newTermMCPCmd())
	return c
}

// termFail prints err as interminai does and returns status 1.
func termFail(cmd *cobra.Command, err error) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "Error: %v\n", err)
	return &exitError{Code: exitFailed}
}

type termStartOptions struct {
	socket     string
	size       string
	scrollback int
	noDaemon   bool
	stateDir   string
	ptyDump    string
	transcript string
	emulator   string
	debugBuf   int
	readyFD    int
	write      []string
	read       []string
	allow      []string
	limits     limitFlags
	isolation  string
}

func newTermStartCmd() *cobra.Command {
	var o termStartOptions
	c := &cobra.Command{
		Use:   "start [--socket PATH] [--size COLSxROWS] [--scrollback N] [--no-daemon] -- CMD [ARGS...]",
		Short: "Start CMD in the sandbox on a terminal served at a Unix socket",
		Long: `start runs CMD inside the sandbox, in the working directory, which the
program sees read-write at its own path; --write DIR and --read DIR add
more, and $TMPDIR is writable at its path when it is the caller's own
(a shared one, such as /tmp, is replaced by the sandbox's private /tmp).
What the program writes there belongs to the caller (the user sudo ran
this for, else the caller's own ids); the program itself runs as an
unprivileged uid of the sandbox's.
The rest is the sandbox's default: the host's system directories
read-only, no home, no network. It serves the terminal at a Unix socket (0600;
without --socket, in a fresh 0700 $TMPDIR/interminai-XXXX/ directory).
It prints "Socket: PATH", "PID: N" and "Auto-generated: true|false" once
the socket listens. The daemon runs in the background unless --no-daemon.

--isolation os (the default) starts the program in the sandbox or not at
all. --isolation auto does the same where namespaces can be made; where
they cannot, it runs the program without the sandbox, on a terminal of
the host's, and says so: a warning on stderr, "isolation none" on the
Sandbox line of term status, and "delivered" receipts with the reason.`,
		RunE: func(cmd *cobra.Command, args []string) error { return runTermStart(cmd, o, args) },
	}
	f := c.Flags()
	f.StringVar(&o.socket, "socket", "", "socket path (default: a fresh $TMPDIR/interminai-XXXX/socket)")
	f.StringVar(&o.size, "size", "80x24", "terminal size COLSxROWS")
	f.IntVar(&o.scrollback, "scrollback", term.DefaultScrollback, "scrollback lines kept")
	f.BoolVar(&o.noDaemon, "no-daemon", false, "serve in the foreground")
	f.StringVar(&o.stateDir, "state-dir", "", "sandbox state directory (default the sandbox's)")
	f.StringVar(&o.ptyDump, "pty-dump", "", "write the raw bytes the program printed to FILE, complete once stopped")
	f.StringVar(&o.transcript, "transcript", "", "record the session to FILE as a termverify.transcript/v1 transcript in run --pty's shape, for replay --pty (docs/TERM.md); written whole once the session ends")
	f.IntVar(&o.debugBuf, "debug-buffer", term.DefaultDebugBuffer, "how many unhandled escape sequences debug returns at most (the emulator keeps the last 64)")
	f.StringVar(&o.emulator, "emulator", "xterm", "xterm or custom: accepted for interminai's compatibility; one emulator serves both")
	f.StringArrayVar(&o.write, "write", nil, "a host directory the program may write, at its own path (repeatable)")
	f.StringArrayVar(&o.read, "read", nil, "a host directory the program may read, at its own path (repeatable)")
	f.StringArrayVar(&o.allow, "allow", nil, "allow TCP to HOST:PORT (repeatable); without it there is no network")
	f.StringVar(&o.isolation, "isolation", string(term.IsolationOS), "os (the sandbox, or no start) or auto (without the sandbox, said so, where namespaces cannot be made)")
	o.limits.register(f)
	f.IntVar(&o.readyFD, "ready-fd", 0, "")
	_ = f.MarkHidden("ready-fd")
	return c
}

func runTermStart(cmd *cobra.Command, o termStartOptions, args []string) error {
	if len(args) == 0 {
		return termFail(cmd, errors.New("the following required arguments were not provided: -- CMD [ARGS...]"))
	}
	if o.emulator != "xterm" && o.emulator != "custom" {
		return termFail(cmd, fmt.Errorf("--emulator %q: want xterm or custom", o.emulator))
	}
	size, err := interminai.ParseSize(o.size)
	if err != nil {
		return termFail(cmd, err)
	}
	isolation, err := term.ParseIsolation(o.isolation)
	if err != nil {
		return termFail(cmd, err)
	}
	scroll := o.scrollback
	if scroll == 0 {
		scroll = -1 // no scrollback, not the default
	}
	// Said once the daemon is up, by the command the caller ran (the
	// re-executed daemon's stderr is /dev/null), after the three lines:
	// an error stays "Error: ..." alone.
	warn := func() {
		if o.readyFD != 0 {
			return
		}
		for _, w := range term.Warnings("", os.Environ()) {
			fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %s\n", w)
		}
	}
	if !o.noDaemon {
		if err := termDaemonize(cmd, o, args); err != nil {
			return err
		}
		warn()
		return nil
	}
	write, err := absDirs(o.write)
	if err != nil {
		return termFail(cmd, fmt.Errorf("--write: %w", err))
	}
	read, err := absDirs(o.read)
	if err != nil {
		return termFail(cmd, fmt.Errorf("--read: %w", err))
	}
	limits, err := o.limits.limits()
	if err != nil {
		return termFail(cmd, err)
	}
	var allow []netpolicy.HostPort
	for _, a := range o.allow {
		hp, err := netpolicy.ParseHostPort(a)
		if err != nil {
			return termFail(cmd, fmt.Errorf("--allow: %w", err))
		}
		allow = append(allow, hp)
	}
	cfg := term.Config{Args: args, Env: os.Environ(), Write: write, Read: read, Allow: allow, Limits: &limits,
		Cols: size.Cols, Rows: size.Rows, Scrollback: scroll, StateDir: o.stateDir, PTYDump: o.ptyDump, DebugBuffer: o.debugBuf,
		Transcript: o.transcript, Isolation: isolation}
	// Said after the three lines: on stderr, or in daemon mode on the
	// ready pipe, whose "Warning: " lines the starting command puts on
	// its stderr.
	var downgrade string
	cfg.OnDowngrade = func(reason string, cause error) { downgrade = term.DowngradeWarning(reason, cause) }
	out := cmd.OutOrStdout()
	var ready *os.File
	if o.readyFD > 0 {
		ready = os.NewFile(uintptr(o.readyFD), "ready")
		out = ready
	}
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer stop()
	err = term.Run(ctx, cfg, o.socket, func(s *term.Socket) error {
		_, err := fmt.Fprintf(out, "Socket: %s\nPID: %d\nAuto-generated: %t\n", s.Path, os.Getpid(), s.Auto)
		if downgrade != "" {
			w := cmd.ErrOrStderr()
			if ready != nil {
				w = ready
			}
			fmt.Fprintf(w, "Warning: %s\n", downgrade)
		}
		warn()
		if ready != nil {
			// EOF tells the parent the lines are complete.
			err = errors.Join(err, ready.Close())
			ready = nil
		}
		return err
	})
	if err != nil {
		if ready != nil {
			fmt.Fprintf(ready, "Error: %v\n", err)
			ready.Close()
		}
		return termFail(cmd, err)
	}
	return nil
}

// termDaemonize starts this binary again as the daemon, in a session of
// its own (Go cannot fork), and prints what it announces once its socket
// listens: its three lines, or its error.
func termDaemonize(cmd *cobra.Command, o termStartOptions, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return termFail(cmd, fmt.Errorf("find this binary: %w", err))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return termFail(cmd, err)
	}
	defer r.Close()
	argv := []string{"term", "start", "--no-daemon", "--ready-fd", "3", "--isolation", o.isolation,
		"--size", o.size, "--scrollback", strconv.Itoa(o.scrollback), "--debug-buffer", strconv.Itoa(o.debugBuf)}
	if o.socket != "" {
		argv = append(argv, "--socket", o.socket)
	}
	if o.stateDir != "" {
		argv = append(argv, "--state-dir", o.stateDir)
	}
	if o.ptyDump != "" {
		argv = append(argv, "--pty-dump", o.ptyDump)
	}
	if o.transcript != "" {
		argv = append(argv, "--transcript", o.transcript)
	}
	for _, w := range o.write {
		argv = append(argv, "--write", w)
	}
	for _, r := range o.read {
		argv = append(argv, "--read", r)
	}
	for _, a := range o.allow {
		argv = append(argv, "--allow", a)
	}
	l := o.limits
	argv = append(argv, "--memory", l.memory, "--pids", strconv.FormatInt(l.pids, 10), "--cpus", strconv.FormatFloat(l.cpus, 'g', -1, 64),
		"--file-size", l.fileSize, "--tmp-size", l.tmpSize, "--limits", l.mode)
	child := exec.Command(exe, append(append(argv, "--"), args...)...)
	child.ExtraFiles = []*os.File{w}
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = child.Start()
	w.Close()
	if err != nil {
		return termFail(cmd, fmt.Errorf("start the daemon: %w", err))
	}
	_ = r.SetReadDeadline(time.Now().Add(termStartWait))
	said, err := io.ReadAll(r)
	text := string(said)
	switch {
	case strings.HasPrefix(text, "Socket: "):
		_ = child.Process.Release()
		// The three lines on stdout; the daemon's warnings (a
		// downgrade) on stderr.
		var said, warned strings.Builder
		for _, line := range strings.SplitAfter(text, "\n") {
			if strings.HasPrefix(line, "Warning: ") {
				warned.WriteString(line)
			} else {
				said.WriteString(line)
			}
		}
		io.WriteString(cmd.ErrOrStderr(), warned.String())
		_, err := io.WriteString(cmd.OutOrStdout(), said.String())
		return err
	case strings.HasPrefix(text, "Error: "):
		_ = child.Wait()
		fmt.Fprint(cmd.ErrOrStderr(), text)
		return &exitError{Code: exitFailed}
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	if err == nil {
		err = errors.New("it ended without a word")
	}
	return termFail(cmd, fmt.Errorf("the daemon did not start: %w", err))
}

// termClient is the options every client subcommand shares.
type termClient struct {
	socket string
}

func (tc *termClient) flags(c *cobra.Command) {
	c.Flags().StringVar(&tc.socket, "socket", "", "the daemon's socket (required)")
}

// call sends one request and returns the reply; a missing socket says
// "No such file", as interminai's clients do.
func (tc *termClient) call(ctx context.Context, req interminai.Request) (interminai.Reply, error) {
	if tc.socket == "" {
		return interminai.Reply{}, errors.New("the --socket option is required")
	}
	rep, err := interminai.Call(ctx, tc.socket, req)
	if errors.Is(err, unix.ENOENT) {
		return rep, termError("No such file: socket " + tc.socket)
	}
	return rep, err
}

// termError is an error in interminai's words, which its users match
// (capitalised, unlike ours).
type termError string

func (e termError) Error() string { return string(e) }

// termRequestWait bounds a client request that does not wait by design.
const termRequestWait = 30 * time.Second

func termCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), termRequestWait)
}

func newTermInputCmd() *cobra.Command {
	var tc termClient
	var text string
	var password bool
	c := &cobra.Command{
		Use:   "input --socket PATH [--text STRING | --password]",
		Short: "Type into the program: --text with escapes, a --password, else stdin verbatim",
		Long: `input writes to the program's terminal: --text STRING with the escapes
\n \r \t \a \b \f \v \\ \e \E \xHH (others pass through unchanged), or
else the bytes on stdin, verbatim. --password reads a secret from this
command's own terminal (stdin) with echo disabled, showing "Type your
secret or password" and the program's prompt line, and sends it with a
CR; the secret never appears on any command line or screen. Without a
terminal it fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := termCtx()
			defer cancel()
			var data string
			switch {
			case password:
				var err error
				if data, err = tc.readSecret(ctx, cmd); err != nil {
					return termFail(cmd, err)
				}
			case cmd.Flags().Changed("text"):
				data = interminai.DecodeText(text)
			default:
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return termFail(cmd, fmt.Errorf("read stdin: %w", err))
				}
				data = string(b)
			}
			// A person may take longer than one call's bound to type a
			// secret (or to end stdin): the INPUT gets a bound of its own.
			ictx, icancel := termCtx()
			defer icancel()
			if _, err := tc.call(ictx, &interminai.Input{Data: data}); err != nil {
				return termFail(cmd, err)
			}
			return nil
		},
	}
	tc.flags(c)
	c.Flags().StringVar(&text, "text", "", "text to type, with escapes (wins over stdin)")
	c.Flags().BoolVar(&password, "password", false, "read a secret from the terminal with echo disabled, and send it with a CR")
	return c
}

// readSecret asks for the secret on stdin's terminal, with the program's
// prompt line (the cursor's line) for context, and reads it with echo,
// canonical mode and signals off (so Ctrl-C is a key that cancels, not a
// death that would leave the terminal without echo), restoring them after.
func (tc *termClient) readSecret(ctx context.Context, cmd *cobra.Command) (string, error) {
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok {
		return "", errors.New("input --password needs a terminal: stdin is not one")
	}
	fd := int(in.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", fmt.Errorf("input --password needs a terminal: stdin is not one (%w)", err)
	}
	var screen interminai.OutputData
	if err := tc.data(ctx, &interminai.Output{Format: interminai.FormatASCII}, &screen); err != nil {
		return "", err
	}
	lines := strings.Split(screen.Screen, "\n")
	prompt := ""
	if r := screen.Cursor.Row; r >= 0 && r < len(lines) {
		prompt = strings.TrimSpace(lines[r])
	}
	quiet := *saved
	quiet.Lflag &^= unix.ECHO | unix.ICANON | unix.ISIG
	quiet.Cc[unix.VMIN], quiet.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", fmt.Errorf("turn echo off: %w", err)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, saved)
	errOut := cmd.ErrOrStderr()
	fmt.Fprintf(errOut, "Type your secret or password (echo disabled) for: %s\n", prompt)
	secret, err := readSecretLine(in)
	fmt.Fprintln(errOut)
	if err != nil {
		return "", err
	}
	return secret + "\r", nil
}

// readSecretLine reads keys up to Enter, with Backspace and Ctrl-U
// editing; Ctrl-C or Ctrl-D on an empty line cancel.
func readSecretLine(in io.Reader) (string, error) {
	var line []byte
	var b [1]byte
	for {
		if _, err := in.Read(b[:]); err != nil {
			return "", fmt.Errorf("read the secret: %w", err)
		}
		switch c := b[0]; {
		case c == '\r' || c == '\n':
			return string(line), nil
		case c == 0x03 || (c == 0x04 && len(line) == 0):
			return "", errors.New("cancelled: nothing was sent")
		case c == 0x7f || c == 0x08:
			if len(line) > 0 {
				line = line[:len(line)-1]
			}
		case c == 0x15:
			line = line[:0]
		default:
			line = append(line, c)
		}
	}
}

func newTermOutputCmd() *cobra.Command {
	var tc termClient
	var noColor, number bool
	var from, to, cursor string
	c := &cobra.Command{
		Use:   "output --socket PATH [--no-color] [-n] [--cursor none|print] [--from N|-N|-] [--to N]",
		Short: "Print the screen (and scrollback lines with --from)",
		Long: `output prints the screen, in colour unless --no-color (then with no
escape sequence at all). --from and --to take the seed's line numbers:
negative lines are the scrollback, positive ones the screen, 0 the
boundary between them, and "-" the oldest line. -n puts a space, the
1-based line number zero-padded to the width of the last one, and a TAB
before each line. --cursor print puts "Cursor: row R, col C" (1-based)
first; --cursor inverse shows the cell under the cursor in reverse video
(ESC[7m…ESC[27m; not with --no-color, which prints no escape at all);
--cursor both does both.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch cursor {
			case "none", "print", "inverse", "both":
			default:
				return termFail(cmd, fmt.Errorf("--cursor %q: want none, print, inverse or both", cursor))
			}
			req := &interminai.Output{Format: interminai.FormatANSI}
			if noColor {
				req.Format = interminai.FormatASCII
			}
			var err error
			if req.From, err = termLine("from", from); err != nil {
				return termFail(cmd, err)
			}
			if req.To, err = termLine("to", to); err != nil {
				return termFail(cmd, err)
			}
			ctx, cancel := termCtx()
			defer cancel()
			rep, err := tc.call(ctx, req)
			if err != nil {
				return termFail(cmd, err)
			}
			var out interminai.OutputData
			if err := rep.DecodeData(&out); err != nil {
				return termFail(cmd, fmt.Errorf("read the reply: %w", err))
			}
			if (cursor == "inverse" || cursor == "both") && !noColor {
				out.Screen = markCursor(out, true)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), termView(out, number, cursor == "print" || cursor == "both"))
			return err
		},
	}
	tc.flags(c)
	c.Flags().BoolVar(&noColor, "no-color", false, "plain text, no escape sequence at all")
	c.Flags().BoolVarP(&number, "number", "n", false, "number the lines")
	c.Flags().StringVar(&cursor, "cursor", "none", "none, print (a first line saying where it is), inverse (its cell in reverse video) or both")
	c.Flags().StringVar(&from, "from", "", "first line: N on the screen, -N in the scrollback, - the oldest")
	c.Flags().StringVar(&to, "to", "", "last line (0: the last scrollback line)")
	return c
}

// termView is OUTPUT's screen as `term output` shows it: with the cursor's
// 1-based position first (unnumbered), and each line numbered.
func termView(out interminai.OutputData, number, cursor bool) string {
	var b strings.Builder
	if cursor {
		fmt.Fprintf(&b, "Cursor: row %d, col %d\n", out.Cursor.Row+1, out.Cursor.Col+1)
	}
	if !number {
		b.WriteString(out.Screen)
		return b.String()
	}
	lines := strings.SplitAfter(out.Screen, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	width := len(strconv.Itoa(len(lines)))
	for i, l := range lines {
		fmt.Fprintf(&b, " %0*d\t%s", width, i+1, l)
	}
	return b.String()
}

// termLine is an OUTPUT bound as --from and --to give it: "" the
// default, "-" the oldest scrollback line, else a line number.
func termLine(flag, v string) (interminai.Line, error) {
	switch v {
	case "":
		return interminai.Line{}, nil
	case "-":
		return interminai.Line{Kind: interminai.LineOldest}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return interminai.Line{}, fmt.Errorf("--%s %q: want a line number or -", flag, v)
	}
	return interminai.Line{Kind: interminai.LineNumber, N: n}, nil
}

// data is the call's reply data, decoded into v.
func (tc *termClient) data(ctx context.Context, req interminai.Request, v any) error {
	rep, err := tc.call(ctx, req)
	if err != nil {
		return err
	}
	if err := rep.DecodeData(v); err != nil {
		return fmt.Errorf("read the reply: %w", err)
	}
	return nil
}

// quietStatus is the exit status of `status --quiet` for an ended
// program: its own, and 1 when that was 0, since 0 means "running".
func quietStatus(code int) int {
	if code == 0 {
		return exitFailed
	}
	return code
}

func newTermStatusCmd() *cobra.Command {
	var tc termClient
	var quiet bool
	c := &cobra.Command{
		Use:   "status --socket PATH [--quiet]",
		Short: "Say whether the program runs, whether it printed since the last look, and its exit code",
		Long: `status prints "Running: true|false", "Activity: true|false" (output
since the last look; reading clears it), "Sandbox: ..." (the isolation and
the tiers of the filesystem, network and terminal, as receipts gives them)
and, once the program has ended, "Exit code: N" (followed by "Exit
unobserved: WHY" when the sandbox's init died without reporting the
program's end, so that N is a stand-in). With --quiet it prints
nothing and exits 0 while the program runs, and with the program's exit
code (1 for 0) after.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := termCtx()
			defer cancel()
			var st interminai.StatusData
			if err := tc.data(ctx, &interminai.Status{Activity: !quiet}, &st); err != nil {
				return termFail(cmd, err)
			}
			if quiet {
				if st.Running || st.ExitCode == nil {
					return nil
				}
				return &exitError{Code: quietStatus(*st.ExitCode)}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Running: %t\n", st.Running)
			fmt.Fprintf(out, "Activity: %t\n", st.Activity != nil && *st.Activity)
			if sb := st.Sandbox; sb != nil {
				fmt.Fprintf(out, "Sandbox: %s\n", sb.Summary())
			}
			st.ExitUnobserved = termsafe.String(st.ExitUnobserved)
			_, err := io.WriteString(out, st.ExitLines())
			return err
		},
	}
	tc.flags(c)
	c.Flags().BoolVar(&quiet, "quiet", false, "no output; the exit status says it")
	return c
}

func newTermWaitCmd() *cobra.Command {
	var tc termClient
	var quiet, settled bool
	var contains string
	var line, timeoutMS int
	c := &cobra.Command{
		Use:   "wait --socket PATH [--quiet | --settled | --contains TEXT [--line N]] [--timeout MS]",
		Short: "Wait for output, the program's exit, its next wait for input, or a text on the screen",
		Long: `wait blocks until the program prints or ends, and prints
"Terminal activity: true|false" and "Application exited: true|false".
With --quiet it waits for the exit alone and prints the exit code.
With --settled it waits until the program waits for input again (by the
kernel's state, quiesce's rule: no guessing with sleeps) and prints the
screen. With --contains TEXT it waits until the screen shows TEXT (on
screen line N with --line) and prints the screen. --timeout bounds any
of them (then it fails). Other clients are served meanwhile.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n := btoi(quiet) + btoi(settled) + btoi(contains != ""); n > 1 {
				return termFail(cmd, errors.New("--quiet, --settled and --contains exclude one another"))
			}
			out := cmd.OutOrStdout()
			req := &interminai.Wait{Activity: !quiet && !settled && contains == "", Settled: settled, Contains: contains, Line: line}
			if cmd.Flags().Changed("timeout") {
				req.Timeout, req.HasTimeout = time.Duration(timeoutMS)*time.Millisecond, true
			}
			var err error
			switch {
			case settled:
				var st term.SettledData
				if err = tc.data(context.Background(), req, &st); err == nil {
					_, err = io.WriteString(out, st.Screen)
				}
			case contains != "":
				var st term.ContainsData
				if err = tc.data(context.Background(), req, &st); err == nil {
					if !st.Found {
						return termFail(cmd, errors.New("the program ended before the screen showed the text"))
					}
					_, err = io.WriteString(out, st.Screen)
				}
			case quiet:
				var st interminai.WaitExitData
				if err = tc.data(context.Background(), req, &st); err == nil {
					fmt.Fprintf(out, "%d\n", st.ExitCode)
					if st.ExitUnobserved != "" {
						fmt.Fprintf(cmd.ErrOrStderr(), "Warning: the program's end was not observed (%s): %d is not its status\n", termsafe.String(st.ExitUnobserved), st.ExitCode)
					}
				}
			default:
				var st interminai.WaitActivityData
				if err = tc.data(context.Background(), req, &st); err == nil {
					fmt.Fprintf(out, "Terminal activity: %t\n", st.Activity)
					fmt.Fprintf(out, "Application exited: %t\n", st.Exited)
				}
			}
			if err != nil {
				return termFail(cmd, err)
			}
			return nil
		},
	}
	tc.flags(c)
	f := c.Flags()
	f.BoolVar(&quiet, "quiet", false, "wait for the exit alone and print the exit code")
	f.BoolVar(&settled, "settled", false, "wait until the program waits for input again, and print the screen")
	f.StringVar(&contains, "contains", "", "wait until the screen shows this text, and print the screen")
	f.IntVar(&line, "line", 0, "with --contains: on this 1-based screen line")
	f.IntVar(&timeoutMS, "timeout", 0, "give up after this many milliseconds")
	return c
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newTermKillCmd() *cobra.Command {
	var tc termClient
	var sig string
	c := &cobra.Command{
		Use:   "kill --socket PATH [--signal NAME|NUMBER]",
		Short: "Send the program a signal (SIGTERM by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := interminai.ParseSignal(sig)
			if err != nil {
				return termFail(cmd, err)
			}
			ctx, cancel := termCtx()
			defer cancel()
			var out interminai.KillData
			if err := tc.data(ctx, &interminai.Kill{Signal: s}, &out); err != nil {
				return termFail(cmd, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Sent %s\n", out.SignalSent)
			return nil
		},
	}
	tc.flags(c)
	c.Flags().StringVar(&sig, "signal", "SIGTERM", "signal name (SIGINT, INT) or number")
	return c
}

func newTermResizeCmd() *cobra.Command {
	var tc termClient
	var size string
	c := &cobra.Command{
		Use:   "resize --socket PATH --size COLSxROWS",
		Short: "Resize the program's terminal (SIGWINCH) and the screen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sz, err := interminai.ParseSize(size)
			if err != nil {
				return termFail(cmd, err)
			}
			ctx, cancel := termCtx()
			defer cancel()
			if _, err := tc.call(ctx, &interminai.Resize{Size: sz}); err != nil {
				return termFail(cmd, err)
			}
			return nil
		},
	}
	tc.flags(c)
	c.Flags().StringVar(&size, "size", "", "the new size, COLSxROWS")
	return c
}

func newTermDebugCmd() *cobra.Command {
	var tc termClient
	var clear bool
	c := &cobra.Command{
		Use:   "debug --socket PATH [--clear]",
		Short: "Show the escape sequences the emulator did not handle, and the terminal's settings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := termCtx()
			defer cancel()
			var d interminai.DebugData
			if err := tc.data(ctx, &interminai.Debug{Clear: clear}, &d); err != nil {
				return termFail(cmd, err)
			}
			_, err := io.WriteString(cmd.OutOrStdout(), termDebugView(d))
			return err
		},
	}
	tc.flags(c)
	c.Flags().BoolVar(&clear, "clear", false, "forget the sequences returned")
	return c
}

// termDebugView is DEBUG's data as text.
func termDebugView(d interminai.DebugData) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unhandled sequences: %d (dropped %d)\n", len(d.Unhandled), d.Dropped)
	for _, u := range d.Unhandled {
		fmt.Fprintf(&b, "  %s\t%s\n", u.Sequence, u.RawHex)
	}
	t := d.Termios
	fmt.Fprintf(&b, "Mode: %s\nFlags: %s\n", t.Mode, strings.Join(t.Flags, " "))
	fmt.Fprintf(&b, "iflag %s oflag %s lflag %s cflag %s\n", t.Hex.Iflag, t.Hex.Oflag, t.Hex.Lflag, t.Hex.Cflag)
	names := slices.Sorted(maps.Keys(t.CC))
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%s ", n, t.CC[n])
	}
	b.WriteString("\n")
	return b.String()
}

func newTermReceiptsCmd() *cobra.Command {
	var tc termClient
	var asJSON bool
	c := &cobra.Command{
		Use:   "receipts --socket PATH [--json]",
		Short: "Say, per constraint, what the sandbox applied and at which tier",
		Long: `receipts prints one line per constraint (seed, clock, locale, timezone,
terminal, filesystem, network) in the transcript receipts' words: the tier
applied (os: an OS mechanism enforces it and was checked; delivered: the
value was only handed over) with what enforces it, or "unsupported" with
why. --json prints the reply's data.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := termCtx()
			defer cancel()
			var rs interminai.ReceiptsData
			if err := tc.data(ctx, &interminai.Receipts{}, &rs); err != nil {
				return termFail(cmd, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, err := json.Marshal(rs)
				if err != nil {
					return termFail(cmd, err)
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			_, err := io.WriteString(out, rs.Table())
			return err
		},
	}
	tc.flags(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print the reply's data as JSON")
	return c
}

func newTermStopCmd() *cobra.Command {
	var tc termClient
	c := &cobra.Command{
		Use:   "stop --socket PATH",
		Short: "End the program and its whole sandbox; the daemon exits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := termCtx()
			defer cancel()
			if _, err := tc.call(ctx, &interminai.Stop{}); err != nil {
				return termFail(cmd, err)
			}
			return nil
		},
	}
	tc.flags(c)
	return c
}

// absDirs makes each directory absolute against the working directory;
// the sandbox opens each again without symlinks and refuses what it
// cannot map.
func absDirs(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// markCursor is out's screen with the cell under the cursor in reverse
// video (ESC[7m…ESC[27m), when the cursor's line is among the lines out
// holds; ansi says the lines hold SGR sequences, which take no cell. A
// cursor past a line's last printed cell marks a space there.
func markCursor(out interminai.OutputData, ansi bool) string {
	lines := strings.SplitAfter(out.Screen, "\n")
	first := 1 // the screen line the output's first line is
	if out.From < 0 {
		first = out.From // scrollback lines come first
	} else if out.From > 1 {
		first = out.From
	}
	idx := out.Cursor.Row + 1 - first
	if first < 0 {
		idx = -first + out.Cursor.Row // line 0 (the boundary) is not a line
	}
	if idx < 0 || idx >= len(lines) || (idx == len(lines)-1 && lines[idx] == "") {
		return out.Screen
	}
	lines[idx] = markCell(lines[idx], out.Cursor.Col, ansi)
	return strings.Join(lines, "")
}

// markCell wraps the character covering cell col of line in reverse video.
func markCell(line string, col int, ansi bool) string {
	body, nl := strings.CutSuffix(line, "\n")
	var b strings.Builder
	cell := 0
	for i := 0; i < len(body); {
		if ansi && body[i] == 0x1b {
			j := i + 1
			if j < len(body) && body[j] == '[' {
				for j++; j < len(body) && (body[j] < 0x40 || body[j] > 0x7e); j++ {
				}
			}
			j = min(j+1, len(body))
			b.WriteString(body[i:j])
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(body[i:])
		w := max(vt.RuneWidth(r), 0)
		// The character and the marks that combine with it are one cell.
		end := i + n
		for end < len(body) {
			r2, n2 := utf8.DecodeRuneInString(body[end:])
			if vt.RuneWidth(r2) != 0 {
				break
			}
			end += n2
		}
		if cell <= col && col < cell+max(w, 1) {
			b.WriteString("\x1b[7m" + body[i:end] + "\x1b[27m" + body[end:])
			if nl {
				b.WriteString("\n")
			}
			return b.String()
		}
		b.WriteString(body[i:end])
		cell += w
		i = end
	}
	b.WriteString(strings.Repeat(" ", max(col-cell, 0)) + "\x1b[7m \x1b[27m")
	if nl {
		b.WriteString("\n")
	}
	return b.String()
}
