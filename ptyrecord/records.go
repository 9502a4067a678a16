package ptyrecord

import (
	"fmt"

	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
)

// Diagnostic codes of PTY mode's output, each recorded in the epoch it
// concerns.
const (
	DiagOutputInvalid = "terminal-output-invalid-utf8" // bytes of the output that are not UTF-8, replaced by U+FFFD
	DiagOutputIdle    = "terminal-output-while-idle"   // output written while no epoch was open, recorded in this one
	// DiagSizeChanged: the program set its terminal's size; frames keep
	// the emulator's.
	DiagSizeChanged = "terminal-size-changed"
	// DiagRepliesDropped: query replies the program did not take,
	// dropped.
	DiagRepliesDropped = "terminal-replies-dropped"
	// DiagNotWaiting: at a deadline, what quiesce last saw.
	DiagNotWaiting = "terminal-not-waiting"
	// DiagStopGraceKilled: the program outlived the hangup's grace period
	// and was killed.
	DiagStopGraceKilled = "terminal-stop-killed"
)

// IdleOutput is the diagnostic of an epoch whose observation holds output
// the program wrote while no epoch was open.
func IdleOutput() transcript.Diagnostic {
	return transcript.Diagnostic{Code: DiagOutputIdle,
		Message: "the program wrote to its terminal while no epoch was open (a background job, a clock); that output is in this epoch's observation"}
}

// InvalidOutput is the diagnostic of an epoch whose output had n bytes
// that are not UTF-8 (replaced by U+FFFD in its terminal.output event).
func InvalidOutput(n int) transcript.Diagnostic {
	d := canon.ObjectValue(canon.M("replaced", canon.IntValue(int64(n))))
	return transcript.Diagnostic{Code: DiagOutputInvalid,
		Message: fmt.Sprintf("%d bytes of the output are not UTF-8 and were replaced by U+FFFD", n), Details: &d}
}

// SizeChanged is the diagnostic of an epoch at whose close the kernel's
// size of the terminal (cols × rows, which the program set) is not the
// emulator's (ec × er), which the frame keeps.
func SizeChanged(cols, rows, ec, er int) transcript.Diagnostic {
	d := canon.ObjectValue(canon.M("columns", canon.IntValue(int64(cols))), canon.M("rows", canon.IntValue(int64(rows))))
	return transcript.Diagnostic{Code: DiagSizeChanged, Details: &d,
		Message: fmt.Sprintf("the program set its terminal's size to %dx%d; the frame keeps the terminal's %dx%d", cols, rows, ec, er)}
}

// RepliesDropped is the diagnostic of an epoch in which n bytes of
// replies to the program's queries were dropped.
func RepliesDropped(n int64) transcript.Diagnostic {
	d := canon.ObjectValue(canon.M("bytes", canon.IntValue(n)))
	return transcript.Diagnostic{Code: DiagRepliesDropped, Details: &d,
		Message: fmt.Sprintf("%d bytes of replies to the program's queries were dropped: it did not read the ones before", n)}
}

// Observation is scr in upstream's terminal shape, as the transcript
// records it: the program running, no regions and no focus, the epoch's
// output (when there was any) in one terminal.output event.
func Observation(scr ptydrive.Screen, output string) transcript.Observation {
	mode := "normal"
	if scr.Alternate {
		mode = "alternate"
	}
	o := transcript.Observation{
		State: canon.ObjectValue(canon.M("terminal", canon.ObjectValue(
			canon.M("columns", canon.IntValue(int64(scr.Cols))),
			canon.M("rows", canon.IntValue(int64(scr.Rows))),
		))),
		UI: transcript.UI{
			Regions: []transcript.Region{},
			Cursor:  transcript.Cursor{Column: int64(scr.Cursor.Col), Row: int64(scr.Cursor.Row), Visible: scr.Cursor.Visible},
			Mode:    &mode,
		},
		Events:  []transcript.Event{},
		Frame:   &transcript.Frame{Lines: scr.Lines, Columns: int64(scr.Cols), Rows: int64(scr.Rows)},
		Process: &transcript.Process{},
	}
	if output != "" {
		o.Events = append(o.Events, transcript.Event{Type: "terminal.output",
			Data: canon.ObjectValue(canon.M("chunk", canon.StringValue(output)))})
	}
	return o
}

// Exit is the sandbox's OS-observed exit in the transcript's words.
func Exit(e sandbox.Exit) transcript.Exit {
	if e.Signal != "" {
		return transcript.Exit{Kind: transcript.ExitSignal, Signal: e.Signal}
	}
	return transcript.Exit{Kind: transcript.ExitCode, Code: int64(e.Code)}
}
