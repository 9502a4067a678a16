package conformance

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// own is a case written here (gen_cases_test.go): its bytes and, where
// known, upstream's verdict and why ours differs.
type own struct {
	id, format string
	data       []byte
	gz         bool   // store compressed (large limit cases)
	upstream   string // "valid", "invalid", "crash", or "" when unknown
	difference string // why ours differs, with the doc
	note       string
}

// generate rewrites the codec and daemon families of the corpus, the
// manifest (scenarios included, from scenarios()) and the golden summary
// of the codec and daemon families, keeping the adapter and PTY
// families' counts from the summary in place (the CLI's test with
// -update rewrites those). Goldens are our codecs' verdicts: review the
// diff.
func generate(t *testing.T) {
	dir := corpusDir(t)
	for _, sub := range []string{"codec", "daemon"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	var cases []Case
	cases = append(cases, harvest(t, dir)...)
	for _, o := range ownCases(t) {
		cases = append(cases, writeOwn(t, dir, o))
	}
	cases = append(cases, scenarios(t, dir)...)
	cases = append(cases, sessionCases(t, dir)...)
	writeManifest(t, dir, cases)
	c := loadCorpus(t)
	s, err := Run(context.Background(), c, Options{Validator: Ours{}, Families: codecFamilies})
	if err != nil {
		t.Fatal(err)
	}
	if prev, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		if old, err := DecodeSummary(prev); err == nil {
			for _, f := range []string{FamilyAdapter, FamilyPTY, FamilySession} {
				if fc, ok := old.Families[f]; ok {
					s.Families[f] = fc
					s.Total += fc.Total
					s.Passed += fc.Passed
					s.Failed += fc.Failed
				}
			}
			for _, f := range old.Failures {
				if fam, _, _ := strings.Cut(f.ID, "/"); fam == FamilyAdapter || fam == FamilyPTY || fam == FamilySession {
					s.Failures = append(s.Failures, f)
				}
			}
		}
	}
	writeFile(t, filepath.Join(dir, "summary.json"), s.Encode())
}

// harvest copies from upstream's labelled corpus, for each rule id our
// codec reports on it, the first case rejected for that rule, and the
// first few accepted cases, with upstream's verdict beside ours.
func harvest(t *testing.T, dir string) []Case {
	up := filepath.Join(sharedtest.Dir(t), "conformance", "upstream")
	if _, err := os.Stat(up); err != nil {
		t.Fatalf("regenerating needs upstream's corpus at %s: %v", up, err)
	}
	dst := filepath.Join(dir, "codec", "upstream")
	for _, f := range []string{"LICENSE", "NOTICE"} {
		data, err := os.ReadFile(filepath.Join(up, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, f), data)
	}
	writeFile(t, filepath.Join(dst, "PROVENANCE.md"), []byte(provenance))
	var out []Case
	for _, format := range []string{FormatControl, FormatTranscript} {
		type entry struct {
			SHA256, Verdict, B64, File string
		}
		f, err := os.Open(filepath.Join(up, format, "manifest.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var entries []entry
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var e entry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		f.Close()
		seen := map[string]bool{}
		accepts := 0
		for _, e := range entries {
			var data []byte
			name := e.File
			if format == FormatControl {
				if data, err = base64.StdEncoding.DecodeString(e.B64); err != nil {
					t.Fatal(err)
				}
				name = e.SHA256[:16] + ".jsonl"
			} else if data, err = os.ReadFile(filepath.Join(up, format, e.File)); err != nil {
				t.Fatal(err)
			}
			v, err := Ours{}.Validate(context.Background(), format, data, "")
			if err != nil {
				t.Fatal(err)
			}
			key := v.Rule
			if v.Valid {
				if accepts >= 3 {
					continue
				}
				accepts++
				key = "valid" + name
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			verdict := map[string]string{"accept": Valid, "reject": Invalid}[e.Verdict]
			file := filepath.Join("codec", "upstream", format, name)
			writeFile(t, filepath.Join(dir, file), data)
			out = append(out, Case{
				ID: "codec/upstream-" + format + "/" + strings.TrimSuffix(name, ".jsonl"), Family: FamilyCodec,
				Format: format, File: file, Upstream: &Upstream{Verdict: verdict},
			})
		}
	}
	return out
}

const provenance = `# Cases copied from upstream termverify's labelled corpus

- Source: ../shared/conformance/upstream (its PROVENANCE.md): the public
  repository hoelzl/termverify, Apache-2.0 (LICENSE and NOTICE beside this
  file), commit e58ef2cf07e933413eb7b0f442d070b712bf5895.
- Which: for each rule id our codec reports on that corpus, the first
  case it rejects for that rule, and the first three cases it accepts,
  of the control and transcript manifests. The bytes are unchanged;
  control/ files are named by the first 16 hex digits of their SHA-256,
  transcript/ files keep upstream's names.
- The manifest records upstream's verdict beside ours for each
  (` + "`upstream.verdict`" + `). Regenerated by ` + "`make conformance-golden`" + `.
`

// writeOwn stores an own case and returns its manifest entry.
func writeOwn(t *testing.T, dir string, o own) Case {
	family := FamilyCodec
	if o.format == FormatDaemon {
		family = FamilyDaemon
	}
	rel := strings.TrimPrefix(o.id, family+"/")
	file := filepath.Join(family, rel+".jsonl")
	data := o.data
	if o.gz {
		file += ".gz"
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(data)
		zw.Close()
		data = buf.Bytes()
	}
	writeFile(t, filepath.Join(dir, file), data)
	c := Case{ID: o.id, Family: family, Format: o.format, File: file, Difference: o.difference, Note: o.note}
	if o.upstream != "" {
		c.Upstream = &Upstream{Verdict: o.upstream}
	}
	return c
}

// writeManifest fills in each codec and daemon case's golden verdict from
// our codecs and writes the manifest, one case per line.
func writeManifest(t *testing.T, dir string, cases []Case) {
	c := &Corpus{Dir: dir}
	ids := map[string]bool{}
	for i := range cases {
		cs := &cases[i]
		if ids[cs.ID] {
			t.Fatalf("case id %s twice", cs.ID)
		}
		ids[cs.ID] = true
		if cs.Family != FamilyCodec && cs.Family != FamilyDaemon {
			continue
		}
		data, err := c.ReadCase(*cs)
		if err != nil {
			t.Fatal(err)
		}
		v, err := Ours{}.Validate(context.Background(), cs.Format, data, "")
		if err != nil {
			t.Fatalf("%s: %v", cs.ID, err)
		}
		cs.Expect = Expect{Verdict: Invalid, Rule: v.Rule, Line: v.Line, Kind: v.Kind, Reply: v.Reply}
		if v.Valid {
			cs.Expect.Verdict = Valid
		}
	}
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].ID < cases[j].ID })
	var b bytes.Buffer
	b.WriteString("{\"fixtureVersion\":1,\"cases\":[\n")
	for i, cs := range cases {
		line, err := json.Marshal(cs)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		if i < len(cases)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	writeFile(t, filepath.Join(dir, ManifestName), b.Bytes())
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
