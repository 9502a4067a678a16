package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// TestKeyRegistry cross-checks the chord rules against upstream's
// enumeration (key-encoding-v1.tsv: every valid chord, 1,382 rows).
func TestKeyRegistry(t *testing.T) {
	if n := len(RegistryKeys()); n != 99 {
		t.Fatalf("registry has %d keys, want 99", n)
	}
	valid := countValidChords()
	if valid != 1382 {
		t.Errorf("%d valid chords, want 1382", valid)
	}
	tsv := readTSV(t)
	if tsv == nil {
		return
	}
	for _, keys := range tsv {
		if !ValidChord(keys) {
			t.Errorf("upstream chord %q rejected", keys)
		}
	}
	if len(tsv) != valid {
		t.Errorf("upstream enumerates %d chords, we admit %d", len(tsv), valid)
	}
}

// countValidChords enumerates every modifier subset in order with every
// registry key as base.
func countValidChords() int {
	n := 0
	for mask := 0; mask < 16; mask++ {
		var mods []string
		for i, m := range keyModifiers {
			if mask&(1<<i) != 0 {
				mods = append(mods, m)
			}
		}
		for _, base := range RegistryKeys() {
			if ValidChord(append(append([]string(nil), mods...), base)) {
				n++
			}
		}
	}
	return n
}

// readTSV returns the keys column of upstream's key-encoding-v1.tsv, or
// nil (with a skip note) when the reference directory is absent.
func readTSV(t *testing.T) [][]string {
	t.Helper()
	path := filepath.Join(sharedtest.Dir(t), "reference", "termverify-upstream", "registries", "key-encoding-v1.tsv")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Logf("skipping the upstream cross-check: %v", err)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if i == 0 {
			continue // header
		}
		cols := bytes.Split(line, []byte("\t"))
		var keys []string
		if err := json.Unmarshal(cols[1], &keys); err != nil {
			t.Fatalf("tsv line %d: %v", i+1, err)
		}
		out = append(out, keys)
	}
	return out
}
