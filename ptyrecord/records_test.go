package ptyrecord

import (
	"testing"

	"github.com/termverify/termverify-sandbox/ptydrive"
	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/sandbox"
	"github.com/termverify/termverify-sandbox/transcript"
	"github.com/termverify/termverify-sandbox/vt"
)

// TestTerminalMechanism: the terminal receipt is os only for a terminal
// the sandbox made whose size it verified; every other case says why not.
func TestTerminalMechanism(t *testing.T) {
	size := func(applied bool) sandbox.Applied {
		return sandbox.Applied{Mechanisms: []sandbox.MechanismCheck{{Name: sandbox.MechanismTerminalSize, Applied: applied, Reason: "EINVAL"}}}
	}
	for _, tc := range []struct {
		name    string
		console bool
		a       sandbox.Applied
		tier    receipts.Tier
		reason  string
	}{
		{"no terminal", false, size(true), receipts.None, "the sandbox made no terminal"},
		{"size unchecked", true, sandbox.Applied{}, receipts.None, "the terminal's size was not checked"},
		{"size wrong", true, size(false), receipts.None, "the terminal's size is not the requested one: EINVAL"},
		{"verified", true, size(true), receipts.OS, ""},
	} {
		m := TerminalMechanism(tc.console, tc.a)
		if m.Tier != tc.tier || m.Reason != tc.reason || (tc.tier == receipts.OS) != (m.Word == receipts.MechanismPTY) {
			t.Errorf("%s: %+v, want tier %s, reason %q", tc.name, m, tc.tier, tc.reason)
		}
	}
}

// TestMechanisms: a confined filesystem and network are os with their
// words (the allow-list's own); an unconfined one is none with the
// sandbox's reason.
func TestMechanisms(t *testing.T) {
	in, out := sandbox.Confinement{Confined: true}, sandbox.Confinement{Reason: "no netns"}
	for _, tc := range []struct {
		mode     string
		nw       sandbox.Confinement
		fsWord   string
		nwWord   string
		nwTier   receipts.Tier
		nwReason string
	}{
		{"deny", in, receipts.MechanismMountNS, receipts.MechanismNetNS, receipts.OS, ""},
		{"allow-list", in, receipts.MechanismMountNS, receipts.MechanismAllowNS, receipts.OS, ""},
		{"deny", out, receipts.MechanismMountNS, "", receipts.None, "no netns"},
	} {
		fs, nw := Mechanisms(in, tc.nw, tc.mode)
		if fs.Tier != receipts.OS || fs.Word != tc.fsWord || nw.Tier != tc.nwTier || nw.Word != tc.nwWord || nw.Reason != tc.nwReason {
			t.Errorf("%s %+v: %+v %+v", tc.mode, tc.nw, fs, nw)
		}
	}
}

// TestExit: a signal's end is named, an exit's is its code.
func TestExit(t *testing.T) {
	for _, tc := range []struct {
		in   sandbox.Exit
		want transcript.Exit
	}{
		{sandbox.Exit{Code: 3}, transcript.Exit{Kind: transcript.ExitCode, Code: 3}},
		{sandbox.Exit{Code: -1, Signal: "HUP"}, transcript.Exit{Kind: transcript.ExitSignal, Signal: "HUP"}},
	} {
		if got := Exit(tc.in); got != tc.want {
			t.Errorf("Exit(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestObservation: the screen's mode, cursor and frame, and an output
// event only when there was output.
func TestObservation(t *testing.T) {
	emu := vt.New(vt.Config{Cols: 10, Rows: 2})
	emu.Write([]byte("hi\x1b[?1049h"))
	o := Observation(ptydrive.ScreenOf(emu), "")
	if *o.UI.Mode != "alternate" || len(o.Events) != 0 || o.Frame.Rows != 2 || o.Frame.Columns != 10 || o.Process.Exited {
		t.Errorf("alternate screen, no output: %+v %+v", o.UI, o)
	}
	emu.Write([]byte("\x1b[?1049l"))
	o = Observation(ptydrive.ScreenOf(emu), "hi")
	if *o.UI.Mode != "normal" || len(o.Events) != 1 || o.Events[0].Type != "terminal.output" || o.Frame.Lines[0] != "hi" || o.UI.Cursor.Column != 2 {
		t.Errorf("normal screen with output: %+v", o)
	}
}
