package tmuxtest

import "testing"

func TestCaptureText(t *testing.T) {
	for in, want := range map[string]string{
		"\x0elqqk\x0f x \x1b[31mred\n\x1b[39m┌─\n": "┌──┐ x red\n┌─\n",
		"\x0ex\n\x1b[1mx\x0f x\n":                  "│\n│ x\n",
		"plain lqqk\n":                             "plain lqqk\n",
	} {
		if got := captureText(in); got != want {
			t.Errorf("captureText(%q) = %q, want %q", in, got, want)
		}
	}
}
