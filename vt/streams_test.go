package vt

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the emulator")

// streamCase is a recorded stream of a real program (testdata/NAME.bin,
// made by testdata/record.py on an 80 × 24 terminal).
type streamCase struct {
	name string
	// scrollbackDiffers says why tmux's history is not compared: tmux
	// pushes lines of scrolled regions into it, which we do not.
	scrollbackDiffers string
}

var streamCases = []streamCase{
	{name: "vim", scrollbackDiffers: tmuxRegionHistory},
	{name: "less"},
	{name: "bash"},
	{name: "curses"},
	{name: "curses-so"},
	{name: "top-b"},
	{name: "top", scrollbackDiffers: tmuxRegionHistory},
}

func loadStream(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func replayStream(data []byte) *Terminal {
	term := New(Config{Cols: 80, Rows: 24, Scrollback: 2000})
	term.Write(data)
	return term
}

// snapshot is what a golden file holds: the screen and the state a
// consumer reads.
func snapshot(term *Terminal) string {
	var b strings.Builder
	for i, l := range term.Lines() {
		fmt.Fprintf(&b, "%2d|%s\n", i, l)
	}
	c := term.Cursor()
	fmt.Fprintf(&b, "cursor: row %d col %d visible %v\n", c.Row, c.Col, c.Visible)
	fmt.Fprintf(&b, "modes: %+v\n", term.Modes())
	fmt.Fprintf(&b, "title: %q\n", term.Title())
	fmt.Fprintf(&b, "scrollback: %d lines\n", term.ScrollbackLen())
	d := term.Diagnostics()
	fmt.Fprintf(&b, "diagnostics: %d\n", d.Total)
	for _, r := range d.Recent {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	return b.String()
}

// TestStreams replays each recorded program into the emulator and
// compares the result with its golden file (go test ./vt -update
// rewrites them; TestStreamsAgainstTmux checks them against tmux).
func TestStreams(t *testing.T) {
	for _, sc := range streamCases {
		t.Run(sc.name, func(t *testing.T) {
			data := loadStream(t, sc.name)
			term := replayStream(data)
			checkInvariants(t, term)
			got := snapshot(term)
			golden := filepath.Join("testdata", sc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", sc.name, golden, got)
			}
			// Fed a byte at a time, the result is the same: no sequence
			// depends on arriving in one Write.
			split := New(Config{Cols: 80, Rows: 24, Scrollback: 2000})
			for i := range data {
				split.Write(data[i : i+1])
			}
			if s := snapshot(split); s != got {
				t.Errorf("fed byte by byte:\n%s", s)
			}
		})
	}
}

// TestStreamsAgainstTmux replays each recorded program into tmux and
// requires every line, the style of every printed cell, the cursor and
// the modes to be equal; the scrollback too, unless the program scrolls
// regions.
func TestStreamsAgainstTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux comparison skipped in -short mode")
	}
	srv := startTmux(t)
	var jobs []replayJob
	for _, sc := range streamCases {
		jobs = append(jobs, replayJob{80, 24, []stage{{data: loadStream(t, sc.name)}}})
	}
	results := srv.replayAll(t, jobs)
	for i, sc := range streamCases {
		t.Run(sc.name, func(t *testing.T) {
			term := replayStream(jobs[i].stages[0].data)
			for _, d := range compareTmux(term, results[i], sc.scrollbackDiffers == "") {
				t.Error(d)
			}
		})
	}
}
