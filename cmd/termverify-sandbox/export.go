package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/termverify/termverify-sandbox/asciicast"
	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/internal/termsafe"
)

type exportOptions struct {
	asciicast string
	v2, v3    bool
	pace      string
}

// newExportCmd writes a transcript in another tool's format: an asciicast
// recording for asciinema's player.
func newExportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export --asciicast FILE [--v2|--v3] [--pace DURATION] TRANSCRIPT",
		Short: "Write a transcript as an asciicast recording, for asciinema's player",
		Long: `export validates TRANSCRIPT ("-" for stdin) with the strict codec and writes
it to FILE as an asciicast recording: version 2 (the default, which every
player reads) or, with --v3, version 3.

A PTY-mode transcript gives the terminal's output byte for byte ("o"), each
input as the bytes written to the terminal ("i"), each input.resize ("r"),
each observation as a marker naming its epoch ("m"), and in v3 the exit
("x"). A control/v1 transcript gives its observations' frames as redraws;
one without frames is refused. Transcripts have no wall clock: epoch K is
at K × --pace (default 1s), its inputs half a pace before, so one
transcript always gives the same file. docs/REPORTS.md has the mapping.

FILE is written whole or not at all, never through a symbolic link.

Exit status: 0 written; 2 a usage error, an invalid transcript, one with
nothing to export, or an I/O error.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &exitError{Code: exitUsage, Err: errors.New("export: give one TRANSCRIPT file (- for stdin)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.asciicast, "asciicast", "", "write the asciicast recording to `FILE` (required)")
	f.BoolVar(&o.v2, "v2", false, "asciicast version 2 (the default)")
	f.BoolVar(&o.v3, "v3", false, "asciicast version 3")
	f.StringVar(&o.pace, "pace", asciicast.DefaultPace.String(), "logical time between two epochs, from 1ms to 1h")
	cmd.MarkFlagsMutuallyExclusive("v2", "v3")
	return cmd
}

func runExport(cmd *cobra.Command, o exportOptions, name string) error {
	usage := func(err error) error {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("export: %w", termsafe.Error(err))}
	}
	if o.asciicast == "" {
		return usage(errors.New("--asciicast FILE is required (the only format export writes)"))
	}
	opts := asciicast.Options{Version: asciicast.V2}
	if o.v3 {
		opts.Version = asciicast.V3
	}
	pace, err := parsePace(o.pace)
	if err != nil {
		return usage(err)
	}
	opts.Pace = pace
	t, err := readTranscript(cmd.InOrStdin(), name)
	if err != nil {
		return &exitError{Code: exitUsage, Err: fmt.Errorf("export: %s", formatValidation(name, t, err))}
	}
	cast, err := asciicast.Build(t, opts)
	if err != nil {
		return usage(fmt.Errorf("%s: %w", name, err))
	}
	if err := writeOutput(o.asciicast, func(w io.Writer) error {
		_, err := cast.WriteTo(w)
		return err
	}); err != nil {
		return usage(fmt.Errorf("--asciicast %w", err))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: asciicast v%d, %d events, %d×%d\n", termsafe.String(o.asciicast), opts.Version,
		len(cast.Events), cast.Header.Columns, cast.Header.Rows)
	return nil
}

// writeOutput writes the file path whole or not at all, 0644, through
// internal/safeout: its directory opened without following a symbolic
// link, the file committed by rename.
func writeOutput(path string, fn func(io.Writer) error) error {
	dir, base, err := safeout.SplitFile(path)
	if err != nil {
		return err
	}
	d, err := safeout.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("%s: directory %s: %w", path, dir, err)
	}
	defer d.Close()
	if err := d.WriteFile(base, 0o644, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// parsePace reads --pace: a Go duration within asciicast's bounds.
func parsePace(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--pace %q: a duration such as 500ms or 2s: %w", s, err)
	}
	if d < asciicast.MinPace || d > asciicast.MaxPace {
		return 0, fmt.Errorf("--pace %v: want from %v to %v", d, asciicast.MinPace, asciicast.MaxPace)
	}
	return d, nil
}
