package termmcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/netpolicy"
	"github.com/termverify/termverify-sandbox/term"
)

// handler is one tool's work: its structured result and the text
// rendering of it, or an error the client gets as a tool error.
type handler[In, Out any] func(ctx context.Context, in In) (Out, string, error)

// addTool registers h under name. A panic in h becomes a tool error: no
// call brings the server down.
func addTool[In, Out any](s *server, name, desc string, schema *jsonschema.Schema, h handler[In, Out]) {
	t := &mcp.Tool{Name: name, Description: desc}
	if schema != nil {
		t.InputSchema = schema
	}
	mcp.AddTool(s.mcp, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				var zero Out
				res, out = nil, zero
				err = fmt.Errorf("%s failed inside the server (%v); the server goes on: report it with this stack:\n%s", name, p, debug.Stack())
			}
		}()
		out, text, err := h(ctx, in)
		if err != nil {
			var zero Out
			return nil, zero, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
}

func (s *server) addTools() {
	addTool(s, "terminal_start", "Start a program on a terminal inside an OS sandbox and return its session id, "+
		"the sandbox's receipts and its first settled screen. The program sees cwd (and write) read-write at their own paths, "+
		"read read-only, the host's system directories read-only, no home and no network beyond allow; its files belong to you. "+
		"The session is stopped when this server's client goes away.", nil, s.start)
	addTool(s, "terminal_attach", "Attach to a daemon started with `termverify-sandbox term start` by its socket path; "+
		"returns a session id the other tools take. terminal_stop stops that daemon; otherwise it outlives this server.", nil, s.attach)
	addTool(s, "terminal_input", "Type into the program: text (with escapes: \\r Enter, \\n, \\t, \\e Escape, \\xHH), then keys "+
		"(termverify.key/v1 chords such as [\"Control\",\"c\"], [\"ArrowUp\"], [\"F5\"], encoded for the program's modes). "+
		"With settle (the default) it returns the screen once the program waits for input again.", nil, s.input)
	addTool(s, "terminal_output", "Read the screen, or screen and scrollback lines: from and to number lines as interminai does "+
		"(1 is the top screen line, -1 the scrollback line just above it, \"-\" the oldest; to 0 is the last scrollback line). "+
		"A result over max_bytes is cut at a line, with a note giving the from to ask for next.", outputSchema(), s.output)
	addTool(s, "terminal_wait", "Wait until the program waits for input again (settled), the screen shows a text (contains, "+
		"on screen line line if given), or the program ends (exited); at most timeout_ms (default 30000). Returns what happened and the screen.", nil, s.wait)
	addTool(s, "terminal_status", "Say whether the program runs, its exit code once it ended, and how it is sandboxed.", nil, s.status)
	addTool(s, "terminal_resize", "Resize the program's terminal (it gets SIGWINCH) and the screen.", nil, s.resize)
	addTool(s, "terminal_kill", "Send the program a signal: a name (SIGINT, INT) or number; SIGTERM when none is given.", nil, s.kill)
	addTool(s, "terminal_stop", "End the program and destroy its whole sandbox (SIGTERM, SIGHUP, then a kill), and close the session.", nil, s.stop)
	addTool(s, "terminal_receipts", "Say, for each of the seven constraints (seed, clock, locale, timezone, terminal, filesystem, network), "+
		"the tier the sandbox applied and verified (os: an OS mechanism enforces it; delivered: the value was handed over) or unsupported.", nil, s.receipts)
}

// outputSchema is terminal_output's input schema: what Go's types give,
// with from taking a line number or "-", and format its two words.
func outputSchema() *jsonschema.Schema {
	sc, err := jsonschema.For[outputIn](nil)
	if err != nil {
		panic(fmt.Sprintf("terminal_output's schema: %v", err)) // a programming error, caught by every test
	}
	from := sc.Properties["from"]
	from.Type, from.Types = "", []string{"integer", "string"}
	sc.Properties["format"].Enum = []any{"ascii", "ansi"}
	return sc
}

