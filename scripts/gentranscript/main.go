// Command gentranscript writes a realistic, valid termverify.transcript/v1
// transcript of about -size bytes for benchmarks: one run with many epochs
// (text, keys, clock advances, resizes), each closed by an observation
// carrying an 80x24 text frame, terminal.output events with ANSI escapes,
// regions and state, plus diagnostics. It writes through transcript.Writer,
// so the output is valid by construction, and it is deterministic (fixed
// PRNG seed): the same flags give the same bytes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

func main() {
	size := flag.Int("size", 30<<20, "stop adding epochs once the transcript reaches this many bytes")
	out := flag.String("o", "-", "output file (- for stdout)")
	long := flag.Int("long", 0, "instead, a transcript of this many epochs whose observations are long lines of many JSON values (the streaming checker's memory case; see -shape)")
	shape := flag.String("shape", "state", "with -long, what fills each observation: state (~3.8 MB, ~99,000 opaque values), regions (11,000 UI regions), events (16,384 events) or lines (16,384 frame lines)")
	flag.Parse()
	gen := func(bw *bufio.Writer) error { return generate(bw, *size) }
	if *long > 0 {
		obs, err := LongObservation(*shape)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gentranscript: %v\n", err)
			os.Exit(2)
		}
		gen = func(bw *bufio.Writer) error { return generateLong(bw, *long, obs) }
	}
	if err := run(*out, gen); err != nil {
		fmt.Fprintf(os.Stderr, "gentranscript: %v\n", err)
		os.Exit(1)
	}
}

func run(path string, gen func(*bufio.Writer) error) error {
	f := os.Stdout
	if path != "-" {
		var err error
		if f, err = os.Create(path); err != nil {
			return err
		}
		defer f.Close()
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := gen(bw); err != nil {
		return err
	}
	return bw.Flush()
}

var words = strings.Fields(`the quick brown fox jumps over lazy dog lorem ipsum dolor sit amet
	build test deploy error warning info debug trace commit branch merge rebase status
	file open close read write seek sync socket connect listen accept`)

// negotiate starts the run and applies all seven constraints.
func negotiate(w *transcript.Writer) {
	cfg := config.Config{
		Seed:       "42",
		Clock:      config.Clock{Mode: "manual", InitialMS: 0},
		Locale:     "en-US",
		Timezone:   "UTC",
		Terminal:   config.Terminal{Columns: 80, Rows: 24, Capabilities: []string{}},
		Filesystem: config.Filesystem{Mode: "sandbox", RootID: "bench-root"},
		Network:    config.Network{Mode: config.NetworkDeny},
	}
	check(w.Start(cfg, transcript.Subject{
		Application: transcript.Application{ID: "bench-app", Version: "1.0.0", Build: "b42"},
		Fixture:     transcript.Selector{ID: "bench", Version: "1"},
		Adapter:     transcript.Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion},
		Normalizer:  transcript.Selector{ID: "identity", Version: "1"},
		StateSchema: transcript.Selector{ID: "bench-state", Version: "1"},
	}))
	env := map[receipts.Constraint]map[string]string{
		receipts.Seed:     {"TERMVERIFY_SEED": "42"},
		receipts.Clock:    {"TERMVERIFY_CLOCK_INITIAL_MS": "0"},
		receipts.Locale:   {"TERMVERIFY_LOCALE": "en-US"},
		receipts.Timezone: {"TERMVERIFY_TIMEZONE": "UTC", "TZ": "UTC0"},
	}
	for _, c := range receipts.Constraints() {
		switch {
		case env[c] != nil:
			check(w.Applied(c, receipts.Delivered, &receipts.Delivery{Channel: receipts.SpawnEnv, Env: env[c]}))
		case c == receipts.Terminal:
			check(w.Applied(c, receipts.Delivered, &receipts.Delivery{Channel: receipts.HelloConfig}))
		default:
			check(w.Applied(c, receipts.OS, nil))
		}
	}
}

// check panics on a refused record: the generator's own bug, which
// generate turns into a message.
func check(err error) {
	if err != nil {
		panic(err)
	}
}

