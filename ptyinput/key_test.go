package ptyinput_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

// canonicalSHA256 is the digest upstream binds for the canonical text of
// termverify.key-encoding/v1 (PROVENANCE.md).
const canonicalSHA256 = "72a17da549238053c88a925cf6bf2bbe93ed2b8564c7a09188075987fcdcda95"

var modifiers = []string{"Control", "Alt", "Shift", "Meta"}

// allChords enumerates the termverify.key/v1 chords in the table's order:
// each registry base, then each modifier subset counted with Control as
// the lowest bit; input.ValidChord decides which exist.
func allChords() [][]string {
	var out [][]string
	for _, base := range input.RegistryKeys()[len(modifiers):] {
		for mask := range 16 {
			var c []string
			for i, m := range modifiers {
				if mask&(1<<i) != 0 {
					c = append(c, m)
				}
			}
			c = append(c, base)
			if input.ValidChord(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

func hexBytes(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = hex.EncodeToString([]byte{c})
	}
	return strings.Join(parts, " ")
}

// TestKeyEncodingTable checks every row of upstream's table with the zero
// Modes, byte for byte.
func TestKeyEncodingTable(t *testing.T) {
	rows := loadTable(t)
	if len(rows) != 1382 {
		t.Fatalf("table has %d rows, want 1382", len(rows))
	}
	var encodable, unencodable int
	for _, r := range rows {
		if got := strings.Join(r.keys, "+"); got != r.chord {
			t.Errorf("row %s: keys join to %s", r.chord, got)
		}
		if !input.ValidChord(r.keys) {
			t.Errorf("row %s: input.ValidChord rejects the chord", r.chord)
		}
		got, err := ptyinput.EncodeKey(r.keys, ptyinput.Modes{})
		switch {
		case r.unencodable:
			unencodable++
			if !errors.Is(err, ptyinput.ErrUnencodable) || got != nil {
				t.Errorf("%s: got %q, %v; want ErrUnencodable", r.chord, got, err)
			}
		case err != nil:
			t.Errorf("%s: %v; want % x", r.chord, err, r.bytes)
		case !bytes.Equal(got, r.bytes):
			t.Errorf("%s: got % x, want % x", r.chord, got, r.bytes)
		default:
			encodable++
		}
	}
	t.Logf("%d rows: %d encodable and %d unencodable match", len(rows), encodable, unencodable)
}

// TestKeyEncodingCanonical rebuilds the canonical text from the chord
// enumeration and the encoder alone, and checks it against upstream's file
// and the digest upstream binds.
func TestKeyEncodingCanonical(t *testing.T) {
	var b strings.Builder
	for _, c := range allChords() {
		enc, err := ptyinput.EncodeKey(c, ptyinput.Modes{})
		v := hexBytes(enc)
		if errors.Is(err, ptyinput.ErrUnencodable) {
			v = "unencodable"
		} else if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		fmt.Fprintf(&b, "%s => %s\n", strings.Join(c, "+"), v)
	}
	sum := sha256.Sum256([]byte(b.String()))
	if got := hex.EncodeToString(sum[:]); got != canonicalSHA256 {
		t.Errorf("canonical text SHA-256 %s, want %s", got, canonicalSHA256)
	}
	want, err := os.ReadFile(registryPath(t, "key-encoding-v1.canonical.txt"))
	if err != nil {
		t.Fatalf("upstream canonical text: %v", err)
	}
	if b.String() != string(want) {
		t.Errorf("canonical text differs from upstream's file")
	}
	prov, err := os.ReadFile(registryPath(t, "../PROVENANCE.md"))
	if err != nil {
		t.Fatalf("provenance: %v", err)
	}
	if !strings.Contains(string(prov), canonicalSHA256) {
		t.Errorf("PROVENANCE.md does not name %s", canonicalSHA256)
	}
}

// TestChordSetAgreesWithTranscript: the chords EncodeKey accepts are
// exactly the ones input.ValidChord accepts, and the table lists exactly those.
func TestChordSetAgreesWithTranscript(t *testing.T) {
	var tableChords []string
	for _, r := range loadTable(t) {
		tableChords = append(tableChords, r.chord)
	}
	var enumerated []string
	for _, c := range allChords() {
		enumerated = append(enumerated, strings.Join(c, "+"))
	}
	if !slices.Equal(tableChords, enumerated) {
		t.Errorf("table chords (%d) differ from the registry's valid chords (%d) in set or order",
			len(tableChords), len(enumerated))
	}

	// Near misses: every base (and some non-bases) after every sequence of
	// up to two modifiers, in any order and with repeats.
	bases := append(input.RegistryKeys(), "", "A", "enter", "F13", "F0", "Ctrl", "ab", "é", " ", "\t")
	seqs := [][]string{{}}
	for _, a := range modifiers {
		seqs = append(seqs, []string{a})
		for _, b := range modifiers {
			seqs = append(seqs, []string{a, b})
		}
	}
	checked := 0
	for _, base := range bases {
		for _, s := range seqs {
			c := append(slices.Clone(s), base)
			got, err := ptyinput.EncodeKey(c, ptyinput.Modes{})
			valid := input.ValidChord(c)
			if errors.Is(err, ptyinput.ErrInvalidChord) == valid {
				t.Errorf("%q: ValidChord %v, EncodeKey %v", c, valid, err)
			}
			if err != nil && got != nil {
				t.Errorf("%q: bytes %q with error", c, got)
			}
			checked++
		}
	}
	for _, c := range [][]string{nil, {}, {"Control"}, {"Control", "Alt"}, {"Meta", "Control", "a"}} {
		if _, err := ptyinput.EncodeKey(c, ptyinput.Modes{}); !errors.Is(err, ptyinput.ErrInvalidChord) {
			t.Errorf("%q: %v, want ErrInvalidChord", c, err)
		}
	}
	t.Logf("%d near-miss chords agree with input.ValidChord", checked)
}

// TestAppCursor: DECCKM turns exactly the six unmodified cursor, Home and
// End rows into SS3; every other row is unchanged.
func TestAppCursor(t *testing.T) {
	ss3 := map[string]string{
		"ArrowUp": "\x1bOA", "ArrowDown": "\x1bOB", "ArrowRight": "\x1bOC",
		"ArrowLeft": "\x1bOD", "Home": "\x1bOH", "End": "\x1bOF",
	}
	changed := 0
	for _, r := range loadTable(t) {
		want := r.bytes
		if s, ok := ss3[r.chord]; ok {
			want = []byte(s)
			changed++
		}
		got, err := ptyinput.EncodeKey(r.keys, ptyinput.Modes{AppCursor: true})
		if r.unencodable {
			if !errors.Is(err, ptyinput.ErrUnencodable) {
				t.Errorf("%s: %v, want ErrUnencodable", r.chord, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: got %q, %v; want %q", r.chord, got, err, want)
		}
	}
	if changed != len(ss3) {
		t.Errorf("%d rows changed, want %d", changed, len(ss3))
	}
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"ArrowUp"}, "\x1bOA"},
		{[]string{"Shift", "ArrowUp"}, "\x1b[1;2A"},
		{[]string{"Control", "End"}, "\x1b[1;5F"},
		{[]string{"F1"}, "\x1bOP"},
		{[]string{"PageUp"}, "\x1b[5~"},
	} {
		got, err := ptyinput.EncodeKey(tc.keys, ptyinput.Modes{AppCursor: true})
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.keys, got, err, tc.want)
		}
	}
}

