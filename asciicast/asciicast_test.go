package asciicast_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/asciicast"
	"github.com/termverify/termverify-sandbox/internal/transcripttest"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// ptyFixture is a real run --pty of bash (testdata/pty/README.md says how
// it was made): colours, a resize, keys, and an exit of 3; vimFixture one
// of vim: the alternate screen, wide characters, syntax colours.
const (
	ptyFixture = "../testdata/pty/bash.jsonl"
	vimFixture = "../testdata/pty/vim.jsonl"
)

func encode(t *testing.T, tr *transcript.Transcript, o asciicast.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := asciicast.Encode(&buf, tr, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// event is one decoded line of a recording.
type event struct {
	at   float64
	code string
	data string
}

// decode reads a recording back with encoding/json, line by line, as a
// player would: the header object, then [time, code, data] arrays.
func decode(t *testing.T, data []byte) (map[string]any, []event) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 8<<20)
	var header map[string]any
	var events []event
	for sc.Scan() {
		if header == nil {
			if err := json.Unmarshal(sc.Bytes(), &header); err != nil {
				t.Fatalf("header %q: %v", sc.Text(), err)
			}
			continue
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil || len(raw) != 3 {
			t.Fatalf("event %q: not a 3-element array (%v)", sc.Text(), err)
		}
		var e event
		if err := json.Unmarshal(raw[0], &e.at); err != nil {
			t.Fatalf("event %q: time: %v", sc.Text(), err)
		}
		if err := json.Unmarshal(raw[1], &e.code); err != nil {
			t.Fatalf("event %q: code: %v", sc.Text(), err)
		}
		if err := json.Unmarshal(raw[2], &e.data); err != nil {
			t.Fatalf("event %q: data must be a string: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return header, events
}

// frames are the transcript's observations' frames, in order (nil for
// an observation without one).
func frames(tr *transcript.Transcript) [][]string {
	var out [][]string
	for i := range tr.Records {
		if o, ok := tr.Records[i].Observation(); ok {
			var lines []string
			if o.Frame != nil {
				lines = o.Frame.Lines
			}
			out = append(out, lines)
		}
	}
	return out
}

// replayScreens feeds the "o" events into a fresh vt of the header's size,
// resizing at each "r", and takes the screen at each "m" marker.
func replayScreens(t *testing.T, cols, rows int, events []event) [][]string {
	t.Helper()
	emu := vt.New(vt.Config{Cols: cols, Rows: rows})
	var screens [][]string
	for _, e := range events {
		switch e.code {
		case "o":
			_, _ = emu.WriteString(e.data)
		case "r":
			c, r, ok := strings.Cut(e.data, "x")
			cn, err1 := strconv.Atoi(c)
			rn, err2 := strconv.Atoi(r)
			if !ok || err1 != nil || err2 != nil {
				t.Fatalf("resize %q is not COLSxROWS", e.data)
			}
			emu.Resize(cn, rn)
		case "m":
			screens = append(screens, emu.Lines())
		}
	}
	return screens
}

// TestPTYOutputReproducesFrames: the "o" stream of an export, fed back
// into vt, gives every recorded frame, at every marker, in both versions.
func TestPTYOutputReproducesFrames(t *testing.T) {
	for _, fixture := range []string{ptyFixture, vimFixture} {
		for _, v := range []int{asciicast.V2, asciicast.V3} {
			t.Run(filepath.Base(fixture)+"/v"+strconv.Itoa(v), func(t *testing.T) { checkReproduces(t, fixture, v) })
		}
	}
}

func checkReproduces(t *testing.T, fixture string, v int) {
	tr := transcripttest.Load(t, fixture)
	want := frames(tr)
	header, events := decode(t, encode(t, tr, asciicast.Options{Version: v}))
	cols, rows := int(tr.Config().Terminal.Columns), int(tr.Config().Terminal.Rows)
	got := replayScreens(t, cols, rows, events)
	if len(got) != len(want) {
		t.Fatalf("%d markers, want one per observation (%d)", len(got), len(want))
	}
	for i := range want {
		if want[i] == nil {
			t.Fatalf("observation %d of a PTY transcript has no frame", i)
		}
		if strings.Join(got[i], "\n") != strings.Join(want[i], "\n") {
			t.Errorf("epoch %d: screen\n%s\nwant the recorded frame\n%s", i, strings.Join(got[i], "\n"), strings.Join(want[i], "\n"))
		}
	}
	if v == asciicast.V2 {
		if header["version"] != 2.0 || header["width"] != float64(cols) || header["height"] != float64(rows) {
			t.Errorf("v2 header %v: want version 2, width %d, height %d", header, cols, rows)
		}
		if env, _ := header["env"].(map[string]any); env["TERM"] != "xterm-256color" {
			t.Errorf("v2 header env %v: want TERM xterm-256color", header["env"])
		}
	} else {
		term, _ := header["term"].(map[string]any)
		if header["version"] != 3.0 || term["cols"] != float64(cols) || term["rows"] != float64(rows) || term["type"] != "xterm-256color" {
			t.Errorf("v3 header %v: want version 3, term {cols %d, rows %d, type xterm-256color}", header, cols, rows)
		}
	}
	if header["title"] != tr.RunID {
		t.Errorf("title %v, want the run id %q", header["title"], tr.RunID)
	}
}

// TestPTYEvents: the inputs are the bytes PTY mode wrote (a text's bytes,
// ArrowUp as CSI A since bash set no application cursor mode, Control+c
// as ETX), the resize is "r", and v3 ends with "x" 3, bash's exit.
func TestPTYEvents(t *testing.T) {
	tr := transcripttest.Load(t, ptyFixture)
	_, v2 := decode(t, encode(t, tr, asciicast.Options{}))
	var inputs, resizes, markers []string
	for _, e := range v2 {
		switch e.code {
		case "i":
			inputs = append(inputs, e.data)
		case "r":
			resizes = append(resizes, e.data)
		case "m":
			markers = append(markers, e.data)
		case "x":
			t.Errorf("v2 has an x event: %q", e.data)
		}
	}
	if len(inputs) != 5 || inputs[2] != "\x1b[A" || inputs[3] != "\x03" || !strings.HasSuffix(inputs[0], "\r") {
		t.Errorf("inputs %q: want 3 texts and the bytes of ArrowUp and Control+c, in order", inputs)
	}
	if len(resizes) != 1 || resizes[0] != "60x12" {
		t.Errorf("resizes %q, want [60x12]", resizes)
	}
	if len(markers) != 7 || markers[0] != "epoch 0 (seq 8)" || markers[6] != "epoch 6 (seq 20)" {
		t.Errorf("markers %q: want one per observation naming epoch and seq", markers)
	}
	_, v3 := decode(t, encode(t, tr, asciicast.Options{Version: asciicast.V3}))
	if last := v3[len(v3)-1]; last.code != "x" || last.data != "3" {
		t.Errorf("v3 ends with %+v, want [_, x, 3]", last)
	}
	if len(v3) != len(v2)+1 {
		t.Errorf("v3 has %d events, v2 %d: want the same plus x", len(v3), len(v2))
	}
}

// TestTime: times are logical, by the pace: v2 absolute and never going
// back, v3 intervals that sum to v2's times; the same transcript gives
// the same bytes, and another pace other times.
func TestTime(t *testing.T) {
	tr := transcripttest.Load(t, ptyFixture)
	pace := 250 * time.Millisecond
	a := encode(t, tr, asciicast.Options{Pace: pace})
	if b := encode(t, tr, asciicast.Options{Pace: pace}); !bytes.Equal(a, b) {
		t.Fatal("two exports of one transcript differ")
	}
	if bytes.Equal(a, encode(t, tr, asciicast.Options{})) {
		t.Error("the pace changed nothing")
	}
	_, v2 := decode(t, a)
	_, v3 := decode(t, encode(t, tr, asciicast.Options{Pace: pace, Version: asciicast.V3}))
	sum, prev, epoch := 0.0, 0.0, 0
	for i, e := range v2 {
		if e.at < prev {
			t.Errorf("event %d at %v before %v", i, e.at, prev)
		}
		prev = e.at
		sum += v3[i].at
		if d := sum - e.at; d > 1e-6 || d < -1e-6 {
			t.Errorf("event %d: v3 intervals sum to %v, v2 says %v", i, sum, e.at)
		}
		if e.code == "m" {
			if want := float64(epoch) * pace.Seconds(); e.at != want {
				t.Errorf("marker %d at %v, want epoch × pace = %v", epoch, e.at, want)
			}
			epoch++
		}
		if e.code == "i" && e.at != float64(epoch)*pace.Seconds()-pace.Seconds()/2 {
			t.Errorf("input before epoch %d at %v, want half a pace before it", epoch, e.at)
		}
	}
}

// TestControlFrames: a control/v1 transcript's frames are redraws that
// give the frame again; one without frames is refused.
func TestControlFrames(t *testing.T) {
	tr := transcripttest.Load(t, "../examples/transcripts/finished.jsonl")
	_, events := decode(t, encode(t, tr, asciicast.Options{}))
	got := replayScreens(t, 80, 24, events)
	want := frames(tr)
	if len(got) != len(want) {
		t.Fatalf("%d markers, want %d", len(got), len(want))
	}
	for i := range want {
		if want[i] == nil {
			continue // no frame: the screen stays the one before
		}
		if strings.Join(got[i], "\n") != strings.Join(want[i], "\n") {
			t.Errorf("epoch %d: %q, want %q", i, got[i], want[i])
		}
	}
	for _, e := range events {
		if e.code == "i" {
			t.Errorf("a control/v1 export has an input event %q: no bytes were written to a terminal", e.data)
		}
	}
	noFrames := withoutFrames(t, tr)
	err := asciicast.Encode(&bytes.Buffer{}, noFrames, asciicast.Options{})
	var nf *asciicast.NoFramesError
	if !errors.As(err, &nf) {
		t.Fatalf("export without frames: %v, want a NoFramesError", err)
	}
}

// withoutFrames is tr with every observation's frame taken out.
func withoutFrames(t *testing.T, tr *transcript.Transcript) *transcript.Transcript {
	t.Helper()
	var b bytes.Buffer
	for i := range tr.Records {
		line, err := json.Marshal(recordJSON(t, tr, i))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	out, err := transcript.Parse(canonical(t, b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func recordJSON(t *testing.T, tr *transcript.Transcript, i int) map[string]any {
	t.Helper()
	enc, err := transcript.Encode(&transcript.Transcript{RunID: tr.RunID, Records: tr.Records[i : i+1]})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(enc, &m); err != nil {
		t.Fatal(err)
	}
	if m["kind"] == "observation" {
		delete(m["payload"].(map[string]any), "frame")
	}
	return m
}

// canonical re-encodes lines with the jcs tool the codec's tests use:
// encoding/json sorts members and, without HTML escaping, writes what
// RFC 8785 writes for these records (strings and small integers).
func canonical(t *testing.T, data []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// TestRefusals: a version or pace out of range is refused before anything
// is written.
func TestRefusals(t *testing.T) {
	tr := transcripttest.Load(t, ptyFixture)
	for _, o := range []asciicast.Options{{Version: 1}, {Version: 4}, {Pace: time.Microsecond}, {Pace: 2 * time.Hour}} {
		var buf bytes.Buffer
		if err := asciicast.Encode(&buf, tr, o); err == nil || buf.Len() != 0 {
			t.Errorf("%+v: err %v, %d bytes written; want a refusal and nothing", o, err, buf.Len())
		}
	}
}

// TestAsciinemaCat: Debian's asciinema (2.x, which reads v2) plays a v2
// export to the end, writing exactly its "o" stream.
func TestAsciinemaCat(t *testing.T) {
	bin, err := exec.LookPath("asciinema")
	if err != nil {
		t.Skip("asciinema is not installed (scripts/setup.sh installs Debian's package): ", err)
	}
	tr := transcripttest.Load(t, ptyFixture)
	data := encode(t, tr, asciicast.Options{})
	path := filepath.Join(t.TempDir(), "run.cast")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// asciinema cat opens /dev/tty (to put it in raw mode): it gets a
	// pseudoterminal of its own as its controlling terminal, and its
	// stdout stays a pipe, so what it prints is read untranslated.
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	cmd := exec.Command(bin, "cat", path)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("asciinema cat: %v\n%s", err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("asciinema cat wrote to stderr: %s", stderr.String())
	}
	_, events := decode(t, data)
	var want strings.Builder
	for _, e := range events {
		if e.code == "o" {
			want.WriteString(e.data)
		}
	}
	if stdout.String() != want.String() {
		t.Errorf("asciinema cat wrote %d bytes, want the %d of the o events", stdout.Len(), want.Len())
	}
}

// openPTY opens a pseudoterminal pair of the host's devpts.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skip("no pseudoterminal for asciinema cat's /dev/tty: ", err)
	}
	master = os.NewFile(uintptr(fd), "ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Fatal(err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		master.Close()
		t.Skip("TIOCGPTPEER: ", errno)
	}
	return master, os.NewFile(sfd, "pts")
}

// TestPTYKeyModes: vim turned on application cursor keys (smkx), so its
// ArrowUp was written as SS3 A, which the export says, as PTY mode's
// driver wrote it.
func TestPTYKeyModes(t *testing.T) {
	_, events := decode(t, encode(t, transcripttest.Load(t, vimFixture), asciicast.Options{}))
	var inputs []string
	for _, e := range events {
		if e.code == "i" {
			inputs = append(inputs, e.data)
		}
	}
	if len(inputs) != 5 || inputs[3] != "\x1bOA" {
		t.Errorf("vim's inputs %q: want ArrowUp as ESC O A", inputs)
	}
}
