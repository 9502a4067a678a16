package asciicast_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/asciicast"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/transcripttest"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// ptyTranscript is a PTY-mode transcript whose epochs print chunks, a
// key before each after the first, frames from vt as PTY mode takes them.
func ptyTranscript(t *testing.T, chunks []string) *transcript.Transcript {
	t.Helper()
	var buf bytes.Buffer
	w := transcript.NewWriter(&buf, "fuzz")
	check := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	transcripttest.Begin(t, w, 20, 5, true)
	emu := vt.New(vt.Config{Cols: 20, Rows: 5})
	for i, c := range chunks {
		if i > 0 {
			check(w.Input(input.Key{Keys: []string{"ArrowUp"}}))
		}
		_, _ = emu.WriteString(c)
		var events []transcript.Event
		if c != "" {
			events = []transcript.Event{{Type: "terminal.output", Data: canon.ObjectValue(canon.M("chunk", canon.StringValue(c)))}}
		}
		cur := emu.Cursor()
		check(w.Observe(transcript.Observation{State: canon.ObjectValue(), Events: events,
			UI:    transcript.UI{Cursor: transcript.Cursor{Row: int64(cur.Row), Column: int64(cur.Col), Visible: cur.Visible}},
			Frame: &transcript.Frame{Lines: emu.Lines(), Columns: 20, Rows: 5}}))
	}
	check(w.Finish(transcript.Exit{Kind: transcript.ExitCode}))
	check(w.Close())
	tr, err := transcript.Parse(buf.Bytes())
	check(err)
	return tr
}

// FuzzPTYExport: whatever a program printed, the export is one JSON
// header and [time, code, data] lines that encoding/json reads, the "o"
// data is the output exactly, in order, and fed back into vt it gives
// every frame; ArrowUp's bytes follow the cursor-key mode the output set.
func FuzzPTYExport(f *testing.F) {
	f.Add("hello\r\n", "\x1b[?1h\x1b[31mred\x1b[0m", "\x1b[2J\x1b[H<script>")
	f.Add("\x1b]0;title\x07", "", "\u00e9\u0301 wide \u4e16\u754c")
	f.Add("\x1b[?1049h\x1b[5;5Hx", "\x1b[?1l", "\x1b[?1049l")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		chunks := []string{strings.ToValidUTF8(a, "?"), strings.ToValidUTF8(b, "?"), strings.ToValidUTF8(c, "?")}
		tr := ptyTranscript(t, chunks)
		for _, v := range []int{asciicast.V2, asciicast.V3} {
			var out bytes.Buffer
			if err := asciicast.Encode(&out, tr, asciicast.Options{Version: v}); err != nil {
				t.Fatal(err)
			}
			_, events := decode(t, out.Bytes())
			var o strings.Builder
			emu := vt.New(vt.Config{Cols: 20, Rows: 5})
			epoch := 0
			for _, e := range events {
				switch e.code {
				case "o":
					o.WriteString(e.data)
					_, _ = emu.WriteString(e.data)
				case "i":
					want := "\x1b[A"
					if emu.Modes().AppCursor {
						want = "\x1bOA"
					}
					if e.data != want {
						t.Errorf("ArrowUp as %q, want %q in the modes the output set", e.data, want)
					}
				case "m":
					if got, want := strings.Join(emu.Lines(), "\n"), strings.Join(frameOf(t, tr, epoch), "\n"); got != want {
						t.Errorf("v%d epoch %d: %q, want %q", v, epoch, got, want)
					}
					epoch++
				}
			}
			if o.String() != strings.Join(chunks, "") {
				t.Errorf("v%d: o stream %q, want the output %q", v, o.String(), strings.Join(chunks, ""))
			}
		}
	})
}

// frameOf is observation n's frame lines.
func frameOf(t *testing.T, tr *transcript.Transcript, n int) []string {
	t.Helper()
	for i := range tr.Records {
		if o, ok := tr.Records[i].Observation(); ok {
			if n == 0 {
				return o.Frame.Lines
			}
			n--
		}
	}
	t.Fatalf("no observation %d", n)
	return nil
}
