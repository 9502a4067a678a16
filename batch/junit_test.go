package batch

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// xsdElement is one element the schema declares: its attributes (name →
// type, required) and the children it may have.
type xsdElement struct {
	attrs    map[string]xsdAttr
	children map[string]bool
	text     bool // simple content: character data allowed
}

type xsdAttr struct {
	typ      string
	required bool
}

// readXSD reads testdata/junit/junit.xsd as its comment lays it out: each
// element declared at the top level by name, its children by ref, its
// attributes inside it. Go has no XSD validator; this reads the part of
// XSD our schema uses, and refuses anything else it finds.
func readXSD(t *testing.T) map[string]*xsdElement {
	t.Helper()
	f, err := os.Open("../testdata/junit/junit.xsd")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const xs = "http://www.w3.org/2001/XMLSchema"
	elems := map[string]*xsdElement{}
	var cur *xsdElement
	depth := 0
	dec := xml.NewDecoder(f)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("junit.xsd: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			if tok.Name.Space != xs {
				t.Fatalf("junit.xsd: element %v outside the XSD namespace", tok.Name)
			}
			a := attrMap(tok.Attr)
			switch tok.Name.Local {
			case "element":
				if depth == 2 {
					cur = &xsdElement{attrs: map[string]xsdAttr{}, children: map[string]bool{}}
					elems[a["name"]] = cur
					if a["type"] == "xs:string" {
						cur.text = true
					}
				} else if cur != nil && a["ref"] != "" {
					cur.children[a["ref"]] = true
				} else {
					t.Fatalf("junit.xsd: nested element %v: declare it at the top level and use ref", a)
				}
			case "attribute":
				cur.attrs[a["name"]] = xsdAttr{typ: a["type"], required: a["use"] == "required"}
			case "extension":
				if a["base"] != "xs:string" {
					t.Fatalf("junit.xsd: extension of %s", a["base"])
				}
				cur.text = true
			case "schema", "complexType", "sequence", "choice", "simpleContent":
			default:
				t.Fatalf("junit.xsd: xs:%s is more XSD than this check reads", tok.Name.Local)
			}
		case xml.EndElement:
			depth--
			if depth == 1 {
				cur = nil
			}
		}
	}
	if len(elems) == 0 || elems["testsuites"] == nil {
		t.Fatal("junit.xsd: no testsuites element")
	}
	return elems
}

func attrMap(attrs []xml.Attr) map[string]string {
	m := map[string]string{}
	for _, a := range attrs {
		m[a.Name.Local] = a.Value
	}
	return m
}

