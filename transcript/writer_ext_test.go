package transcript

import (
	"bytes"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// TestWriterExtensions checks that x- members reach the record and still
// parse, and that any other extra member is refused before anything is written.
func TestWriterExtensions(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, "run-ext")
	if err := w.Start(testConfig(t), testSubject()); err != nil {
		t.Fatal(err)
	}
	if err := w.Applied(receipts.Seed, receipts.Delivered, &receipts.Delivery{Channel: receipts.SpawnEnv,
		Env: map[string]string{"TERMVERIFY_SEED": testConfig(t).Seed}}, canon.M("mechanism", canon.StringValue("x"))); err == nil {
		t.Fatal("Applied accepted a non-x- extension member")
	}
	if w.Records() != 1 {
		t.Fatalf("a refused Applied wrote a record: %d records", w.Records())
	}
	if err := w.Fail(Failure{Code: "adapter-start-failed", Message: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(buf.Bytes()); err != nil {
		t.Fatalf("Parse: %v", err)
	}
}

// TestWriterMechanismReceipts writes the seven receipts a sandboxed run
// negotiates, os ones carrying x-mechanism, and a finished run carrying an
// x- member, and checks the transcript parses and keeps them.
func TestWriterMechanismReceipts(t *testing.T) {
	cfg := testConfig(t)
	out := receipts.Negotiate(receipts.Request{
		Seed: cfg.Seed, ClockInitialMS: cfg.Clock.InitialMS, Locale: cfg.Locale, Timezone: "UTC",
		RootID: cfg.Filesystem.RootID, RootMapped: true, NetworkMode: cfg.Network.Mode,
		Isolation:  receipts.IsolationAuto,
		Filesystem: receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismMountNS},
		Network:    receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismNetNS},
	})
	if out.Refusal != nil {
		t.Skipf("test config is not negotiable here: %+v", out.Refusal)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, "run-ext")
	if err := w.Start(cfg, testSubject()); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Receipts {
		var ext []canon.Member
		if r.Mechanism != "" {
			ext = append(ext, canon.M("x-mechanism", canon.StringValue(r.Mechanism)))
		}
		if err := w.Applied(r.Constraint, r.Tier, r.Delivery, ext...); err != nil {
			t.Fatalf("Applied %s: %v", r.Constraint, err)
		}
	}
	if err := w.Finish(Exit{Kind: "code", Code: 0}, canon.M("x-claimed-exit", canon.IntValue(7))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	fs := tr.Records[6].Payload()
	if m, ok := fs.Get("x-mechanism"); !ok || m.Str != receipts.MechanismMountNS {
		t.Fatalf("filesystem receipt lost x-mechanism: %+v", fs)
	}
	if got := tr.Receipts(); got[5].Mechanism != receipts.MechanismMountNS || got[5].Constraint != receipts.Filesystem {
		t.Fatalf("Receipts()[5] = %+v, want filesystem via %s", got[5], receipts.MechanismMountNS)
	}
}
