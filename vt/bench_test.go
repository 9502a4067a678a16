package vt

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// benchSize is the size of each benchmark stream: large enough that tmux
// spends a second or so on it, so that its start-up cost is noise.
const benchSize = 16 << 20

// mixedStream is a large mixed ANSI stream: the recorded sessions of vim,
// less, bash, curses and top (cursor movement, SGR, line drawing, wide
// characters, erases, scroll regions, alternate screen), one after the
// other, repeated to benchSize.
func mixedStream(tb testing.TB) []byte {
	var one []byte
	for _, sc := range streamCases {
		one = append(one, loadStream(tb, sc.name)...)
		one = append(one, "\x1b[0m\x1b[r\x1b[?1049l"...) // each session starts clean
	}
	out := make([]byte, 0, benchSize+len(one))
	for len(out) < benchSize {
		out = append(out, one...)
	}
	return out
}

// logStream is scrolling log output: lines of 40–120 columns with a
// coloured level, as a service prints them, to benchSize.
func logStream() []byte {
	levels := []string{"\x1b[32mINFO\x1b[0m ", "\x1b[33mWARN\x1b[0m ", "\x1b[1;31mERROR\x1b[0m", "\x1b[2mDEBUG\x1b[0m"}
	words := strings.Fields("request served path=/api/v1/items status=200 bytes=5123 duration=1.2ms user=alice trace=9f8e7d6c5b4a retry=0 cache=hit")
	var b strings.Builder
	b.Grow(benchSize + 200)
	for i := 0; b.Len() < benchSize; i++ {
		fmt.Fprintf(&b, "2026-12-01T10:%02d:%02d.%03dZ %s ", i/3600%60, i/60%60, i%1000, levels[i%len(levels)])
		for k := 0; k < 4+i%12; k++ {
			b.WriteString(words[(i+k)%len(words)])
			b.WriteByte(' ')
		}
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

func benchFeed(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		term := New(Config{Cols: 80, Rows: 24, Scrollback: 2000})
		term.Write(data)
	}
}

// BenchmarkFeedMixed and BenchmarkFeedLog measure bytes fed per second on
// an 80 × 24 terminal with 2,000 lines of scrollback, the same streams
// scripts/bench-vt.sh feeds to tmux.
func BenchmarkFeedMixed(b *testing.B) { benchFeed(b, mixedStream(b)) }
func BenchmarkFeedLog(b *testing.B)   { benchFeed(b, logStream()) }

// BenchmarkScrollbackLine reports the heap held per scrollback line of
// typical log output (bytes/line), measured on a full 100,000-line
// scrollback of the log stream's lines.
func BenchmarkScrollbackLine(b *testing.B) {
	data := logStream()
	const lines = 100000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		term := New(Config{Cols: 80, Rows: 24, Scrollback: lines})
		for term.ScrollbackLen() < lines {
			term.Write(data[:1<<20])
			data = append(data[1<<20:], data[:1<<20]...)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/lines, "bytes/line")
		runtime.KeepAlive(term)
	}
}

// TestWriteBenchStreams writes the benchmark streams to $VT_BENCH_DIR
// for scripts/bench-vt.sh to feed to tmux; it does nothing otherwise.
func TestWriteBenchStreams(t *testing.T) {
	dir := os.Getenv("VT_BENCH_DIR")
	if dir == "" {
		t.Skip("VT_BENCH_DIR not set: only scripts/bench-vt.sh needs the files")
	}
	for name, data := range map[string][]byte{"mixed.bin": mixedStream(t), "log.bin": logStream()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