type startIn struct {
	Command    []string `json:"command" jsonschema:"the program and its arguments, e.g. [\"vim\",\"notes.txt\"]; the program is looked up inside the sandbox"`
	Cwd        string   `json:"cwd,omitempty" jsonschema:"the program's working directory, read-write at its own path (default: the server's)"`
	Size       string   `json:"size,omitempty" jsonschema:"the terminal's size COLSxROWS (default 80x24)"`
	Write      []string `json:"write,omitempty" jsonschema:"more host directories the program may write, at their own paths"`
	Read       []string `json:"read,omitempty" jsonschema:"host directories the program may read, at their own paths"`
	Allow      []string `json:"allow,omitempty" jsonschema:"TCP destinations host:port the program may reach; none: no network at all"`
	Scrollback *int     `json:"scrollback,omitempty" jsonschema:"scrollback lines kept (default 10000; 0: none)"`
	TimeoutMS  int      `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the first settled screen (default 10000)"`
	Transcript string   `json:"transcript,omitempty" jsonschema:"record the session to this host file (relative to cwd) as a termverify.transcript/v1 transcript in run --pty's shape, written whole when the session ends; replay --pty re-runs it"`
}

type startOut struct {
	Session  string            `json:"session"`
	Resource string            `json:"resource" jsonschema:"the URI of the session's screen as a resource"`
	Receipts map[string]string `json:"receipts" jsonschema:"per constraint, the tier applied (os, delivered) or unsupported"`
	screenOut
	Warnings   []string `json:"warnings,omitempty"`
	Transcript string   `json:"transcript,omitempty" jsonschema:"the file the session is recorded to, once it ends"`
}

// screenOut is a screen after a wait for the program to settle.
type screenOut struct {
	Screen   string     `json:"screen"`
	Settled  bool       `json:"settled" jsonschema:"the program waits for input (false: it still works, or has ended)"`
	Exited   bool       `json:"exited"`
	ExitCode *int       `json:"exit_code,omitempty"`
	TimedOut bool       `json:"timed_out,omitempty" jsonschema:"the wait ended at its timeout: the screen is the current one"`
	Cut      *truncated `json:"truncated,omitempty"`
}

func (s *server) start(ctx context.Context, in startIn) (startOut, string, error) {
	if len(in.Command) == 0 || in.Command[0] == "" {
		return startOut{}, "", errors.New(`command is empty: give the program and its arguments, e.g. {"command":["bash"]}`)
	}
	cfg := term.Config{Args: in.Command, Env: s.opts.Env, Limits: s.opts.Limits, StateDir: s.opts.StateDir}
	var err error
	if cfg.Dir, err = absDir(s.opts.Dir, in.Cwd); err != nil {
		return startOut{}, "", fmt.Errorf("cwd %q: %w", in.Cwd, err)
	}
	if in.Size != "" {
		sz, err := interminai.ParseSize(in.Size)
		if err != nil {
			return startOut{}, "", fmt.Errorf("size: %w: give COLSxROWS, e.g. 120x40", err)
		}
		cfg.Cols, cfg.Rows = sz.Cols, sz.Rows
	}
	for _, w := range in.Write {
		d, err := absDir(cfg.Dir, w)
		if err != nil {
			return startOut{}, "", fmt.Errorf("write %q: %w", w, err)
		}
		cfg.Write = append(cfg.Write, d)
	}
	for _, r := range in.Read {
		d, err := absDir(cfg.Dir, r)
		if err != nil {
			return startOut{}, "", fmt.Errorf("read %q: %w", r, err)
		}
		cfg.Read = append(cfg.Read, d)
	}
	for _, a := range in.Allow {
		hp, err := netpolicy.ParseHostPort(a)
		if err != nil {
			return startOut{}, "", fmt.Errorf("allow %q: %w: give host:port, e.g. example.com:443", a, err)
		}
		cfg.Allow = append(cfg.Allow, hp)
	}
	if in.Scrollback != nil {
		cfg.Scrollback = *in.Scrollback
		if cfg.Scrollback == 0 {
			cfg.Scrollback = -1 // none, not the default
		}
	}
	if in.Transcript != "" {
		if cfg.Transcript, err = absDir(cfg.Dir, in.Transcript); err != nil {
			return startOut{}, "", fmt.Errorf("transcript %q: %w", in.Transcript, err)
		}
	}
	d, err := term.Start(context.WithoutCancel(ctx), cfg)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.ENOTDIR) {
			return startOut{}, "", fmt.Errorf("%w: check that cwd, write and read name directories that exist and you can open", err)
		}
		return startOut{}, "", fmt.Errorf("the sandbox did not start: %w", err)
	}
	se, err := s.add(local{d}, in.Command, "")
	if err != nil {
		return startOut{}, "", err
	}
	se.transcript = cfg.Transcript
	out := startOut{Session: se.id, Resource: se.uri(), Warnings: term.Warnings(cfg.Dir, s.opts.Env), Transcript: cfg.Transcript}
	var rs interminai.ReceiptsData
	if err := callData(ctx, se, &interminai.Receipts{}, &rs); err == nil {
		out.Receipts = tiers(rs)
	} else {
		out.Receipts = map[string]string{}
	}
	if out.screenOut, err = s.settle(ctx, se, in.TimeoutMS, defaultSettleWait); err != nil {
		// The session is open all the same: its id must reach the
		// client, with the screen as it is and why it is not settled.
		settleErr := err
		if out.screenOut, err = s.now(ctx, se); err != nil {
			return out, "", fmt.Errorf("session %s started, but its screen cannot be read: %w; terminal_stop it", se.id, err)
		}
		out.Warnings = append(out.Warnings, "the first screen is not a settled one: "+settleErr.Error())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s: %s (screen resource %s)\n", se.id, strings.Join(in.Command, " "), se.uri())
	fmt.Fprintf(&b, "Receipts: %s\n", tiersText(out.Receipts))
	if out.Transcript != "" {
		fmt.Fprintf(&b, "Recording to %s (written when the session ends)\n", out.Transcript)
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", w)
	}
	if out.Exited && out.ExitCode != nil && (*out.ExitCode == 127 || *out.ExitCode == 126) && len(out.Receipts) == 0 {
		fmt.Fprintf(&b, "The program could not be executed (status %d: not found, or not executable inside the sandbox).\n", *out.ExitCode)
	}
	b.WriteString(out.screenOut.text())
	return out, b.String(), nil
}

