package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

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
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	return bw.Flush()
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
