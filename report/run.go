package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// Run is one transcript to report on, named as the user gave its file.
type Run struct {
	Name       string
	Transcript *transcript.Transcript
}

// runView is what the page shows of one run.
type runView struct {
	ID       string // the anchor prefix: run-N
	File     string
	RunID    string
	Mode     string // "PTY" or "control/v1"
	Records  int
	Verdict  verdictView
	Receipts []receiptView
	Weakest  tierView
	Epochs   []epochView
	// After are the diagnostics after the last observation.
	After []diagView
}

// verdictView is the run's ending.
type verdictView struct {
	Class   string // ok, nonzero, failed, unsupported
	Word    string // finished, failed, unsupported
	Kind    string // the terminal record's kind
	Summary string // "exit code 0", "adapter-runtime-failed: …"
	Message string
	Details string // JSON, or ""
}

// tierView is a tier or status as a badge: its word, its class, and a
// symbol, so tiers differ in shape as well as colour (and in print).
type tierView struct{ Word, Class, Symbol string }

// receiptView is one row of the receipts table.
type receiptView struct {
	Constraint string
	Tier       tierView
	Mechanism  string
	Delivery   string
	Effective  string
	Reason     string
}

// epochView is one epoch: the inputs and diagnostics before its
// observation, and the observation.
type epochView struct {
	ID          string
	N           int
	Seq         int // the observation's
	AtMS        int64
	Title       string // "readiness" or the inputs' kinds
	Inputs      []inputView
	Diagnostics []diagView
	Screen      *screenView // PTY
	// control/v1
	State  string
	Frame  []string
	UI     string
	Events []eventView
	// Process is the observation's process member, when it has one.
	Process string
}

type inputView struct {
	Seq     int
	Kind    string
	Payload string
}

type diagView struct {
	Seq     int
	Code    string
	Message string
	Details string
}

type eventView struct {
	Type string
	Data string
}

// tierOf is a receipt's badge.
func tierOf(r receipts.Receipt) tierView {
	if r.Status == receipts.Unsupported {
		return tierView{Word: "unsupported", Class: "t-unsupported", Symbol: "✕"}
	}
	switch r.Tier {
	case receipts.OS:
		return tierView{Word: "os", Class: "t-os", Symbol: "■"}
	case receipts.Constructive:
		return tierView{Word: "constructive", Class: "t-constructive", Symbol: "◆"}
	case receipts.Delivered:
		return tierView{Word: "delivered", Class: "t-delivered", Symbol: "▲"}
	}
	return tierView{Word: termsafe.String(string(r.Tier)), Class: "t-other", Symbol: "?"}
}

// rank orders badges from the strongest (os) to the weakest.
func rank(t tierView) int {
	switch t.Class {
	case "t-os":
		return 0
	case "t-constructive":
		return 1
	case "t-delivered":
		return 2
	case "t-unsupported":
		return 4
	}
	return 3
}

// weakest is the weakest badge among a run's receipts; none for a run
// that has none.
func weakest(rs []receiptView) tierView {
	if len(rs) == 0 {
		return tierView{Word: "no receipts", Class: "t-other", Symbol: "–"}
	}
	w := rs[0].Tier
	for _, r := range rs[1:] {
		if rank(r.Tier) > rank(w) {
			w = r.Tier
		}
	}
	return w
}

// jsonText is v's canonical JSON, with its controls made visible.
func jsonText(enc string) string { return termsafe.String(enc) }

// prettyJSON indents canonical JSON for reading; termsafe.JSON keeps the
// indentation and escapes what could reorder the text.
func prettyJSON(enc string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(enc), "", "  "); err != nil {
		return termsafe.String(enc)
	}
	return string(termsafe.JSON(b.Bytes()))
}

