package transcript

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/termverify/termverify-sandbox/config"
	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

var update = flag.Bool("update", false, "rewrite examples/transcripts/*.jsonl from the Writer")

// exampleRequest is the request the bundled examples record.
func exampleRequest(timezone string) (config.Config, Subject) {
	return config.Config{
			Seed:       "20260718",
			Clock:      config.Clock{Mode: "manual", InitialMS: 1000},
			Locale:     "en-US",
			Timezone:   timezone,
			Terminal:   config.Terminal{Columns: 80, Rows: 24, Capabilities: []string{}},
			Filesystem: config.Filesystem{Mode: "sandbox", RootID: "example-root"},
			Network:    config.Network{Mode: config.NetworkAllowList, Allowed: []config.HostPort{{Host: "example.org", Port: 443}}},
		}, Subject{
			Application: Application{ID: "counter", Version: "1.0.0", Build: "b1"},
			Fixture:     Selector{ID: "counter-basic", Version: "1"},
			Adapter:     Selector{ID: receipts.AdapterID, Version: receipts.AdapterVersion},
			Normalizer:  Selector{ID: "identity", Version: "1"},
			StateSchema: Selector{ID: "counter-state", Version: "1"},
			Platform:    &Platform{OS: "linux", Architecture: "amd64"},
		}
}

// negotiate writes the receipts a sandboxed run records (PRODUCT.md §3):
// spawn-env for seed, clock, locale and timezone, hello-config for the
// terminal, os for filesystem and network. It stops with an unsupported
// result at a timezone other than UTC.
func negotiate(t *testing.T, w *Writer, cfg config.Config) bool {
	t.Helper()
	env := map[receipts.Constraint]map[string]string{
		receipts.Seed:     {"TERMVERIFY_SEED": cfg.Seed},
		receipts.Clock:    {"TERMVERIFY_CLOCK_INITIAL_MS": "1000"},
		receipts.Locale:   {"TERMVERIFY_LOCALE": cfg.Locale},
		receipts.Timezone: {"TERMVERIFY_TIMEZONE": "UTC", "TZ": "UTC0"},
	}
	for _, c := range receipts.Constraints() {
		var err error
		switch {
		case c == receipts.Timezone && cfg.Timezone != "UTC":
			must(t, w.Unsupported(c, "only UTC can be applied; "+cfg.Timezone+" needs zone data v1 never consults"))
			return false
		case env[c] != nil:
			err = w.Applied(c, receipts.Delivered, &receipts.Delivery{Channel: receipts.SpawnEnv, Env: env[c]})
		case c == receipts.Terminal:
			err = w.Applied(c, receipts.Delivered, &receipts.Delivery{Channel: receipts.HelloConfig})
		default:
			err = w.Applied(c, receipts.OS, nil)
		}
		must(t, err)
	}
	return true
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func counterView(n int, mode string) Observation {
	focus := "counter"
	line := "count: " + string(rune('0'+n))
	lines := make([]string, 24)
	lines[0] = line
	return Observation{
		State:  canon.ObjectValue(canon.M("count", canon.IntValue(int64(n)))),
		Events: []Event{{Type: "terminal.output", Data: canon.ObjectValue(canon.M("chunk", canon.StringValue("\x1b[H\x1b[2J"+line+"\r\n")))}},
		UI: UI{
			Regions: []Region{{ID: "counter", Role: "main", Bounds: Bounds{Column: 0, Row: 0, Columns: 80, Rows: 24}}},
			Focus:   &focus,
			Cursor:  Cursor{Column: int64(len(line)), Row: 0, Visible: true},
			Mode:    &mode,
		},
		Frame: &Frame{Lines: lines, Columns: 80, Rows: 24},
	}
}

// examples builds the bundled example transcripts with the Writer.
func examples(t *testing.T) map[string][]byte {
	out := map[string][]byte{}

	var fin bytes.Buffer
	cfg, subj := exampleRequest("UTC")
	w := NewWriter(&fin, "example-finished")
	must(t, w.Start(cfg, subj))
	negotiate(t, w, cfg)
	must(t, w.Observe(counterView(0, "normal")))
	must(t, w.Input(input.Text{Text: "+"}))
	must(t, w.Observe(counterView(1, "normal")))
	must(t, w.Input(input.Key{Keys: []string{"Control", "a"}}))
	must(t, w.Diagnostic(Diagnostic{Code: "key-ignored", Message: "no binding for Control+a"}))
	must(t, w.Observe(counterView(1, "normal")))
	must(t, w.Input(input.ClockAdvanced{DeltaMS: 250}))
	must(t, w.Observe(counterView(1, "normal")))
	must(t, w.Input(input.Stop{}))
	exit := Exit{Kind: ExitCode, Code: 0}
	// The supervisor's synthesized exit observation (ADAPTER-RULES.md).
	must(t, w.Observe(Observation{Process: &Process{Exited: true, Exit: exit}}))
	must(t, w.Finish(exit))
	must(t, w.Close())
	out["finished.jsonl"] = fin.Bytes()

	var failed bytes.Buffer
	w = NewWriter(&failed, "example-failed")
	must(t, w.Start(cfg, subj))
	negotiate(t, w, cfg)
	must(t, w.Observe(counterView(0, "normal")))
	must(t, w.Input(input.Text{Text: "+"}))
	details := canon.ObjectValue(
		canon.M("failure", canon.StringValue("epoch-timeout")),
		canon.M("during", canon.StringValue("read")),
		canon.M("deadline_ms", canon.IntValue(5000)),
		canon.M("phase", canon.StringValue("epoch")),
	)
	must(t, w.Fail(Failure{Code: CodeAdapterRuntimeFailed, Message: "the epoch deadline expired before the closing observation", Details: &details}))
	must(t, w.Close())
	out["failed.jsonl"] = failed.Bytes()

	var uns bytes.Buffer
	cfg, subj = exampleRequest("Europe/Berlin")
	w = NewWriter(&uns, "example-unsupported")
	must(t, w.Start(cfg, subj))
	negotiate(t, w, cfg)
	must(t, w.EndUnsupported(receipts.CodeUnsupported, "timezone Europe/Berlin cannot be applied in v1"))
	must(t, w.Close())
	out["unsupported.jsonl"] = uns.Bytes()
	return out
}

// TestExamples keeps examples/transcripts/*.jsonl identical to what the
// Writer produces (go test ./transcript -update rewrites them) and valid.
func TestExamples(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "examples", "transcripts")
	for name, want := range examples(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(want); err != nil {
				t.Fatalf("example rejected: %v", err)
			}
			path := filepath.Join(dir, name)
			if *update {
				must(t, os.MkdirAll(dir, 0o755))
				must(t, os.WriteFile(path, want, 0o644))
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./transcript -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the Writer's output (run go test ./transcript -update)", path)
			}
		})
	}
}
