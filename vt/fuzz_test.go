package vt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzFeed feeds arbitrary bytes, cut into arbitrary Writes, with a resize
// in the middle: the terminal must never panic, must keep a screen of
// exactly rows × cols with whole wide characters, and must stay inside its
// memory bounds. Seeded from every table case and recorded stream.
func FuzzFeed(f *testing.F) {
	for _, tc := range allScreenCases() {
		f.Add([]byte(tc.in+tc.after), uint16(len(tc.in)), uint8(tc.resize[0]), uint8(tc.resize[1]))
	}
	for _, sc := range streamCases {
		b, err := os.ReadFile(filepath.Join("testdata", sc.name+".bin"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(len(b)/2), uint8(40), uint8(10))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, cols, rows uint8) {
		term := New(Config{Cols: 20, Rows: 6, Scrollback: 50})
		c := min(int(cut), len(data))
		term.Write(data[:c])
		checkInvariants(t, term)
		if cols != 0 || rows != 0 {
			term.Resize(int(cols)%100, int(rows)%40)
			checkInvariants(t, term)
		}
		// The rest in small pieces whose sizes come from the data.
		rest := data[c:]
		for len(rest) > 0 {
			n := 1
			if len(rest) >= 2 {
				n = 1 + int(binary.LittleEndian.Uint16(rest))%64
			}
			n = min(n, len(rest))
			term.Write(rest[:n])
			rest = rest[n:]
		}
		checkInvariants(t, term)
		checkBounds(t, term)
		_ = term.ANSI()
		_ = term.ScrollbackANSI()
	})
}

// checkBounds fails when any of the terminal's buffers is past its bound.
func checkBounds(t *testing.T, term *Terminal) {
	t.Helper()
	if term.ScrollbackLen() > term.ScrollbackCap() || len(term.sb.ring) > term.sb.limit {
		t.Fatalf("scrollback %d lines (ring %d), cap %d", term.ScrollbackLen(), len(term.sb.ring), term.ScrollbackCap())
	}
	if len(term.replies) > maxReplies || len(term.osc) > maxString || len(term.title) > maxTitle ||
		len(term.titleStack) > maxTitleStack {
		t.Fatalf("buffer past its bound: replies %d, osc %d, title %d, stack %d",
			len(term.replies), len(term.osc), len(term.title), len(term.titleStack))
	}
	for _, s := range []*screen{term.main, term.alt} {
		if s == nil {
			continue
		}
		for i := range s.lines {
			if len(s.lines[i].clusters) > len(s.lines[i].cells)+8 {
				t.Fatalf("line %d holds %d clusters for %d cells", i, len(s.lines[i].clusters), len(s.lines[i].cells))
			}
		}
	}
}
