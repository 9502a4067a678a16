// Package transcripttest is what the tests of the transcript's readers
// (export, report, replay) share: Begin writes the head of a transcript
// built record by record (run.started with a fixed config and subject,
// then the seven receipts, in PTY mode's shape or control/v1's), and Load
// reads a fixture.
package transcripttest

import (
	"os"
	"testing"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Begin writes run.started (seed 1, the manual clock, locale C, UTC, a
// cols×rows terminal, a sandbox root, the network denied; a fixed
// subject with our adapter) and the seven receipts: with pty, the
// terminal os by the sandbox's pty (what marks PTY mode) and the others
// delivered by hello config; without, all seven delivered by hello
// config. It fails the test on any refusal.
func Begin(tb testing.TB, w *transcript.Writer, cols, rows int64, pty bool) {
	tb.Helper()
	cfg := config.Config{Seed: "1", Clock: config.Clock{Mode: "manual"}, Locale: "C", Timezone: "UTC",
		Terminal:   config.Terminal{Columns: cols, Rows: rows, Capabilities: []string{}},
		Filesystem: config.Filesystem{Mode: "sandbox", RootID: "r"}, Network: config.Network{Mode: config.NetworkDeny}}
	subj := transcript.Subject{Application: transcript.Application{ID: "a", Version: "1", Build: "b"},
		Fixture: transcript.Selector{ID: "f", Version: "1"}, Adapter: transcript.Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion},
		Normalizer: transcript.Selector{ID: "n", Version: "1"}, StateSchema: transcript.Selector{ID: "s", Version: "1"}}
	if err := w.Start(cfg, subj); err != nil {
		tb.Fatal(err)
	}
	for _, c := range receipts.Constraints() {
		var err error
		if pty && c == receipts.Terminal {
			err = w.Applied(c, receipts.OS, nil, canon.M("x-mechanism", canon.StringValue(receipts.MechanismPTY)))
		} else {
			err = w.Applied(c, receipts.Delivered, &receipts.Delivery{Channel: receipts.HelloConfig})
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// Load reads and parses the transcript at path (a fixture), failing the
// test with the path on any error.
func Load(tb testing.TB, path string) *transcript.Transcript {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := transcript.Parse(data)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return tr
}