type attachIn struct {
	Socket string `json:"socket" jsonschema:"the socket path term start printed (Socket: PATH)"`
}

type attachOut struct {
	Session  string            `json:"session"`
	Resource string            `json:"resource"`
	Running  bool              `json:"running"`
	Receipts map[string]string `json:"receipts"`
	Screen   string            `json:"screen"`
}

func (s *server) attach(ctx context.Context, in attachIn) (attachOut, string, error) {
	if in.Socket == "" {
		return attachOut{}, "", errors.New("socket is empty: give the path `term start` printed (its Socket: line)")
	}
	sock, err := absDir(s.opts.Dir, in.Socket)
	if err != nil {
		return attachOut{}, "", err
	}
	b := remote{socket: sock}
	probe := &session{id: "?", b: b}
	var st interminai.StatusData
	if err := callData(ctx, probe, &interminai.Status{}, &st); err != nil {
		return attachOut{}, "", fmt.Errorf("%w (start one with `termverify-sandbox term start -- CMD`, which prints its socket)", err)
	}
	se, err := s.add(b, nil, sock)
	if err != nil {
		return attachOut{}, "", err
	}
	out := attachOut{Session: se.id, Resource: se.uri(), Running: st.Running, Receipts: map[string]string{}}
	var rs interminai.ReceiptsData
	if err := callData(ctx, se, &interminai.Receipts{}, &rs); err == nil {
		out.Receipts = tiers(rs)
	}
	sc, err := s.screen(ctx, se, interminai.FormatASCII)
	if err != nil {
		return out, "", err
	}
	text, cut := cutText(sc.Screen, 1, s.opts.MaxOutput)
	out.Screen = text
	rendered := fmt.Sprintf("Session %s: attached to %s (running: %t)\nReceipts: %s\n%s", se.id, sock, st.Running, tiersText(out.Receipts), text)
	if cut != nil {
		rendered += cut.Note + "\n"
	}
	return out, rendered, nil
}