var (
	decimalRE  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	dateTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$`)
)

// checkAgainstXSD checks the report structurally: the root is testsuites;
// every element is declared and allowed where it is; every attribute is
// declared, of its type, and every required one present; character data
// only where the schema allows it; and the document is well-formed XML
// 1.0 (encoding/xml refuses the characters XML 1.0 forbids).
func checkAgainstXSD(t reporter, schema map[string]*xsdElement, doc []byte) {
	t.Helper()
	if !utf8.Valid(doc) {
		t.Fatalf("report: not UTF-8")
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report: not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			name := tok.Name.Local
			el := schema[name]
			switch {
			case el == nil:
				t.Errorf("report: element %s is not in the schema", name)
				stack = append(stack, name)
				continue
			case len(stack) == 0 && name != "testsuites":
				t.Errorf("report: root %s, want testsuites", name)
			case len(stack) > 0 && !schema[stack[len(stack)-1]].children[name]:
				t.Errorf("report: %s inside %s", name, stack[len(stack)-1])
			}
			have := map[string]bool{}
			for _, a := range tok.Attr {
				have[a.Name.Local] = true
				decl, ok := el.attrs[a.Name.Local]
				if !ok || a.Name.Space != "" {
					t.Errorf("report: %s has undeclared attribute %v", name, a.Name)
					continue
				}
				if !validType(decl.typ, a.Value) {
					t.Errorf("report: %s/@%s = %q is not %s", name, a.Name.Local, a.Value, decl.typ)
				}
			}
			for an, decl := range el.attrs {
				if decl.required && !have[an] {
					t.Errorf("report: %s lacks required attribute %s", name, an)
				}
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && schema[stack[len(stack)-1]] != nil && !schema[stack[len(stack)-1]].text &&
				len(bytes.TrimSpace(tok)) > 0 {
				t.Errorf("report: text inside %s", stack[len(stack)-1])
			}
		}
	}
}

func validType(typ, v string) bool {
	switch typ {
	case "xs:string":
		return true
	case "xs:nonNegativeInteger":
		n, err := strconv.ParseUint(v, 10, 64)
		return err == nil && fmt.Sprint(n) == v
	case "xs:decimal":
		return decimalRE.MatchString(v)
	case "xs:dateTime":
		return dateTimeRE.MatchString(v)
	}
	return false
}

// nasty is subject text with characters XML 1.0 forbids (NUL, ESC, BEL,
// U+FFFE, U+FFFF, an invalid byte), a C1 control, markup, and TAB/LF,
// which XML allows.
const nasty = "nul \x00 esc \x1b[31m bell \x07 fffe \uFFFE ffff \uFFFF bad \xff c1 \u009b <tag> & \"q\" ]]> tab\tlf\nend"

func TestXMLText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text, ünïcödé, 日本", "plain text, ünïcödé, 日本"},
		{"a\x00b", `a\x00b`},
		{"\x1b[31m", `\x1b[31m`},
		{"\x7f\u0085\u009b", `\u007f\u0085\u009b`},
		{"\uFFFE\uFFFF\uFFFD", `\ufffe\uffff` + "\uFFFD"},
		{"bad \xff\xfe", `bad \xff\xfe`},
		{"\t\n\r<&>", "\t\n\r<&>"},
		{"\U0001F600", "\U0001F600"},
	}
	for _, tc := range cases {
		if got := XMLText(tc.in); got != tc.want {
			t.Errorf("XMLText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// sampleSummary has one entry of every status; the failed one carries
// nasty text in its code, message and name-adjacent fields.
func sampleSummary() *Summary {
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	code := int64(3)
	zero := int64(0)
	s := &Summary{Format: Format, Manifest: "dir/m\x1b.jsonl", Shard: "1/3", Jobs: 2, StartedAt: at, EndedAt: at.Add(1500 * time.Millisecond), WallMS: 1500,
		Interrupted: "INT",
		Entries: []Result{
			{Name: "ok", Status: StatusPassed, Outcome: "run.finished", Exit: &Exit{Kind: "code", Code: &zero}, Transcript: "out/ok.jsonl",
				Receipts: []Receipt{{Constraint: "filesystem", Status: "applied", Tier: "os"}}, DurationMS: 120},
			{Name: "exit3", Status: StatusFailed, Outcome: "run.finished", Exit: &Exit{Kind: "code", Code: &code}, Message: "the subject exited with status 3", Transcript: "out/exit3.jsonl"},
			{Name: "nasty", Status: StatusFailed, Outcome: "run.failed", Code: "adapter-start-failed" + nasty, Message: "the subject refused the session: " + nasty, Transcript: "out/nasty.jsonl"},
			{Name: "unsup", Status: StatusUnsupported, Outcome: "run.unsupported", Code: "constraint-unsupported", Message: "terminal: no"},
			{Name: "err", Status: StatusError, Message: "root app: no such directory " + nasty},
			{Name: "skip", Status: StatusSkipped, Message: "not started: the batch was interrupted (INT)"},
		}}
	s.total()
	return s
}

// TestJUnit: the report validates against testdata/junit/junit.xsd, has
// no raw forbidden character, and parses back to what was written.
func TestJUnit(t *testing.T) {
	schema := readXSD(t)
	s := sampleSummary()
	var buf bytes.Buffer
	if _, err := JUnit(s).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	doc := buf.Bytes()
	checkAgainstXSD(t, schema, doc)
	for _, c := range []string{"\x00", "\x1b", "\x07", "\uFFFE", "\uFFFF", "\u009b", "\uFFFD"} {
		if bytes.Contains(doc, []byte(c)) {
			t.Errorf("report holds %q raw", c)
		}
	}
	var back JUnitSuites
	if err := xml.Unmarshal(doc, &back); err != nil {
		t.Fatal(err)
	}
	if back.Tests != 6 || back.Failures != 3 || back.Errors != 1 || back.Skipped != 1 || len(back.Suites) != 1 {
		t.Fatalf("totals: %+v", back)
	}
	cases := back.Suites[0].Cases
	if len(cases) != 6 {
		t.Fatalf("%d cases", len(cases))
	}
	want := []struct{ failure, err, skipped bool }{{}, {failure: true}, {failure: true}, {failure: true}, {err: true}, {skipped: true}}
	for i, w := range want {
		c := cases[i]
		if (c.Failure != nil) != w.failure || (c.Error != nil) != w.err || (c.Skipped != nil) != w.skipped {
			t.Errorf("case %s: failure %v error %v skipped %v, want %+v", c.Name, c.Failure != nil, c.Error != nil, c.Skipped != nil, w)
		}
		if c.Name != s.Entries[i].Name {
			t.Errorf("case %d named %q, want %q", i, c.Name, s.Entries[i].Name)
		}
	}
	n := cases[2]
	if n.Failure.Type != XMLText("adapter-start-failed"+nasty) || n.Failure.Message != XMLText("the subject refused the session: "+nasty) ||
		!strings.Contains(n.Failure.Message, `nul \x00 esc \x1b[31m`) || !strings.Contains(n.Failure.Message, "<tag> & \"q\" ]]> tab\tlf\nend") {
		t.Errorf("nasty failure came back as %+v", n.Failure)
	}
	if !strings.Contains(cases[1].SystemOut, "exit: code 3") || !strings.Contains(cases[0].SystemOut, "receipt filesystem: applied os") ||
		!strings.Contains(cases[0].SystemOut, "[[ATTACHMENT|out/ok.jsonl]]") || !strings.Contains(cases[2].SystemOut, "code: adapter-start-failed") {
		t.Errorf("system-out: %q / %q / %q", cases[0].SystemOut, cases[1].SystemOut, cases[2].SystemOut)
	}
}

// TestXSDCheckCatches makes sure the structural check is not vacuous.
func TestXSDCheckCatches(t *testing.T) {
	schema := readXSD(t)
	bad := []string{
		`<testsuites><testsuite name="a" tests="1" failures="0"><testcase name="x" classname="c"/></testsuite></testsuites>`, // no errors attr
		`<testsuites><testcase name="x" classname="c"/></testsuites>`,                                                        // misplaced
		`<testsuites bogus="1"/>`,
		`<testsuites tests="-1"/>`,
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase name="x" classname="c"><flaky/></testcase></testsuite></testsuites>`,
		"<testsuites name=\"\x01\"/>",
	}
	for _, doc := range bad {
		ft := &fakeT{}
		func() {
			defer func() { _ = recover() }()
			checkAgainstXSD(ft, schema, []byte(doc))
		}()
		if !ft.failed {
			t.Errorf("accepted %q", doc)
		}
	}
}

// reporter is the part of testing.T the structural check uses.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// fakeT records failures instead of failing the test; Fatalf unwinds
// with a panic that TestXSDCheckCatches recovers.
type fakeT struct{ failed bool }

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic(f) }
