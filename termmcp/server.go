package termmcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/term"
)

// Defaults of the tools' bounds.
const (
	// DefaultMaxOutput is how many bytes of screen text one result
	// carries at most (about 10,000 tokens): a full scrollback is cut at a
	// line boundary, with a note saying how to page through the rest.
	DefaultMaxOutput = 40 << 10
	// defaultSettleWait bounds the settle after terminal_start and
	// terminal_input when the call gives no timeout_ms.
	defaultSettleWait = 10 * time.Second
	// defaultWait bounds terminal_wait without timeout_ms: below the
	// request timeouts clients apply (60 s in the TypeScript SDK).
	defaultWait = 30 * time.Second
	// screenPoll is how often a subscribed screen is looked at for a
	// change.
	screenPoll = 200 * time.Millisecond
)

// Options are what Serve needs: plain data.
type Options struct {
	// Env is the caller's environment (os.Environ()): the programs get it
	// less what names host places (term.Config.Env), and their files
	// belong to the user it names (term.CallerOwner).
	Env []string
	// Dir is the working directory of a terminal_start that gives no
	// cwd; "": this process's.
	Dir string
	// StateDir is the sandboxes' state directory; "": the sandbox's
	// default.
	StateDir string
	// Limits are each sandbox's; nil: sandbox.DefaultLimits().
	Limits *sandbox.Limits
	// MaxOutput bounds the screen text of one result; 0: DefaultMaxOutput.
	MaxOutput int
	// Version is the server's, as initialize reports it.
	Version string
}

// session is one terminal the client opened.
type session struct {
	id      string
	b       backend
	command []string // the program, for a local one
	socket  string   // the daemon's, for an attached one
	// transcript is the file a local session is recorded to, written
	// when it is released; "": none.
	transcript string
}

func (s *session) uri() string { return "terminal://" + s.id + "/screen" }

// server holds the sessions of one client.
type server struct {
	opts Options
	mcp  *mcp.Server

	mu       sync.Mutex
	sessions map[string]*session
	next     int
	closed   bool                     // the client has gone: no new session
	subs     map[string]*subscription // by resource URI
}

// Serve serves the terminal tools on t until the client goes away (the
// transport ends) or ctx ends. Before it returns, every session it
// started has been stopped and its sandbox destroyed; attached daemons are
// left as they are.
func Serve(ctx context.Context, t mcp.Transport, opts Options) error {
	s := newServer(opts)
	ctx, cancel := context.WithCancel(ctx)
	var watch sync.WaitGroup
	watch.Go(func() { s.watch(ctx) })
	err := s.mcp.Run(ctx, t)
	cancel()
	watch.Wait()
	return errors.Join(err, s.closeAll())
}

func newServer(opts Options) *server {
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	s := &server{opts: opts, sessions: map[string]*session{}, subs: map[string]*subscription{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "termverify-sandbox", Title: "termverify-sandbox terminal", Version: opts.Version},
		&mcp.ServerOptions{
			Instructions:       instructions,
			Capabilities:       &mcp.ServerCapabilities{},
			SubscribeHandler:   s.subscribe,
			UnsubscribeHandler: s.unsubscribe,
		})
	s.addTools()
	return s
}

// instructions is what the client is told of the tools as a whole.
const instructions = `Interactive programs (vim, git rebase -i, a REPL, a curses UI) on a terminal inside an OS sandbox.
terminal_start runs a program and returns a session id and its first settled screen; terminal_input types text
(with escapes: \r is Enter, \e Escape) or key chords and returns the screen once the program waits for input again;
terminal_output reads the screen and scrollback; terminal_stop ends the program and its sandbox.
Every session still open is stopped when this server's client goes away.`