type inputIn struct {
	Session   string     `json:"session"`
	Text      string     `json:"text,omitempty" jsonschema:"text to type, with interminai's escapes: \\r (Enter) \\n \\t \\e (Escape) \\xHH \\\\"`
	Keys      [][]string `json:"keys,omitempty" jsonschema:"key chords typed after text, each termverify.key/v1: modifiers (Control, Alt, Shift, Meta) then one key, e.g. [[\"Escape\"],[\"Control\",\"c\"]]"`
	Settle    *bool      `json:"settle,omitempty" jsonschema:"wait until the program waits for input again before returning the screen (default true)"`
	TimeoutMS int        `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the settle (default 10000)"`
}

func (s *server) input(ctx context.Context, in inputIn) (screenOut, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return screenOut{}, "", err
	}
	if in.Text == "" && len(in.Keys) == 0 {
		return screenOut{}, "", errors.New(`nothing to type: give text (e.g. "ihello\\e") or keys (e.g. [["Enter"]])`)
	}
	// Every chord is checked before anything is typed.
	keys, err := encodeKeys(in.Keys, se.b)
	if err != nil {
		return screenOut{}, "", err
	}
	if in.Text != "" {
		if err := callData(ctx, se, &interminai.Input{Data: interminai.DecodeText(in.Text)}, nil); err != nil {
			return screenOut{}, "", err
		}
	}
	if len(in.Keys) > 0 {
		if err := se.b.keys(ctx, in.Keys, keys); err != nil {
			return screenOut{}, "", advise(&interminai.Input{}, err)
		}
	}
	var out screenOut
	if in.Settle == nil || *in.Settle {
		out, err = s.settle(ctx, se, in.TimeoutMS, defaultSettleWait)
	} else {
		out, err = s.now(ctx, se)
	}
	if err != nil {
		return out, "", err
	}
	return out, out.text(), nil
}

// settle waits for se's program to settle, at most timeoutMS (def when
// 0), and returns the screen; a timeout is an answer, not an error.
func (s *server) settle(ctx context.Context, se *session, timeoutMS int, def time.Duration) (screenOut, error) {
	wctx, cancel := waitCtx(ctx, timeoutMS, def)
	defer cancel()
	var st term.SettledData
	err := callData(wctx, se, &interminai.Wait{Settled: true}, &st)
	switch {
	case err == nil:
		out := screenOut{Settled: st.Settled, Exited: st.Exited, ExitCode: st.ExitCode}
		out.Screen, out.Cut = cutText(st.Screen, 1, s.opts.MaxOutput)
		return out, nil
	case errors.Is(context.Cause(wctx), errTimedOut) && ctx.Err() == nil:
		out, err := s.now(ctx, se)
		out.TimedOut = true
		return out, err
	}
	return screenOut{}, err
}

// now is se's screen and state as they are.
func (s *server) now(ctx context.Context, se *session) (screenOut, error) {
	var st interminai.StatusData
	if err := callData(ctx, se, &interminai.Status{}, &st); err != nil {
		return screenOut{}, err
	}
	sc, err := s.screen(ctx, se, interminai.FormatASCII)
	if err != nil {
		return screenOut{}, err
	}
	out := screenOut{Exited: !st.Running, ExitCode: st.ExitCode}
	out.Screen, out.Cut = cutText(sc.Screen, 1, s.opts.MaxOutput)
	return out, nil
}

func (o screenOut) text() string {
	var b strings.Builder
	switch {
	case o.Exited && o.ExitCode != nil:
		fmt.Fprintf(&b, "The program has ended (exit code %d). Its last screen:\n", *o.ExitCode)
	case o.TimedOut:
		b.WriteString("The program has not settled yet (it may still be working): terminal_wait with settled waits longer. The screen now:\n")
	case o.Settled:
		b.WriteString("Settled (the program waits for input). The screen:\n")
	default:
		b.WriteString("The screen:\n")
	}
	b.WriteString(o.Screen)
	if o.Cut != nil {
		b.WriteString(o.Cut.Note + "\n")
	}
	return b.String()
}

// errTimedOut is the cause of a wait that reached its timeout_ms.
var errTimedOut = errors.New("timed out")

// waitCtx is ctx bounded by timeoutMS, or by def when it is 0.
func waitCtx(ctx context.Context, timeoutMS int, def time.Duration) (context.Context, context.CancelFunc) {
	d := def
	if timeoutMS > 0 {
		d = time.Duration(timeoutMS) * time.Millisecond
	}
	return context.WithTimeoutCause(ctx, d, errTimedOut)
}

