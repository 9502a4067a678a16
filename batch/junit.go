package batch

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// JUnitSuites is the JUnit XML report: one testsuite (the batch's shard),
// one testcase per entry. It uses only the de-facto format's common subset
// that Jenkins, GitLab and GitHub's test reporters read;
// testdata/junit/junit.xsd describes it.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is the batch's shard.
type JUnitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []JUnitProperty `xml:"properties>property"`
	Cases      []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is one name=value of the suite.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one entry. A passed entry has none of Failure, Error and
// Skipped. SystemOut carries the outcome, the failure code, the receipts'
// tiers, the output paths, and the transcript as an attachment
// ([[ATTACHMENT|path]], which Jenkins' and GitLab's reporters link).
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitProblem `xml:"failure"`
	Error     *JUnitProblem `xml:"error"`
	Skipped   *JUnitSkipped `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure (the run did not pass) or an error (no
// transcript: a usage or host error). Type is the failure code.
type JUnitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped is an entry not started.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// JUnit returns s as a JUnit report. Every string is passed through
// XMLText.
func JUnit(s *Summary) JUnitSuites {
	suite := "termverify-sandbox batch " + filepath.Base(s.Manifest)
	if s.Shard != "0/1" {
		suite += " shard " + s.Shard
	}
	suite = XMLText(suite)
	t := s.Totals
	failures := t.Failed + t.Unsupported
	js := JUnitSuite{Name: suite, Tests: t.Entries, Failures: failures, Errors: t.Errors, Skipped: t.Skipped,
		Time: seconds(s.WallMS), Timestamp: s.StartedAt.UTC().Format("2006-01-02T15:04:05"),
		Properties: []JUnitProperty{
			{Name: "manifest", Value: XMLText(s.Manifest)},
			{Name: "shard", Value: s.Shard},
			{Name: "jobs", Value: fmt.Sprint(s.Jobs)},
			{Name: "format", Value: Format},
		}}
	if s.Interrupted != "" {
		js.Properties = append(js.Properties, JUnitProperty{Name: "interrupted", Value: XMLText(s.Interrupted)})
	}
	for _, r := range s.Entries {
		c := JUnitCase{Name: XMLText(r.Name), Classname: suite, Time: seconds(r.DurationMS)}
		msg := XMLText(r.Message)
		code := XMLText(r.Code)
		switch r.Status {
		case StatusFailed, StatusUnsupported:
			typ := code
			if typ == "" {
				typ = r.Outcome
			}
			c.Failure = &JUnitProblem{Message: msg, Type: typ, Text: msg}
		case StatusError:
			c.Error = &JUnitProblem{Message: msg, Type: "error", Text: msg}
		case StatusSkipped:
			c.Skipped = &JUnitSkipped{Message: msg}
		}
		c.SystemOut = XMLText(systemOut(r))
		js.Cases = append(js.Cases, c)
	}
	return JUnitSuites{Name: suite, Tests: js.Tests, Failures: js.Failures, Errors: js.Errors,
		Skipped: js.Skipped, Time: js.Time, Suites: []JUnitSuite{js}}
}

// systemOut is a case's facts, one "key: value" a line.
func systemOut(r Result) string {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	line("status", string(r.Status))
	line("outcome", r.Outcome)
	line("code", r.Code)
	if e := r.Exit; e != nil {
		if e.Kind == "signal" {
			line("exit", "signal "+e.Signal)
		} else {
			line("exit", fmt.Sprintf("code %d", *e.Code))
		}
	}
	for _, rc := range r.Receipts {
		line("receipt "+rc.Constraint, strings.TrimSpace(rc.Status+" "+rc.Tier))
	}
	line("transcript", r.Transcript)
	line("evidence", r.Evidence)
	line("stderr", r.Stderr)
	if r.Transcript != "" {
		fmt.Fprintf(&b, "[[ATTACHMENT|%s]]\n", r.Transcript)
	}
	return b.String()
}

func seconds(ms int64) string { return fmt.Sprintf("%d.%03d", ms/1000, ms%1000) }

// WriteTo writes the report with its XML declaration.
func (j JUnitSuites) WriteTo(w io.Writer) (int64, error) {
	out, err := xml.MarshalIndent(j, "", "  ")
	if err != nil {
		return 0, err
	}
	n, err := io.WriteString(w, xml.Header+string(out)+"\n")
	return int64(n), err
}

// XMLText returns s with every character XML 1.0 forbids (its Char
// production: the C0 controls but TAB, LF and CR; U+FFFE, U+FFFF; the
// surrogates) and every byte that is not UTF-8 replaced by a visible
// escape: \xHH for a byte or a C0 control, \uHHHH otherwise. The C1
// DEL and the C1 controls U+0080–U+009F, which XML 1.0 allows but discourages and
// terminals may execute, are escaped too. encoding/xml then escapes
// markup; it would turn a forbidden character into U+FFFD silently, so a
// reader would not see what the subject sent.
func XMLText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x7f && r <= 0x9f, r == 0xfffe, r == 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