// closeAll stops every session this server started, at once, and
// refuses new ones.
func (s *server) closeAll() error {
	s.mu.Lock()
	s.closed = true
	all := slices.Collect(maps.Values(s.sessions))
	clear(s.sessions)
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, se := range all {
		wg.Go(func() {
			if err := se.b.release(context.Background()); err != nil {
				errs[i] = fmt.Errorf("stop session %s: %w", se.id, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// add registers a new session under a fresh id. It fails once the client
// has gone, releasing the backend.
func (s *server) add(b backend, command []string, socket string) (*session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.Join(errors.New("the client has gone: no session is started"), b.release(context.Background()))
	}
	s.next++
	se := &session{id: "s" + strconv.Itoa(s.next), b: b, command: command, socket: socket}
	s.sessions[se.id] = se
	s.mu.Unlock()
	s.mcp.AddResource(&mcp.Resource{
		URI: se.uri(), Name: se.id + "-screen", Title: "Screen of terminal session " + se.id,
		Description: "The session's screen as plain text, one line per row.", MIMEType: "text/plain",
	}, s.readScreen)
	return se, nil
}

// session is the open session id, or an error that says which are open.
func (s *server) session(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.sessions[id]; ok {
		return se, nil
	}
	open := slices.Sorted(maps.Keys(s.sessions))
	if len(open) == 0 {
		return nil, fmt.Errorf("no session %q, and none is open: terminal_start one (or terminal_attach a daemon)", id)
	}
	return nil, fmt.Errorf("no session %q: the open ones are %s (a stopped session is gone)", id, strings.Join(open, ", "))
}

// remove forgets the session and its resource.
func (s *server) remove(se *session) {
	s.mu.Lock()
	delete(s.sessions, se.id)
	s.mu.Unlock()
	s.mcp.RemoveResources(se.uri())
}

// readScreen is the resource terminal://SESSION/screen.
func (s *server) readScreen(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := sessionOfURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	se, err := s.session(id)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	out, err := s.screen(ctx, se, interminai.FormatASCII)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: out.Screen}}}, nil
}

// sessionOfURI is the session of terminal://SESSION/screen.
func sessionOfURI(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "terminal://")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/screen")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

func (s *server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	id, ok := sessionOfURI(uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	se, err := s.session(id)
	if err != nil {
		return mcp.ResourceNotFoundError(uri)
	}
	// The screen now is what a change is a change from: one right after
	// the subscription is not missed.
	out, err := s.screen(ctx, se, interminai.FormatASCII)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.subs[uri]; ok {
		w.n++
		return nil
	}
	s.subs[uri] = &subscription{n: 1, screen: out.Screen}
	return nil
}

func (s *server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.subs[req.Params.URI]; ok && w.n > 1 {
		w.n--
	} else {
		delete(s.subs, req.Params.URI)
	}
	return nil
}

// subscription is a subscribed screen: how many subscribed, and the
// screen last seen.
type subscription struct {
	n      int
	screen string
}

// watch sends notifications/resources/updated when a subscribed screen
// changes, looking at each every screenPoll, until ctx ends. Polling
// serves a local and an attached session alike, and takes no activity
// flag from a client of the daemon's.
func (s *server) watch(ctx context.Context) {
	tick := time.NewTicker(screenPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		watched := map[string]*session{}
		for uri := range s.subs {
			if id, ok := sessionOfURI(uri); ok {
				if se, ok := s.sessions[id]; ok {
					watched[uri] = se
				} else {
					delete(s.subs, uri) // its session is gone
				}
			}
		}
		s.mu.Unlock()
		for uri, se := range watched {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			out, err := s.screen(cctx, se, interminai.FormatASCII)
			cancel()
			if err != nil {
				continue
			}
			s.mu.Lock()
			w, ok := s.subs[uri]
			changed := ok && w.screen != out.Screen
			if changed {
				w.screen = out.Screen
			}
			s.mu.Unlock()
			if changed {
				_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
			}
		}
	}
}

// screen is OUTPUT of the visible screen.
func (s *server) screen(ctx context.Context, se *session, f interminai.Format) (interminai.OutputData, error) {
	var out interminai.OutputData
	err := callData(ctx, se, &interminai.Output{Format: f}, &out)
	return out, err
}

// callData carries out req on se and decodes its reply's data into v
// (nil: no data wanted).
func callData(ctx context.Context, se *session, req interminai.Request, v any) error {
	rep, err := se.b.call(ctx, req)
	if err != nil {
		return advise(req, err)
	}
	if v == nil {
		return nil
	}
	if err := rep.DecodeData(v); err != nil {
		return fmt.Errorf("the daemon's %s reply cannot be read (%w): is it a termverify-sandbox term daemon?", req.Type(), err)
	}
	return nil
}

// advise is err with what the agent can do about it.
func advise(req interminai.Request, err error) error {
	var re *interminai.RemoteError
	exited := errors.Is(err, term.ErrExited) || (errors.As(err, &re) && re.Message == "Process not running")
	switch {
	case exited:
		return fmt.Errorf("%s: the program has ended: terminal_status says how, terminal_output shows its last screen, terminal_stop closes the session", req.Type())
	case errors.Is(err, term.ErrInvalidSize):
		return fmt.Errorf("%s: %w: cols and rows must each be from 1 to 1024", req.Type(), err)
	case errors.Is(err, term.ErrUncatchable):
		return err
	}
	return fmt.Errorf("%s: %w", req.Type(), err)
}

// absDir is dir made absolute against base (the server's working
// directory when base is "").
func absDir(base, dir string) (string, error) {
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir), nil
	}
	if base == "" {
		return filepath.Abs(dir)
	}
	return filepath.Join(base, dir), nil
}