func generate(bw *bufio.Writer, size int) error {
	r := rand.New(rand.NewPCG(1, 2))
	w := transcript.NewWriter(bw, "bench-run")
	defer func() {
		if p := recover(); p != nil {
			panic(fmt.Sprintf("generator produced a refused record: %v", p))
		}
	}()
	negotiate(w)
	screen := make([]string, 24)
	for i := range screen {
		screen[i] = strings.Repeat(" ", 80)
	}
	check(w.Observe(observation(r, screen, 0)))
	const stopMargin = 64 << 10
	for epoch := 1; w.Bytes() < size-stopMargin && w.Records() < canon.MaxRecords-8; epoch++ {
		switch epoch % 10 {
		case 3:
			check(w.Input(input.ClockAdvanced{DeltaMS: int64(1 + r.IntN(500))}))
		case 5:
			check(w.Input(input.Key{Keys: []string{"Control", "c"}}))
		case 7:
			check(w.Input(input.Key{Keys: []string{"Enter"}}))
		case 9:
			check(w.Input(input.Resize{Columns: 80, Rows: 24}))
		default:
			check(w.Input(input.Text{Text: sentence(r, 3+r.IntN(8))}))
		}
		if epoch%4 == 0 {
			details := canon.ObjectValue(canon.M("epoch", canon.IntValue(int64(epoch))), canon.M("phase", canon.StringValue("render")))
			check(w.Diagnostic(transcript.Diagnostic{Code: "render-slow", Message: sentence(r, 6), Details: &details}))
		}
		check(w.Observe(observation(r, screen, epoch)))
	}
	check(w.Input(input.Stop{}))
	exit := transcript.Exit{Kind: transcript.ExitCode}
	o := observation(r, screen, -1)
	o.Process = &transcript.Process{Exited: true, Exit: exit}
	check(w.Observe(o))
	check(w.Finish(exit))
	return w.Close()
}

func sentence(r *rand.Rand, n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = words[r.IntN(len(words))]
	}
	return strings.Join(s, " ")
}

// observation scrolls a few new lines onto the screen and reports them as
// an 80x24 frame plus the terminal output that drew them.
func observation(r *rand.Rand, screen []string, epoch int) transcript.Observation {
	var chunks []transcript.Event
	for range 8 + r.IntN(10) {
		line := fmt.Sprintf("%4d %s", epoch, sentence(r, 4+r.IntN(10)))
		if len(line) > 80 {
			line = line[:80]
		}
		copy(screen, screen[1:])
		screen[len(screen)-1] = line + strings.Repeat(" ", 80-len(line))
		chunk := fmt.Sprintf("\x1b[%dm%s\x1b[0m\r\n\x1b[K", 31+r.IntN(6), line)
		chunks = append(chunks, transcript.Event{Type: "terminal.output",
			Data: canon.ObjectValue(canon.M("chunk", canon.StringValue(chunk)))})
	}
	// A full-screen application repaints every row with cursor addressing.
	var redraw strings.Builder
	for row, line := range screen {
		fmt.Fprintf(&redraw, "\x1b[%d;1H\x1b[%dm%s", row+1, 30+row%8, line)
	}
	chunks = append(chunks, transcript.Event{Type: "terminal.output",
		Data: canon.ObjectValue(canon.M("chunk", canon.StringValue(redraw.String())))})
	chunks = append(chunks, transcript.Event{Type: "app.render", Data: canon.ObjectValue(
		canon.M("dirty", canon.ArrayValue(canon.IntValue(22), canon.IntValue(23))),
		canon.M("full", canon.BoolValue(r.IntN(10) == 0)))})
	mode := "insert"
	focus := "editor"
	return transcript.Observation{
		State: canon.ObjectValue(
			canon.M("buffer", canon.StringValue(screen[len(screen)-1])),
			canon.M("line", canon.IntValue(int64(epoch))),
			canon.M("dirty", canon.BoolValue(epoch%2 == 0)),
		),
		Events: chunks,
		UI: transcript.UI{
			Regions: []transcript.Region{
				{ID: "editor", Role: "main", Bounds: transcript.Bounds{Column: 0, Row: 0, Columns: 80, Rows: 23}},
				{ID: "status", Role: "status", Bounds: transcript.Bounds{Column: 0, Row: 23, Columns: 80, Rows: 1}},
			},
			Focus:  &focus,
			Cursor: transcript.Cursor{Column: int64(r.IntN(80)), Row: 22, Visible: true},
			Mode:   &mode,
		},
		Frame: &transcript.Frame{Lines: append([]string(nil), screen...), Columns: 80, Rows: 24},
	}
}

