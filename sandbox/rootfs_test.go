package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRootFS runs the static escape helper in a minimal complete root that
// holds only what the init needs (the glibc loader and libc, as the docs
// require) plus the helper: nothing of the host's /usr is visible, the
// root is read-only, and no mountpoint is created in it.
func TestRootFS(t *testing.T) {
	f := newFixture(t)
	f.withEscape(t)
	rootfs := t.TempDir()
	copyFile := func(src, dst string, mode os.FileMode) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Skipf("minimal root needs %s: %v", src, err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("/lib64/ld-linux-x86-64.so.2", filepath.Join(rootfs, "lib64/ld-linux-x86-64.so.2"), 0o755)
	copyFile("/lib/x86_64-linux-gnu/libc.so.6", filepath.Join(rootfs, "lib/x86_64-linux-gnu/libc.so.6"), 0o755)
	copyFile(filepath.Join(f.root, "escape"), filepath.Join(rootfs, "bin/escape"), 0o755)
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc/hosts"), []byte(hostHostsMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(rootfs)

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"host usr invisible", []string{"read", "/usr/bin/env"}, "ERR ENOENT"},
		{"root read-only", []string{"write", "/bin/x"}, "ERR EROFS"},
		{"workdir writable", []string{"write", Workdir + "/x"}, "OK"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := f.spec(append([]string{"/bin/escape"}, tc.args...)...)
			spec.RootFS = rootfs
			ex, out, stderr, sb := runBox(t, spec, 20*time.Second)
			if ex.ShellStatus() != 0 {
				t.Fatalf("exit %+v stderr %q", ex, stderr)
			}
			if out != tc.want {
				t.Errorf("got %q, want %q", out, tc.want)
			}
			if a := sb.Applied(); !a.Filesystem.Confined {
				t.Errorf("filesystem %+v", a.Filesystem)
			}
		})
	}
	t.Run("hosts overlaid with the pinned file", func(t *testing.T) {
		spec := f.spec("/bin/escape", "read", "/etc/hosts")
		spec.RootFS = rootfs
		_, out, _, _ := runBox(t, spec, 20*time.Second)
		if !strings.Contains(out, "localhost") || strings.Contains(out, hostHostsMarker) {
			t.Errorf("hosts %q", out)
		}
	})
	// The subject is a script without #! found by PATH lookup: its exec
	// fails with ENOEXEC and the /bin/sh fallback with ENOENT (this root
	// has no shell). The report names the subject as given, not the path
	// found nor the fallback's "sh": the child that tried both shares the
	// reaper's memory until it exits, and must not have rewritten the
	// argv the reaper reports from.
	t.Run("script without #! and no /bin/sh", func(t *testing.T) {
		writeFile(t, filepath.Join(f.root, "tvs-noshebang"), "echo must not run\n", 0o755)
		spec := f.spec("tvs-noshebang", "arg")
		spec.Env = []string{"PATH=" + Workdir}
		spec.RootFS = rootfs
		sb, err := Start(context.Background(), spec)
		if err == nil {
			_ = sb.Destroy()
			t.Fatal("started a script without #! in a root without /bin/sh")
		}
		var ee *ExecError
		if !errors.As(err, &ee) || ee.Code != 127 || ee.Msg != "tvs-noshebang: No such file or directory" {
			t.Fatalf("start: %v (%#v), want *ExecError 127 naming tvs-noshebang", err, ee)
		}
	})
	after, _ := os.ReadDir(rootfs)
	if len(after) != len(before) {
		t.Errorf("the complete root gained entries: %v -> %v", before, after)
	}
}

// hostHostsMarker is the rootfs's own /etc/hosts line, which the pinned
// hosts file must hide.
const hostHostsMarker = "10.9.8.7 from-the-rootfs"
