package term

import (
	"slices"
	"strings"
	"testing"
)

func TestParseIsolation(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Isolation
		err  string
	}{
		{"os", IsolationOS, ""},
		{"auto", IsolationAuto, ""},
		{"none", "", "only when --isolation auto finds the os tier unavailable"},
		{"OS", "", "want os or auto"},
		{"", "", "want os or auto"},
	} {
		got, err := ParseIsolation(tc.in)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseIsolation(%q) = %q, %v; want %q and an error with %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestDirectEnviron: a downgraded program's HOME is the caller's, never
// the host's shared /tmp, and the filesystem root and network mode are
// delivered in the receipts' variables.
func TestDirectEnviron(t *testing.T) {
	l := layout{dir: "/work/p", tmpdir: "/tmp"}
	osEnv := l.environ([]string{"HOME=/home/u", "PATH=/usr/bin"})
	for _, tc := range []struct {
		name   string
		caller []string
		want   []string
		absent string
	}{
		{"home kept", []string{"HOME=/home/u"}, []string{"HOME=/home/u", "TERMVERIFY_FS_ROOT=/work/p", "TERMVERIFY_NETWORK=deny", "PWD=/work/p", "PATH=/usr/bin"}, "HOME=/tmp"},
		{"no home", nil, []string{"TERMVERIFY_FS_ROOT=/work/p"}, "HOME="},
	} {
		got := directEnviron(osEnv, tc.caller, "/work/p")
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		if slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, tc.absent) }) {
			t.Errorf("%s: %q has %q", tc.name, got, tc.absent)
		}
	}
}
