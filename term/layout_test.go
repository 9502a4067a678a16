package term

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// TestLayout: which host directories the program gets, and how.
func TestLayout(t *testing.T) {
	work := t.TempDir()
	own := t.TempDir() // 0700: the caller's own
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	ref := t.TempDir()
	inner := filepath.Join(work, "sub")
	cases := []struct {
		name        string
		write, read []string
		tmpdir      string
		binds       []sandbox.Bind
		wantTmp     string
		err         string
	}{
		{name: "the working directory alone", binds: []sandbox.Bind{{Source: work, Writable: true}}, wantTmp: "/tmp"},
		{name: "write and read", write: []string{own}, read: []string{ref},
			binds: []sandbox.Bind{{Source: work, Writable: true}, {Source: own, Writable: true}, {Source: ref}}, wantTmp: "/tmp"},
		{name: "the caller's own TMPDIR", tmpdir: own,
			binds: []sandbox.Bind{{Source: work, Writable: true}, {Source: own, Writable: true}}, wantTmp: own},
		{name: "a shared TMPDIR is the private /tmp", tmpdir: shared,
			binds: []sandbox.Bind{{Source: work, Writable: true}}, wantTmp: "/tmp"},
		{name: "/tmp is shared", tmpdir: "/tmp", binds: []sandbox.Bind{{Source: work, Writable: true}}, wantTmp: "/tmp"},
		{name: "a shared TMPDIR named by --write", tmpdir: shared, write: []string{shared},
			binds: []sandbox.Bind{{Source: work, Writable: true}, {Source: shared, Writable: true}}, wantTmp: shared},
		{name: "a directory inside one given is covered", write: []string{inner},
			binds: []sandbox.Bind{{Source: work, Writable: true}}, wantTmp: "/tmp"},
		{name: "read-only inside writable", read: []string{inner}, err: "cannot be read-only inside the writable"},
		{name: "writable inside read-only", read: []string{filepath.Dir(work)}, err: "cannot be writable inside the read-only"},
		{name: "a relative path", read: []string{"rel"}, err: "not an absolute path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := newLayout(work, tc.write, tc.read, tc.tmpdir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("newLayout: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(l.binds, tc.binds) || l.tmpdir != tc.wantTmp || l.dir != work {
				t.Errorf("binds %+v tmpdir %s dir %s, want %+v %s %s", l.binds, l.tmpdir, l.dir, tc.binds, tc.wantTmp, work)
			}
			env := strings.Join(l.environ([]string{"HOME=/root", "TMPDIR=/x", "KEEP=1", "LC_CTYPE=en_US.ISO-8859-1", "LANGUAGE=fr", "LC_ALL=C"}), " ")
			for _, want := range []string{"KEEP=1", "HOME=/tmp", "PWD=" + work, "TMPDIR=" + tc.wantTmp} {
				if !strings.Contains(env, want) {
					t.Errorf("environment %q lacks %s", env, want)
				}
			}
			if strings.Contains(env, "HOME=/root") || strings.Contains(env, "TMPDIR=/x") {
				t.Errorf("environment %q keeps the caller's host places", env)
			}
			if strings.Contains(env, "LC_") || strings.Contains(env, "LANGUAGE") {
				t.Errorf("environment %q keeps a locale variable of the caller's, over the one delivered", env)
			}
		})
	}
}

// TestWarnings: a shared working directory and the home directory are
// said; a private project is not.
func TestWarnings(t *testing.T) {
	private := t.TempDir()
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, home, want string
	}{
		{private, "/root", ""},
		{shared, "/root", "shared with other users"},
		{private, private, "is your home"},
	} {
		got := strings.Join(Warnings(tc.dir, []string{"HOME=" + tc.home}), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Warnings(%s, HOME=%s) = %q, want %q", tc.dir, tc.home, got, tc.want)
		}
	}
}
