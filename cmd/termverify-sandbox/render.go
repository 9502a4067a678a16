package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
	"github.com/termverify/termverify-sandbox/vt"
)

// renderScrollback is how many scrolled-off lines --scrollback keeps:
// enough for any recorded session a person reads, bounded so that a
// flood on stdin cannot take the memory (about 150 bytes a line).
const renderScrollback = 100000

type renderOptions struct {
	size       string
	ansi       bool
	scrollback bool
}

// newRenderCmd prints the screen a terminal shows after the bytes on
// stdin, through the vt emulator.
func newRenderCmd() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render --size COLSxROWS [--ansi] [--scrollback] < BYTES",
		Short: "Print the screen a terminal shows after the bytes on stdin",
		Long: `Feeds stdin, the bytes a program wrote to its terminal (a recorded
terminal.output stream, a script(1) typescript, any capture), to the vt
emulator with a screen of COLSxROWS, and prints the screen it ends with:
exactly ROWS lines, trailing spaces dropped, wide characters once, line
drawing as drawn. --ansi keeps colours and attributes as SGR sequences,
each line starting and ending in the default style. --scrollback prints
the lines that scrolled off the top first (at most 100,000).

The screen is someone else's text: the bidirectional controls and marks
that reorder what a reader sees (Trojan Source), U+FEFF and the line
separators are printed as visible \uHHHH escapes, as everywhere else this
tool prints such text; with --ansi only the SGR sequences of the rendering
itself are sent raw.

Bytes the emulator did not understand are counted on stderr; stdout holds
the screen only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cols, rows, err := parseGeometry(o.size)
			if err != nil {
				return &exitError{Code: exitUsage, Err: fmt.Errorf("render: --size: %w", err)}
			}
			cfg := vt.Config{Cols: cols, Rows: rows}
			if o.scrollback {
				cfg.Scrollback = renderScrollback
			}
			term := vt.New(cfg)
			if _, err := io.Copy(term, cmd.InOrStdin()); err != nil {
				return &exitError{Code: exitUsage, Err: fmt.Errorf("render: read stdin: %w", err)}
			}
			if err := writeScreen(cmd.OutOrStdout(), term, o); err != nil {
				return &exitError{Code: exitUsage, Err: fmt.Errorf("render: write stdout: %w", err)}
			}
			if d := term.Diagnostics(); d.Total > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "render: %d sequences not understood; the last: %s\n", d.Total, d.Recent[len(d.Recent)-1])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.size, "size", "", "screen size, COLSxROWS (e.g. 80x24)")
	f.BoolVar(&o.ansi, "ansi", false, "print colours and attributes as SGR sequences")
	f.BoolVar(&o.scrollback, "scrollback", false, "print the scrollback before the screen")
	_ = cmd.MarkFlagRequired("size")
	return cmd
}

// writeScreen prints the scrollback (when asked) and the screen, one
// line each.
func writeScreen(w io.Writer, term *vt.Terminal, o renderOptions) error {
	var lines []string
	switch {
	case o.scrollback && o.ansi:
		lines = term.ScrollbackANSI()
	case o.scrollback:
		lines = term.Scrollback()
	}
	if o.ansi {
		lines = append(lines, term.ANSI()...)
	} else {
		lines = append(lines, term.Lines()...)
	}
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(safeLine(l, o.ansi))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// safeLine is a screen line made safe to print on the reader's terminal:
// what the byte stream drew is someone else's text, so the bidi controls
// and marks that reorder what the reader sees (Trojan Source), U+FEFF and
// whatever else termsafe.String escapes come out as visible escapes. With
// ansi the SGR sequences of the emulator's own rendering stay: every ESC
// in such a line is one of them, since the emulator draws no control
// character into a cell (C0 and C1 are not drawable), and only the text
// between them is escaped.
func safeLine(l string, ansi bool) string {
	if !ansi {
		return termsafe.String(l)
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(l, 0x1b)
		if i < 0 {
			b.WriteString(termsafe.String(l))
			return b.String()
		}
		b.WriteString(termsafe.String(l[:i]))
		n := sgrLen(l[i:])
		if n == 0 {
			// Not what our renderer writes: the ESC is escaped too.
			n = 1
			b.WriteString(termsafe.String(l[i : i+n]))
		} else {
			b.WriteString(l[i : i+n])
		}
		l = l[i+n:]
	}
}

// sgrLen is the length of the SGR sequence at the start of s as the
// emulator's rendering writes it (ESC [, digits and semicolons, m), or 0.
func sgrLen(s string) int {
	if !strings.HasPrefix(s, "\x1b[") {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'm':
			return i + 1
		case c >= '0' && c <= '9', c == ';':
		default:
			return 0
		}
	}
	return 0
}

// parseGeometry reads COLSxROWS, each from 1 to vt's maximum.
func parseGeometry(s string) (cols, rows int, err error) {
	c, r, ok := strings.Cut(strings.ToLower(s), "x")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not COLSxROWS", s)
	}
	cols, err1 := strconv.Atoi(c)
	rows, err2 := strconv.Atoi(r)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("%q is not COLSxROWS: %w", s, err)
	}
	if cols < 1 || cols > vt.MaxCols || rows < 1 || rows > vt.MaxRows {
		return 0, 0, fmt.Errorf("%q is outside 1x1 to %dx%d", s, vt.MaxCols, vt.MaxRows)
	}
	return cols, rows, nil
}
