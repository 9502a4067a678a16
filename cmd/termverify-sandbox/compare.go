package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/compare"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/report"
	"github.com/termverify/termverify-sandbox/transcript"
)

// compareFlags are the output flags compare and replay share.
type compareFlags struct {
	ignores []string
	json    bool
	html    string // compare only
}

func (o *compareFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&o.ignores, "ignore", nil, "drop differences at or below `PATH`, such as payload.subject.adapter or capability.result:payload.tier (repeatable; grammar in docs/REPLAY.md)")
	f.BoolVar(&o.json, "json", false, "print the verdict as JSON")
}

// parseIgnores parses every --ignore.
func (o *compareFlags) parseIgnores() ([]compare.Ignore, error) {
	out := make([]compare.Ignore, 0, len(o.ignores))
	for _, s := range o.ignores {
		ig, err := compare.ParseIgnore(s)
		if err != nil {
			return nil, fmt.Errorf("--ignore: %w", err)
		}
		out = append(out, ig)
	}
	return out, nil
}

func newCompareCmd() *cobra.Command {
	var o compareFlags
	cmd := &cobra.Command{
		Use:   "compare LEFT RIGHT [--ignore PATH]... [--json]",
		Short: "Compare two transcripts record by record and say whether they are equivalent",
		Long: `compare validates LEFT and RIGHT ("-" for stdin, one side at most) with the
strict codec, then compares their records position by position, envelope
and payload, run_id excluded. Each difference is printed as a dotted path
with both values in RFC 8785 form (cut at 120 bytes; whole with --json); a
position only one side has names the other side's kind; the verdict names
the first divergent seq. On a terminal the diff is coloured (NO_COLOR turns
that off).

--ignore PATH drops the differences at or below PATH: member names joined
by dots, [N] or [*] for array items, * for any member name, ["..."] (a JSON
string) for a name with other characters, optionally narrowed to positions
where both records are of one kind: capability.result:payload.tier. Every
path the report prints can be given as is. The rules are in docs/REPLAY.md.

--html OUT also writes the two transcripts side by side as one
self-contained HTML page, aligned by seq, the divergent positions
highlighted with their paths and the --ignore paths listed
(docs/REPORTS.md).

Exit status: 0 equivalent; 1 divergent; 2 a side is not a valid transcript
(named), or a usage or I/O error.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return &exitError{Code: exitUsage, Err: errors.New("compare: give two transcript files, LEFT and RIGHT")}
			}
			if args[0] == "-" && args[1] == "-" {
				return &exitError{Code: exitUsage, Err: errors.New("compare: only one side can be stdin (-)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd, o, args[0], args[1])
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.html, "html", "", "also write the comparison as a self-contained HTML page to `OUT`")
	return cmd
}

func runCompare(cmd *cobra.Command, o compareFlags, leftName, rightName string) error {
	ignores, err := o.parseIgnores()
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("compare: %w", termsafe.Error(err))}
	}
	sides := [2]*transcript.Transcript{}
	for i, name := range []string{leftName, rightName} {
		t, err := readTranscript(cmd.InOrStdin(), name)
		if err != nil {
			return &exitError{Code: exitUsage, Err: fmt.Errorf("compare: %s side is not a valid transcript: %s", sideName(i), formatValidation(name, t, err))}
		}
		sides[i] = t
	}
	v := compare.Transcripts(sides[0], sides[1], ignores...)
	if o.html != "" {
		c := report.Comparison{Left: report.Run{Name: leftName, Transcript: sides[0]}, Right: report.Run{Name: rightName, Transcript: sides[1]}, Verdict: v}
		if err := writeOutput(o.html, func(w io.Writer) error { return report.WriteCompare(w, c) }); err != nil {
			return &exitError{Code: exitUsage, Err: fmt.Errorf("compare: --html %w", termsafe.Error(err))}
		}
	}
	r := compare.NewReport(leftName, rightName, &v)
	out := cmd.OutOrStdout()
	var text []byte
	if o.json {
		text, err = marshalJSON(r)
		if err != nil {
			return &exitError{Code: exitUsage, Err: fmt.Errorf("compare: %w", err)}
		}
	} else {
		text = []byte(renderReport(&r, colorOn(out)))
	}
	if _, err := out.Write(text); err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("compare: write stdout: %w", err)}
	}
	if !v.Equivalent {
		return &exitError{Code: exitFailed} // the report said why
	}
	return nil
}

func sideName(i int) string {
	if i == 0 {
		return "left"
	}
	return "right"
}

// valueLimit is where a value is cut in the text report.
const valueLimit = 120

// cut returns s cut at valueLimit bytes (on a character boundary), saying
// how many bytes were left out.
func cut(s string) string {
	if len(s) <= valueLimit {
		return s
	}
	n := valueLimit
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (+%d bytes)", s[:n], len(s)-n)
}

func isRuneStart(b byte) bool { return b&0xc0 != 0x80 }

// SGR sequences of the coloured report.
const (
	sgrReset = "\x1b[0m"
	sgrBold  = "\x1b[1m"
	sgrRed   = "\x1b[31m"
	sgrGreen = "\x1b[32m"
	sgrDim   = "\x1b[2m"
)

// colorOn reports whether the report to w is coloured: w is a terminal,
// NO_COLOR is unset or empty, and TERM is not dumb.
func colorOn(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// renderReport is the text view of r, the report --json prints.
// Everything that comes from a transcript — kinds, member names, values,
// the file names — is escaped with termsafe, so neither side can drive the
// reader's terminal or forge a line; colour, when on, is added around the
// escaped text only.
func renderReport(r *compare.Report, color bool) string {
	paint := func(sgr, s string) string {
		if !color {
			return s
		}
		return sgr + s + sgrReset
	}
	esc := termsafe.String
	var b strings.Builder
	fmt.Fprintf(&b, "left   %s  %d records\n", esc(r.Left.File), r.Left.Records)
	fmt.Fprintf(&b, "right  %s  %d records\n", esc(r.Right.File), r.Right.Records)
	for _, ig := range r.Ignored {
		fmt.Fprintf(&b, "ignore %s  (%s dropped)\n", esc(ig.Path), plural(ig.Differences, "difference"))
	}
	for _, d := range r.Divergences {
		head := fmt.Sprintf("seq %d", d.Seq)
		switch {
		case d.LeftKind == nil:
			fmt.Fprintf(&b, "%s  only on the right: %s\n", paint(sgrBold, head), paint(sgrGreen, esc(*d.RightKind)))
			continue
		case d.RightKind == nil:
			fmt.Fprintf(&b, "%s  only on the left: %s\n", paint(sgrBold, head), paint(sgrRed, esc(*d.LeftKind)))
			continue
		case *d.LeftKind == *d.RightKind:
			fmt.Fprintf(&b, "%s  %s\n", paint(sgrBold, head), esc(*d.LeftKind))
		default:
			fmt.Fprintf(&b, "%s  left %s, right %s\n", paint(sgrBold, head), esc(*d.LeftKind), esc(*d.RightKind))
		}
		for _, x := range d.Differences {
			fmt.Fprintf(&b, "  %s\n", esc(x.Path))
			fmt.Fprintf(&b, "    %s\n", paint(sgrRed, "- "+shown(x.Left)))
			fmt.Fprintf(&b, "    %s\n", paint(sgrGreen, "+ "+shown(x.Right)))
		}
	}
	if r.Equivalent {
		b.WriteString(paint(sgrBold+sgrGreen, "equivalent"))
		fmt.Fprintf(&b, " %s\n", paint(sgrDim, "(run_id not compared)"))
	} else {
		b.WriteString(paint(sgrBold+sgrRed, "divergent"))
		fmt.Fprintf(&b, ": %d of %d positions differ, first at seq %d %s\n", len(r.Divergences),
			max(r.Left.Records, r.Right.Records), *r.FirstDivergentSeq, paint(sgrDim, "(run_id not compared)"))
	}
	return b.String()
}

// plural is "1 difference", "2 differences".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// shown is a difference's value for the text report: cut, escaped, or
// "(absent)".
func shown(s *string) string {
	if s == nil {
		return "(absent)"
	}
	return termsafe.String(cut(*s))
}

// marshalJSON is the indented JSON of v, made safe for a terminal
// (termsafe.JSON: the decoded values are unchanged).
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return termsafe.JSON(buf.Bytes()), nil
}