// TestOtherModesChangeNoKey: AppKeypad (the registry has no keypad key)
// and every non-key mode leave all 1,382 encodings as they are.
func TestOtherModesChangeNoKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    ptyinput.Modes
	}{
		{"AppKeypad", ptyinput.Modes{AppKeypad: true}},
		{"all but AppCursor", ptyinput.Modes{
			AppKeypad: true, BracketedPaste: true, FocusEvents: true,
			Mouse: ptyinput.MouseAny, MouseEncoding: ptyinput.MouseEncodingSGR,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range loadTable(t) {
				got, err := ptyinput.EncodeKey(r.keys, tc.m)
				if r.unencodable != errors.Is(err, ptyinput.ErrUnencodable) || !bytes.Equal(got, r.bytes) {
					t.Errorf("%s: got %q, %v", r.chord, got, err)
				}
			}
		})
	}
}

func TestEncodeKeyErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
		want error
	}{
		{"unencodable Control+Enter", []string{"Control", "Enter"}, ptyinput.ErrUnencodable},
		{"unencodable Shift on a letter", []string{"Control", "Shift", "a"}, ptyinput.ErrUnencodable},
		{"unencodable Control+digit", []string{"Control", "1"}, ptyinput.ErrUnencodable},
		{"unencodable Control+Space", []string{"Control", "Space"}, ptyinput.ErrUnencodable},
		{"unencodable Meta on punctuation", []string{"Meta", "/"}, ptyinput.ErrUnencodable},
		{"invalid bare letter", []string{"a"}, ptyinput.ErrInvalidChord},
		{"invalid Shift alone on a letter", []string{"Shift", "a"}, ptyinput.ErrInvalidChord},
		{"invalid modifier order", []string{"Alt", "Control", "Delete"}, ptyinput.ErrInvalidChord},
		{"invalid alias", []string{"Ctrl", "c"}, ptyinput.ErrInvalidChord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ptyinput.EncodeKey(tc.keys, ptyinput.Modes{})
			if !errors.Is(err, tc.want) || got != nil {
				t.Errorf("got %q, %v; want %v", got, err, tc.want)
			}
		})
	}
}
