package term

import (
	"context"
	"math"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/interminai"
)

// Do carries out one request on the daemon, with no socket between, and
// returns its reply's data: what the daemon's server answers, and what
// an in-process owner (term mcp's sessions) asks the same way. STOP is
// not here: it ends the daemon, which is its owner's to do (the server
// shuts itself down with it; an MCP session stops and closes it).
func (d *Daemon) Do(ctx context.Context, req interminai.Request) (any, error) {
	switch req := req.(type) {
	case *interminai.Input:
		ictx, cancel := context.WithTimeout(ctx, inputWait)
		defer cancel()
		return nil, d.Input(ictx, []byte(req.Data))
	case *interminai.Output:
		sc := d.Output(outputRange(req), req.Format == interminai.FormatANSI)
		return interminai.OutputData{
			Screen: sc.Text,
			Cursor: interminai.Cursor{Row: sc.Row, Col: sc.Col},
			Size:   interminai.Size{Rows: sc.Rows, Cols: sc.Cols},
			From:   sc.From, To: sc.To,
			ScrollbackAvailable: sc.Scrollback, ScrollbackCapacity: sc.ScrollbackN,
		}, nil
	case *interminai.Status:
		st := d.Status(req.Activity)
		out := interminai.StatusData{Running: st.Running, Sandbox: d.sandboxStatus()}
		if !st.Running {
			out.ExitCode = &st.ExitCode
			out.ExitUnobserved = st.Unobserved
		}
		if req.Activity {
			out.Activity = &st.Activity
		}
		return out, nil
	case *interminai.Wait:
		return d.waitRequest(ctx, req)
	case *interminai.Kill:
		if err := d.Signal(unix.Signal(req.Signal)); err != nil {
			return nil, err
		}
		return interminai.KillData{SignalSent: interminai.SignalName(req.Signal)}, nil
	case *interminai.Resize:
		if err := d.Resize(req.Size.Cols, req.Size.Rows); err != nil {
			return nil, err
		}
		return nil, nil
	case *interminai.Debug:
		return d.Debug(req.Clear)
	case *interminai.Receipts:
		return d.Receipts()
	}
	return nil, notBuilt(req.Type())
}

// waitRequest is WAIT in the seed's two modes, bounded by its timeout when it
// has one.
func (d *Daemon) waitRequest(ctx context.Context, req *interminai.Wait) (any, error) {
	if req.HasTimeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, req.Timeout, errWaitTimeout)
		defer cancel()
	}
	switch {
	case req.Settled:
		st, err := d.Settle(ctx)
		if err != nil {
			return nil, err
		}
		return d.settled(st), nil
	case req.Contains != "":
		found, at, err := d.WaitText(ctx, req.Contains, req.Line)
		if err != nil {
			return nil, err
		}
		out := ContainsData{Found: found, Exited: d.Exited(), Screen: d.Output(Range{}, false).Text}
		if found {
			out.Line = &at
		}
		return out, nil
	}
	st, err := d.Wait(ctx, req.Activity)
	if err != nil {
		return nil, err
	}
	if req.Activity {
		return interminai.WaitActivityData{Activity: st.Activity, Exited: !st.Running}, nil
	}
	return interminai.WaitExitData{ExitCode: st.ExitCode, ExitUnobserved: st.Unobserved}, nil
}

// SettledData and ContainsData are the reply data of our own WAIT modes
// (seed 002 has neither): the verdict, whether the program has ended, and
// the screen as text, so that one request both waits and reads.
type (
	SettledData struct {
		Settled  bool   `json:"settled"`
		Exited   bool   `json:"exited"`
		ExitCode *int   `json:"exit_code,omitempty"`
		Screen   string `json:"screen"`
	}
	ContainsData struct {
		Found  bool   `json:"found"`
		Line   *int   `json:"line,omitempty"` // 1-based screen line it was found on
		Exited bool   `json:"exited"`
		Screen string `json:"screen"`
	}
)

func (d *Daemon) settled(st Status) SettledData {
	out := SettledData{Settled: st.Running, Exited: !st.Running, Screen: d.Output(Range{}, false).Text}
	if !st.Running {
		out.ExitCode = &st.ExitCode
	}
	return out
}

// outputRange is OUTPUT's range in the daemon's terms.
func outputRange(req *interminai.Output) Range {
	var r Range
	switch req.From.Kind {
	case interminai.LineNumber:
		r.From = req.From.N
	case interminai.LineOldest:
		r.Oldest = true
	}
	switch req.To.Kind {
	case interminai.LineNumber:
		to := req.To.N
		r.To = &to
	case interminai.LineOldest:
		to := math.MinInt // clamped to the oldest line
		r.To = &to
	}
	return r
}
