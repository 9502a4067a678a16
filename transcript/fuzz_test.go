package transcript

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/receipts"
)

// FuzzParse: Parse never panics, and what it accepts re-encodes to the
// same bytes (or, for the compat rule, to bytes Parse accepts as well).
// Seeded from the table cases and the upstream corpus.
func FuzzParse(f *testing.F) {
	for _, seed := range parseSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Parse(data)
		if err != nil {
			e, ok := errors.AsType[*Error](err)
			if !ok || e.Rule == RuleInternal {
				t.Fatalf("Parse: %v", err)
			}
			return
		}
		out, err := Encode(tr)
		if err != nil {
			t.Fatalf("Encode of an accepted transcript: %v", err)
		}
		if len(tr.Normalized) == 0 && !bytes.Equal(out, data) {
			t.Fatalf("re-encode differs:\n%q\n%q", data, out)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("re-encoded transcript rejected: %v", err)
		}
	})
}

func corpusDir(tb testing.TB) (string, error) {
	dir := filepath.Join(sharedDir(tb), "conformance", "upstream", "transcript")
	_, err := os.Stat(dir)
	return dir, err
}

// program reads fuzz bytes as writer operations and their arguments.
type program struct{ b []byte }

func (p *program) next() byte {
	if len(p.b) == 0 {
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return c
}

func (p *program) pick(n int) int { return int(p.next()) % n }

func (p *program) str() string {
	words := []string{"", "a", "hello", "\x00", "é", "\x1f\"\\", "\xff", "Control", "c", "Enter", "x-y"}
	return words[p.pick(len(words))]
}

func (p *program) num() int64 {
	nums := []int64{0, 1, -1, 2, 250, 1 << 53, -(1 << 53)}
	return nums[p.pick(len(nums))]
}

// FuzzWriter drives the Writer with random calls. Whatever it accepted
// must parse, and a transcript can always be ended after any refusal.
func FuzzWriter(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 1, 1, 1, 1, 4, 5, 0, 4, 6})
	f.Add([]byte{0, 1, 1, 2, 8})
	f.Add([]byte{0, 1, 0, 1, 0, 1, 2, 1, 2, 1, 2, 1, 1, 4, 0, 5, 5, 4, 3, 3, 4, 1, 7})
	f.Add([]byte{0, 1, 1, 1, 1, 1, 1, 1, 3, 4, 0, 5, 1, 3, 9, 4, 2, 6})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := testConfig(t)
		var out bytes.Buffer
		w := NewWriter(&out, "run-fuzz")
		p := &program{b: data}
		caps := 0
		for steps := 0; len(p.b) > 0 && steps < 200; steps++ {
			before := out.Len()
			var err error
			switch p.pick(10) {
			case 0:
				c := cfg
				if p.pick(4) == 0 {
					c.Locale = p.str()
				}
				err = w.Start(c, testSubject())
			case 1, 2:
				all := receipts.Constraints()
				c := all[min(caps, len(all)-1)]
				if p.pick(8) == 0 {
					c = all[p.pick(len(all))]
				}
				tier := []receipts.Tier{receipts.OS, receipts.Constructive, receipts.Delivered, "bogus"}[p.pick(4)]
				var d *receipts.Delivery
				switch p.pick(4) {
				case 1:
					d = &receipts.Delivery{Channel: receipts.SpawnEnv, Env: map[string]string{"TERMVERIFY_X": "1"}}
					if c == receipts.Filesystem {
						d.Cwd = "/sandbox"
					}
				case 2:
					d = &receipts.Delivery{Channel: receipts.HelloConfig}
				case 3:
					d = &receipts.Delivery{Channel: receipts.SpawnEnv, Env: map[string]string{p.str(): p.str()}, Cwd: p.str()}
				}
				if p.pick(6) == 0 {
					err = w.Unsupported(c, p.str())
				} else {
					err = w.Applied(c, tier, d)
				}
				if err == nil {
					caps++
				}
			case 3:
				var details *canon.Value
				if p.pick(2) == 0 {
					v := canon.ObjectValue(canon.M("n", canon.IntValue(p.num())))
					details = &v
				}
				err = w.Diagnostic(Diagnostic{Code: p.str(), Message: p.str(), Details: details})
			case 4:
				o := Observation{State: canon.StringValue(p.str())}
				if p.pick(3) == 0 {
					o.Events = []Event{{Type: p.str(), Data: canon.NullValue()}}
				}
				if p.pick(3) == 0 {
					focus := p.str()
					o.UI.Regions = []Region{{ID: "main", Role: "main", Bounds: Bounds{0, 0, 80, 24}}}
					o.UI.Focus = &focus
				}
				if p.pick(3) == 0 {
					o.Frame = &Frame{Lines: []string{p.str(), "b"}, Columns: 2, Rows: int64(p.pick(3))}
				}
				switch p.pick(4) {
				case 1:
					o.Process = &Process{}
				case 2:
					o.Process = &Process{Exited: true, Exit: Exit{Kind: ExitCode, Code: p.num()}}
				case 3:
					o.Process = &Process{Exited: true, Exit: Exit{Kind: ExitSignal, Signal: p.str()}}
				}
				err = w.Observe(o)
			case 5:
				ins := []input.Input{
					input.Text{Text: p.str()},
					input.Key{Keys: []string{p.str(), p.str()}[:1+p.pick(2)]},
					input.Resize{Columns: p.num(), Rows: 24},
					input.Mouse{Action: []string{"press", "release", "move", "scroll", "drag"}[p.pick(5)], Column: p.num(), Row: 1, Button: []string{"", "left"}[p.pick(2)], Delta: p.num()},
					input.ClipboardSet{Text: p.str()},
					input.ClockAdvanced{DeltaMS: p.num()},
					input.Stop{},
				}
				err = w.Input(ins[p.pick(len(ins))])
			case 6:
				err = w.Finish(Exit{Kind: ExitCode, Code: p.num()})
			case 7:
				err = w.Fail(Failure{Code: p.str(), Message: p.str()})
			case 8:
				err = w.EndUnsupported(p.str(), p.str())
			case 9:
				// Budget refusals: too many values, or a too-long line.
				if p.pick(2) == 0 {
					d := zeros(canon.MaxItems + 1)
					err = w.Diagnostic(Diagnostic{Code: "c", Message: "m", Details: &d})
				} else {
					err = w.Diagnostic(Diagnostic{Code: "c", Message: strings.Repeat("\x01", 700_000)})
				}
			}
			if err != nil && out.Len() != before {
				t.Fatalf("a refused call wrote %d bytes: %v", out.Len()-before, err)
			}
			if err == nil && out.Len() == before {
				t.Fatal("an accepted call wrote nothing")
			}
			if err != nil {
				if _, ok := errors.AsType[*Error](err); !ok && !errors.Is(err, ErrBudget) {
					t.Fatalf("refusal of unexpected type %T: %v", err, err)
				}
			}
		}
		// End the transcript if the program did not: always possible.
		if out.Len() > 0 && !w.Ended() {
			var err error
			if w.v.pending != "" {
				err = w.EndUnsupported(receipts.CodeUnsupported, "ended by the fuzzer")
			} else {
				err = w.FailBudget(&BudgetError{Limit: LimitRecords})
			}
			if err != nil {
				t.Fatalf("cannot end the transcript: %v", err)
			}
		}
		cerr := w.Close()
		if out.Len() == 0 {
			if !errors.Is(cerr, ErrNoTerminal) {
				t.Fatalf("Close without records: %v", cerr)
			}
			return
		}
		if cerr != nil {
			t.Fatalf("Close: %v", cerr)
		}
		if _, err := Parse(out.Bytes()); err != nil {
			t.Fatalf("writer output rejected: %v\n%s", err, out.Bytes())
		}
	})
}