// generateLong writes a valid transcript of n epochs (a text input and
// an observation each) after a readiness observation, every observation
// obs: one of LongObservation's, lines where a decoded tree costs far
// more than the line's bytes.
func generateLong(bw *bufio.Writer, n int, obs transcript.Observation) error {
	w := transcript.NewWriter(bw, "long-run")
	defer func() {
		if p := recover(); p != nil {
			panic(fmt.Sprintf("generator produced a refused record: %v", p))
		}
	}()
	negotiate(w)
	check(w.Observe(obs))
	for range n - 1 {
		check(w.Input(input.Text{Text: "x"}))
		check(w.Observe(obs))
	}
	check(w.Finish(transcript.Exit{Kind: transcript.ExitCode}))
	return w.Close()
}

// LongObservation is the observation of a -long transcript of the given
// shape:
//   - state: a ~3.8 MB line of ~99,000 values, nearly all in its state
//     (strings with escapes, floats, integers, literals, small objects),
//     which the validator does not look into;
//   - regions: 11,000 UI regions (~847 KB, ~88,000 values), each checked;
//   - events: 16,384 events (the most an array holds) of short data;
//   - lines: a frame of 16,384 short lines.
//
// transcript's TestLongLineMemory builds the same observations.
func LongObservation(shape string) (transcript.Observation, error) {
	obs := transcript.Observation{State: canon.ObjectValue(), Events: []transcript.Event{}, UI: transcript.UI{Regions: []transcript.Region{}}}
	switch shape {
	case "state":
		obs.State = LongState(3_800_000)
	case "regions":
		for k := range int64(11_000) {
			obs.UI.Regions = append(obs.UI.Regions, transcript.Region{ID: fmt.Sprintf("region-%05d", k), Role: "pane",
				Bounds: transcript.Bounds{Column: k % 200, Row: k / 200, Columns: 1 + k%7, Rows: 1 + k%5}})
		}
		focus := "region-10999"
		obs.UI.Focus = &focus
	case "events":
		for k := range 16_384 {
			obs.Events = append(obs.Events, transcript.Event{Type: "out", Data: canon.IntValue(int64(k))})
		}
	case "lines":
		f := &transcript.Frame{Columns: 12, Rows: 16_384}
		for k := range 16_384 {
			f.Lines = append(f.Lines, fmt.Sprintf("line %06d", k))
		}
		obs.Frame = f
	default:
		return obs, fmt.Errorf("unknown -shape %q (state, regions, events, lines)", shape)
	}
	return obs, nil
}

// LongState is an observation state of about size bytes of canonical
// JSON and at most ~99,000 values, its strings within the 2 MiB a record
// may hold: rows of [string, float, integer, true, null, {"k": string}],
// 8 values and ~310 bytes each, the strings' control characters escaped
// as \u00XX (six bytes on the line, one counted). transcript's
// TestLongLineMemory builds the same state.
func LongState(size int) canon.Value {
	esc := strings.Repeat("a\x01", 30) // 60 bytes counted, 210 on the line
	key := strings.Repeat("v", 40)
	var rows []canon.Value
	for bytes := 20; bytes+310 < size && len(rows) < 12_300; bytes += 310 {
		k := int64(len(rows))
		f, _ := canon.FloatValue(1.2345678901234567e-7 * float64(k+1))
		rows = append(rows, canon.ArrayValue(
			canon.StringValue(esc),
			f,
			canon.IntValue(9_007_199_254_740_991-k),
			canon.BoolValue(true),
			canon.NullValue(),
			canon.ObjectValue(canon.M("k", canon.StringValue(key))),
		))
	}
	return canon.ObjectValue(canon.M("rows", canon.ArrayValue(rows...)))
}