type outputIn struct {
	Session  string `json:"session"`
	Format   string `json:"format,omitempty" jsonschema:"ascii (default: plain text) or ansi (with SGR colour sequences)"`
	From     any    `json:"from,omitempty" jsonschema:"first line: N on the screen (1 the top), -N in the scrollback, \"-\" the oldest; default 1"`
	To       *int   `json:"to,omitempty" jsonschema:"last line (default the last screen line; 0: the last scrollback line)"`
	Cursor   bool   `json:"cursor,omitempty" jsonschema:"begin the text with the cursor's 1-based row and column"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"cut the lines after this many bytes (default 40960)"`
}

type outputOut struct {
	Screen              string            `json:"screen"`
	Cursor              interminai.Cursor `json:"cursor" jsonschema:"0-based, on the visible screen"`
	Size                interminai.Size   `json:"size"`
	From                int               `json:"from" jsonschema:"the first line returned"`
	To                  int               `json:"to" jsonschema:"the last line returned"`
	ScrollbackAvailable int               `json:"scrollback_available" jsonschema:"lines in the scrollback now"`
	Cut                 *truncated        `json:"truncated,omitempty"`
}

func (s *server) output(ctx context.Context, in outputIn) (outputOut, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return outputOut{}, "", err
	}
	req := &interminai.Output{Format: interminai.FormatASCII}
	switch in.Format {
	case "", "ascii":
	case "ansi":
		req.Format = interminai.FormatANSI
	default:
		return outputOut{}, "", fmt.Errorf("format %q: give ascii or ansi", in.Format)
	}
	switch f := in.From.(type) {
	case nil:
	case float64:
		if f != float64(int(f)) {
			return outputOut{}, "", fmt.Errorf("from %v: give a whole line number or \"-\"", f)
		}
		req.From = interminai.Line{Kind: interminai.LineNumber, N: int(f)}
	case string:
		if f != "-" {
			return outputOut{}, "", fmt.Errorf("from %q: give a line number or \"-\" (the oldest scrollback line)", f)
		}
		req.From = interminai.Line{Kind: interminai.LineOldest}
	default:
		return outputOut{}, "", fmt.Errorf("from %v: give a line number or \"-\"", f)
	}
	if in.To != nil {
		req.To = interminai.Line{Kind: interminai.LineNumber, N: *in.To}
	}
	var od interminai.OutputData
	if err := callData(ctx, se, req, &od); err != nil {
		return outputOut{}, "", err
	}
	limit := s.opts.MaxOutput
	if in.MaxBytes > 0 {
		limit = in.MaxBytes
	}
	out := outputOut{Cursor: od.Cursor, Size: od.Size, From: od.From, To: od.To, ScrollbackAvailable: od.ScrollbackAvailable}
	out.Screen, out.Cut = cutText(od.Screen, od.From, limit)
	if out.Cut != nil {
		out.To = out.Cut.LastLine
	}
	var b strings.Builder
	if in.Cursor {
		fmt.Fprintf(&b, "Cursor: row %d, col %d\n", od.Cursor.Row+1, od.Cursor.Col+1)
	}
	b.WriteString(out.Screen)
	if out.Cut != nil {
		b.WriteString(out.Cut.Note + "\n")
	}
	return out, b.String(), nil
}

type waitIn struct {
	Session   string `json:"session"`
	Settled   bool   `json:"settled,omitempty" jsonschema:"wait until the program waits for input again"`
	Contains  string `json:"contains,omitempty" jsonschema:"wait until the screen shows this text"`
	Line      int    `json:"line,omitempty" jsonschema:"with contains: on this 1-based screen line only"`
	Exited    bool   `json:"exited,omitempty" jsonschema:"wait until the program ends"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"give up after this many milliseconds (default 30000)"`
}

type waitOut struct {
	screenOut
	Found *bool `json:"found,omitempty" jsonschema:"with contains: the screen showed the text"`
	Line  *int  `json:"line,omitempty" jsonschema:"with contains: the 1-based screen line it was found on"`
}