// newRunView builds run i's view.
func newRunView(i int, r Run) runView {
	t := r.Transcript
	v := runView{ID: fmt.Sprintf("run-%d", i+1), File: termsafe.String(r.Name), RunID: termsafe.String(t.RunID),
		Mode: "control/v1", Records: len(t.Records)}
	pty := t.PTYMode()
	if pty {
		v.Mode = "PTY"
	}
	for _, rc := range t.Receipts() {
		rv := receiptView{Constraint: termsafe.String(string(rc.Constraint)), Tier: tierOf(rc.Receipt),
			Mechanism: termsafe.String(rc.Mechanism), Reason: termsafe.String(rc.Reason)}
		if rc.Delivery != nil {
			rv.Delivery = termsafe.String(string(rc.Delivery.Channel))
		}
		if rc.Status != receipts.Unsupported {
			rv.Effective = jsonText(compare.Encode(&rc.Effective))
		}
		v.Receipts = append(v.Receipts, rv)
	}
	v.Weakest = weakest(v.Receipts)
	v.Verdict = verdictOf(t)
	v.Epochs, v.After = epochsOf(v.ID, t, pty)
	return v
}

// verdictOf is the terminal record's verdict.
func verdictOf(t *transcript.Transcript) verdictView {
	last := &t.Records[len(t.Records)-1]
	vv := verdictView{Kind: termsafe.String(last.Kind)}
	if e, ok := last.Exit(); ok {
		vv.Class, vv.Word = "ok", "finished"
		vv.Summary = exitText(e)
		if e.Kind != transcript.ExitCode || e.Code != 0 {
			vv.Class = "nonzero" // the run finished; its subject did not succeed
		}
		return vv
	}
	if f, ok := last.Failure(); ok {
		vv.Class, vv.Word = "failed", "failed"
		vv.Summary = termsafe.String(f.Code)
		vv.Message = termsafe.String(f.Message)
		if f.Details != nil {
			vv.Details = prettyJSON(compare.Encode(f.Details))
		}
		return vv
	}
	if rf, ok := last.Refusal(); ok {
		vv.Class, vv.Word = "unsupported", "unsupported"
		vv.Summary = termsafe.String(string(rf.Constraint) + ": " + rf.Code)
		vv.Message = termsafe.String(rf.Message)
		return vv
	}
	vv.Class, vv.Word, vv.Summary = "failed", "failed", "no terminal record"
	return vv
}

