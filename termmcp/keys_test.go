package termmcp

import (
	"context"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/interminai"
	"github.com/termverify/termverify-sandbox/ptyinput"
)

// modesOnly is a backend that only knows (or does not know) its modes.
type modesOnly struct {
	m     ptyinput.Modes
	known bool
}

func (b modesOnly) call(context.Context, interminai.Request) (interminai.Reply, error) {
	return interminai.Reply{}, nil
}
func (b modesOnly) modes() (ptyinput.Modes, bool)                  { return b.m, b.known }
func (b modesOnly) keys(context.Context, [][]string, []byte) error { return nil }
func (b modesOnly) release(context.Context) error                  { return nil }

func TestEncodeKeys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       modesOnly
		keys    [][]string
		want    string
		wantErr string
	}{
		{"normal cursor keys", modesOnly{known: true}, [][]string{{"ArrowUp"}, {"Enter"}}, "\x1b[A\r", ""},
		{"application cursor keys", modesOnly{m: ptyinput.Modes{AppCursor: true}, known: true}, [][]string{{"ArrowUp"}}, "\x1bOA", ""},
		{"control", modesOnly{known: true}, [][]string{{"Control", "c"}}, "\x03", ""},
		{"a bad chord sends nothing", modesOnly{known: true}, [][]string{{"Enter"}, {"c", "Control"}}, "", "nothing was typed"},
		{"modes unknown, a key they do not change", modesOnly{}, [][]string{{"Escape"}, {"Control", "d"}}, "\x1b\x04", ""},
		{"modes unknown, a key they change", modesOnly{}, [][]string{{"Escape"}, {"ArrowLeft"}}, "", "cursor-key mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeKeys(tc.keys, tc.b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
					t.Errorf("got %q, %v; want no bytes and an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