func (s *server) wait(ctx context.Context, in waitIn) (waitOut, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return waitOut{}, "", err
	}
	modes := 0
	for _, on := range []bool{in.Settled, in.Contains != "", in.Exited} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		return waitOut{}, "", errors.New("give exactly one of settled: true, contains: TEXT or exited: true")
	}
	if in.Settled {
		out, err := s.settle(ctx, se, in.TimeoutMS, defaultWait)
		return waitOut{screenOut: out}, out.text(), err
	}
	wctx, cancel := waitCtx(ctx, in.TimeoutMS, defaultWait)
	defer cancel()
	var out waitOut
	if in.Contains != "" {
		var cd term.ContainsData
		err = callData(wctx, se, &interminai.Wait{Contains: in.Contains, Line: in.Line}, &cd)
		if err == nil {
			out.Found, out.Line = &cd.Found, cd.Line
		}
	} else {
		err = callData(wctx, se, &interminai.Wait{}, &interminai.WaitExitData{})
	}
	timedOut := err != nil && errors.Is(context.Cause(wctx), errTimedOut) && ctx.Err() == nil
	if err != nil && !timedOut {
		return waitOut{}, "", err
	}
	if out.screenOut, err = s.now(ctx, se); err != nil {
		return waitOut{}, "", err
	}
	out.TimedOut = timedOut
	if timedOut && in.Contains != "" {
		f := false
		out.Found = &f
	}
	var b strings.Builder
	switch {
	case timedOut && in.Contains != "":
		fmt.Fprintf(&b, "The screen did not show %q within the timeout.\n", in.Contains)
	case timedOut:
		b.WriteString("The program did not end within the timeout.\n")
	case out.Found != nil && *out.Found:
		fmt.Fprintf(&b, "Found %q on screen line %d.\n", in.Contains, *out.Line)
	case out.Found != nil:
		fmt.Fprintf(&b, "The program ended before the screen showed %q.\n", in.Contains)
	}
	out.TimedOut = false // said above; text() would say it of a settle
	b.WriteString(out.screenOut.text())
	out.TimedOut = timedOut
	return out, b.String(), nil
}

type sessionIn struct {
	Session string `json:"session" jsonschema:"the session id terminal_start or terminal_attach returned"`
}

type statusOut struct {
	Session    string                  `json:"session"`
	Running    bool                    `json:"running"`
	ExitCode   *int                    `json:"exit_code,omitempty"`
	Unobserved string                  `json:"exit_unobserved,omitempty" jsonschema:"why the program's end was not observed (its sandbox's init died without reporting it): exit_code is then a stand-in"`
	Sandbox    *interminai.SandboxData `json:"sandbox,omitempty"`
	Command    []string                `json:"command,omitempty"`
	Socket     string                  `json:"socket,omitempty" jsonschema:"for an attached session, its daemon's socket"`
}

func (s *server) status(ctx context.Context, in sessionIn) (statusOut, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return statusOut{}, "", err
	}
	var st interminai.StatusData
	if err := callData(ctx, se, &interminai.Status{}, &st); err != nil {
		return statusOut{}, "", err
	}
	out := statusOut{Session: se.id, Running: st.Running, ExitCode: st.ExitCode, Unobserved: st.ExitUnobserved, Sandbox: st.Sandbox, Command: se.command, Socket: se.socket}
	var b strings.Builder
	fmt.Fprintf(&b, "Running: %t\n", st.Running)
	b.WriteString(st.ExitLines())
	if sb := st.Sandbox; sb != nil {
		fmt.Fprintf(&b, "Sandbox: %s\n", sb.Summary())
	}
	return out, b.String(), nil
}

type resizeIn struct {
	Session string `json:"session"`
	Cols    int    `json:"cols" jsonschema:"columns, 1 to 1024"`
	Rows    int    `json:"rows" jsonschema:"rows, 1 to 1024"`
}

func (s *server) resize(ctx context.Context, in resizeIn) (interminai.Size, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return interminai.Size{}, "", err
	}
	if err := callData(ctx, se, &interminai.Resize{Size: interminai.Size{Cols: in.Cols, Rows: in.Rows}}, nil); err != nil {
		return interminai.Size{}, "", err
	}
	return interminai.Size{Cols: in.Cols, Rows: in.Rows}, fmt.Sprintf("Resized to %dx%d.", in.Cols, in.Rows), nil
}