func exitText(e transcript.Exit) string {
	if e.Kind == transcript.ExitSignal {
		return "killed by signal " + termsafe.String(e.Signal)
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// epochsOf groups the records into epochs: each observation with the
// inputs and diagnostics since the one before. For PTY mode an emulator
// is fed the recorded output (and resized by input.resize) as the driver's
// was, and each screen rendered from it when it shows the recorded frame.
func epochsOf(prefix string, t *transcript.Transcript, pty bool) ([]epochView, []diagView) {
	cfg := t.Config()
	var emu *vt.Terminal
	if pty {
		emu = vt.New(vt.Config{Cols: int(cfg.Terminal.Columns), Rows: int(cfg.Terminal.Rows)})
	}
	var epochs []epochView
	var prev []lineView
	cur := epochView{}
	for i := range t.Records {
		r := &t.Records[i]
		switch {
		case strings.HasPrefix(r.Kind, "input."):
			cur.Inputs = append(cur.Inputs, inputView{Seq: r.Seq, Kind: termsafe.String(r.Kind), Payload: jsonText(compare.Encode(r.Payload()))})
			if r.Kind == transcript.KindInputResize && emu != nil {
				if in, err := input.DecodeRecord(r.Kind, r.Payload()); err == nil {
					rs := in.(input.Resize)
					emu.Resize(int(rs.Columns), int(rs.Rows))
				}
			}
		case r.Kind == transcript.KindDiagnostic:
			d, _ := r.Diagnostic()
			dv := diagView{Seq: r.Seq, Code: termsafe.String(d.Code), Message: termsafe.String(d.Message)}
			if d.Details != nil {
				dv.Details = jsonText(compare.Encode(d.Details))
			}
			cur.Diagnostics = append(cur.Diagnostics, dv)
		case r.Kind == transcript.KindObservation:
			o, _ := r.Observation()
			cur.N, cur.Seq = len(epochs), r.Seq
			cur.ID = fmt.Sprintf("%s-epoch-%d", prefix, cur.N)
			cur.AtMS, _ = r.AtMS()
			cur.Title = titleOf(cur)
			if o.Process != nil {
				cur.Process = "running"
				if o.Process.Exited {
					cur.Process = "exited, " + exitText(o.Process.Exit)
				}
			}
			if pty {
				cur.Screen = ptyScreen(emu, o, prev)
				prev = cur.Screen.Lines
			} else {
				cur.State = prettyJSON(compare.Encode(&o.State))
				if o.Frame != nil {
					for _, l := range o.Frame.Lines {
						cur.Frame = append(cur.Frame, termsafe.String(l))
					}
				}
				cur.UI = uiText(o.UI)
				for _, e := range o.Events {
					cur.Events = append(cur.Events, eventView{Type: termsafe.String(e.Type), Data: jsonText(compare.Encode(&e.Data))})
				}
			}
			epochs = append(epochs, cur)
			cur = epochView{}
		}
	}
	return epochs, cur.Diagnostics
}

// titleOf names an epoch by what opened it.
func titleOf(e epochView) string {
	if len(e.Inputs) == 0 {
		if e.N == 0 {
			return "readiness"
		}
		return "no input"
	}
	kinds := make([]string, len(e.Inputs))
	for i, in := range e.Inputs {
		kinds[i] = in.Kind
	}
	return strings.Join(kinds, ", ")
}

// uiText is a control/v1 observation's ui member in words.
func uiText(ui transcript.UI) string {
	var parts []string
	vis := "hidden"
	if ui.Cursor.Visible {
		vis = "visible"
	}
	parts = append(parts, fmt.Sprintf("cursor row %d, column %d, %s", ui.Cursor.Row+1, ui.Cursor.Column+1, vis))
	if ui.Mode != nil {
		parts = append(parts, "mode "+termsafe.String(*ui.Mode))
	}
	if ui.Focus != nil {
		parts = append(parts, "focus "+termsafe.String(*ui.Focus))
	}
	for _, rg := range ui.Regions {
		parts = append(parts, fmt.Sprintf("region %s (%s) at %d,%d %d×%d", termsafe.String(rg.ID), termsafe.String(rg.Role),
			rg.Bounds.Column, rg.Bounds.Row, rg.Bounds.Columns, rg.Bounds.Rows))
	}
	return strings.Join(parts, "; ")
}

// ptyScreen feeds an observation's output to emu and renders the screen:
// styled when emu shows exactly the recorded frame, else the frame's text
// with a note (the recorded frame is the evidence; the colours are only
// what its output reproduces).
func ptyScreen(emu *vt.Terminal, o transcript.Observation, prev []lineView) *screenView {
	for _, e := range o.Events {
		if e.Type != "terminal.output" {
			continue
		}
		if c, ok := e.Data.Get("chunk"); ok && c != nil {
			_, _ = emu.WriteString(c.Str)
		}
	}
	_ = emu.Replies()
	cols, rows := emu.Size()
	sv := &screenView{Cols: cols, Rows: rows}
	cur := o.UI.Cursor
	vis := "hidden"
	if cur.Visible {
		vis = "visible"
	}
	sv.Cursor = fmt.Sprintf("row %d, column %d, %s", cur.Row+1, cur.Column+1, vis)
	sv.Mode = "normal"
	if o.UI.Mode != nil {
		sv.Mode = termsafe.String(*o.UI.Mode)
	}
	switch {
	case o.Frame == nil:
		sv.Note = "this observation has no frame: the screen shown is the recorded output's"
		sv.Lines = styledScreen(emu, cur)
	case slices.Equal(emu.Lines(), o.Frame.Lines):
		sv.Styled = true
		sv.Lines = styledScreen(emu, cur)
	default:
		sv.Note = "the recorded output does not reproduce this frame exactly: shown is the recorded frame's text, without colours"
		sv.Cols, sv.Rows = int(o.Frame.Columns), int(o.Frame.Rows)
		sv.Lines = plainScreen(o.Frame)
	}
	sv.Changed = markChanged(sv.Lines, prev)
	return sv
}
