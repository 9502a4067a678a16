package ptyinput_test

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// sharedDir is ../shared beside the repository root (internal/sharedtest).
func sharedDir(t testing.TB) string { return sharedtest.Dir(t) }

func registryPath(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(sharedDir(t), "reference", "termverify-upstream", "registries", name)
}

// tableRow is one row of upstream's key-encoding-v1.tsv.
type tableRow struct {
	chord       string   // "Control+Alt+a"
	keys        []string // ["Control","Alt","a"]
	bytes       []byte   // nil when unencodable
	unencodable bool
}

// loadTable reads key-encoding-v1.tsv. A missing file fails the test: the
// reference data ships with the repository's CI checkout.
func loadTable(t testing.TB) []tableRow {
	t.Helper()
	f, err := os.Open(registryPath(t, "key-encoding-v1.tsv"))
	if err != nil {
		t.Fatalf("upstream key-encoding table: %v", err)
	}
	defer f.Close()
	var rows []tableRow
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 {
			if sc.Text() != "chord\tkeys_json\tbytes_hex" {
				t.Fatalf("tsv header %q", sc.Text())
			}
			continue
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 3 {
			t.Fatalf("tsv line %d: %d columns", line, len(cols))
		}
		r := tableRow{chord: cols[0]}
		if err := json.Unmarshal([]byte(cols[1]), &r.keys); err != nil {
			t.Fatalf("tsv line %d: keys: %v", line, err)
		}
		if cols[2] == "unencodable" {
			r.unencodable = true
		} else if r.bytes, err = hex.DecodeString(strings.ReplaceAll(cols[2], " ", "")); err != nil {
			t.Fatalf("tsv line %d: bytes: %v", line, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}