type killIn struct {
	Session string `json:"session"`
	Signal  string `json:"signal,omitempty" jsonschema:"a signal name (SIGINT, INT) or number (default SIGTERM)"`
}

func (s *server) kill(ctx context.Context, in killIn) (interminai.KillData, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return interminai.KillData{}, "", err
	}
	sig := unix.SIGTERM
	if in.Signal != "" {
		if sig, err = interminai.ParseSignal(in.Signal); err != nil {
			return interminai.KillData{}, "", fmt.Errorf("signal %q: %w: give a name such as SIGINT or a number such as 2", in.Signal, err)
		}
	}
	var out interminai.KillData
	if err := callData(ctx, se, &interminai.Kill{Signal: sig}, &out); err != nil {
		return interminai.KillData{}, "", err
	}
	return out, "Sent " + out.SignalSent + ".", nil
}

type stopOut struct {
	Session    string `json:"session"`
	Stopped    bool   `json:"stopped"`
	ExitCode   *int   `json:"exit_code,omitempty" jsonschema:"how the program ended (a session this server started)"`
	Transcript string `json:"transcript,omitempty" jsonschema:"the session's transcript, written"`
}

func (s *server) stop(ctx context.Context, in sessionIn) (stopOut, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return stopOut{}, "", err
	}
	err = callData(ctx, se, &interminai.Stop{}, nil)
	if _, attached := se.b.(remote); err != nil && !attached {
		return stopOut{}, "", fmt.Errorf("%w: the session stays open; terminal_stop it again, or terminal_kill it with SIGKILL", err)
	}
	out := stopOut{Session: se.id, Stopped: true}
	if l, ok := se.b.(local); ok {
		if code, ok := l.d.ExitCode(); ok {
			out.ExitCode = &code
		}
	}
	s.remove(se)
	relErr := se.b.release(ctx)
	if err != nil {
		// An attached daemon gone already is stopped as far as the
		// session goes; the session is closed either way.
		return out, fmt.Sprintf("Session %s closed; its daemon did not answer the stop: %v", se.id, err), nil
	}
	if relErr != nil {
		return out, "", fmt.Errorf("session %s closed, but its sandbox could not be destroyed cleanly, or its transcript written: %w", se.id, relErr)
	}
	out.Transcript = se.transcript
	text := fmt.Sprintf("Session %s stopped.", se.id)
	if out.ExitCode != nil {
		text = fmt.Sprintf("Session %s stopped; the program's exit code was %d.", se.id, *out.ExitCode)
	}
	if out.Transcript != "" {
		text += " Its transcript is " + out.Transcript + "."
	}
	return out, text, nil
}

type receiptsOut struct {
	Receipts map[string]string        `json:"receipts" jsonschema:"per constraint, the tier applied (os, delivered) or unsupported"`
	Details  []interminai.ReceiptData `json:"details" jsonschema:"per constraint, what enforces it or why it is unsupported"`
}

func (s *server) receipts(ctx context.Context, in sessionIn) (receiptsOut, string, error) {
	se, err := s.session(in.Session)
	if err != nil {
		return receiptsOut{}, "", err
	}
	var rs interminai.ReceiptsData
	if err := callData(ctx, se, &interminai.Receipts{}, &rs); err != nil {
		return receiptsOut{}, "", err
	}
	return receiptsOut{Receipts: tiers(rs), Details: rs.Receipts}, rs.Table(), nil
}

// tiers is {constraint: tier}, "unsupported" where none was applied.
func tiers(rs interminai.ReceiptsData) map[string]string {
	m := map[string]string{}
	for _, r := range rs.Receipts {
		if r.Tier != "" {
			m[r.Constraint] = r.Tier
		} else {
			m[r.Constraint] = r.Status
		}
	}
	return m
}

// tiersText is tiers in the receipts' order.
func tiersText(m map[string]string) string {
	var parts []string
	for _, c := range []string{"filesystem", "network", "terminal", "locale", "seed", "clock", "timezone"} {
		if t, ok := m[c]; ok {
			parts = append(parts, c+" "+t)
		}
	}
	if len(parts) == 0 {
		return "none (the program did not start)"
	}
	return strings.Join(parts, ", ")
}
