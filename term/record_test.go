package term

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/ptyrecord"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// TestRecordRefusedRecordStillValid: a record the transcript's rules
// refuse (here a diagnostic while no epoch is open) ends the recording
// with run.failed instead of losing it: the committed file is a valid
// transcript that says why.
func TestRecordRefusedRecordStillValid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.jsonl")
	spec := sandbox.Spec{Terminal: &sandbox.TerminalSize{Cols: 20, Rows: 2}, Dir: dir}
	r, err := openRecord(Config{Args: []string{"/bin/cat"}, Transcript: path}, &spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TERMVERIFY_SEED=0", "TZ=UTC0", "TERMVERIFY_FS_ROOT=" + dir} {
		if !strings.Contains(strings.Join(spec.Env, "\n"), want) {
			t.Errorf("the program's environment has no %s: %q", want, spec.Env)
		}
	}
	osTier := receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismMountNS}
	out := receipts.Negotiate(negotiation(r.cfg, dir, osTier, osTier, receipts.Mechanism{Tier: receipts.OS, Word: receipts.MechanismPTY}))
	r.wmu.Lock()
	for _, rc := range out.Receipts {
		r.write(func(w *transcript.Writer) error { return ptyrecord.WriteApplied(w, rc) })
	}
	scr := ptydrive.ScreenOf(vt.New(vt.Config{Cols: 20, Rows: 2}))
	r.write(func(w *transcript.Writer) error { return w.Observe(ptyrecord.Observation(scr, "")) })
	r.write(func(w *transcript.Writer) error { return w.Diagnostic(ptyrecord.IdleOutput()) })
	r.wmu.Unlock()
	if err := r.commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		t.Fatalf("the committed transcript is not valid: %v", err)
	}
	last := tr.Records[len(tr.Records)-1]
	if fl, ok := last.Failure(); !ok || fl.Code != transcript.CodeAdapterRuntimeFailed || !strings.Contains(fl.Message, "refused by the transcript's rules") {
		t.Errorf("last record %s %+v, want run.failed saying the record was refused", last.Kind, fl)
	}
}
