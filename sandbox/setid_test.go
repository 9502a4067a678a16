package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// setIDScript tries every ordinary way to leave a set-user-ID or
// set-group-ID file in the mapped root, and reports each status.
const setIDScript = `cp /bin/true ./suid; chmod 4755 ./suid; echo "chmod-u=$?"
chmod 2755 ./suid; echo "chmod-g=$?"
chmod u+s ./suid; echo "chmod-us=$?"
install -m 4755 /bin/true ./suid2; echo "install=$?"
chmod 755 ./suid; echo "plain=$?"`

// TestNoSetIDFiles is the set-id plant as the attack: as root without
// CAP_SYS_PTRACE (or NET_ADMIN, SETUID, SETGID) the sandbox takes the
// rootless path, where the subject is host uid 0 without capabilities,
// which still owns what it creates: a set-user-ID-root copy of a program
// it plants in the mapped root would run with euid 0 for any local user
// who can reach that directory. No sandbox may
// leave a set-id file, whoever its subject is: the seccomp filter refuses
// the mode bits (chmod family; open, creat, mknod when creating).
func TestNoSetIDFiles(t *testing.T) {
	if os.Getenv(containerEnv) != "" {
		setIDChild(t, []Isolation{IsolationOS})
		return
	}
	t.Run("root", func(t *testing.T) { setIDChild(t, []Isolation{IsolationOS, IsolationNone}) })
	t.Run("root without sys_ptrace", func(t *testing.T) {
		reexecIn(t, "TestNoSetIDFiles", false, "--inh-caps=-sys_ptrace", "--ambient-caps=-all", "--bounding-set=-sys_ptrace")
	})
}

func setIDChild(t *testing.T, isos []Isolation) {
	for _, iso := range isos {
		t.Run(string(iso), func(t *testing.T) {
			f := directFixture(t)
			ex, out, stderr, _ := runBox(t, f.isoSpec(iso, "/bin/sh", "-c", setIDScript), 20*time.Second)
			if ex.ShellStatus() != 0 {
				t.Fatalf("exit %+v stderr %q", ex, stderr)
			}
			for _, w := range []string{"chmod-u=1", "chmod-g=1", "chmod-us=1", "plain=0"} {
				if !strings.Contains(out, w) {
					t.Errorf("subject output lacks %q:\n%s\nstderr %q", w, out, stderr)
				}
			}
			ents, err := os.ReadDir(f.root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				fi, err := os.Lstat(filepath.Join(f.root, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					t.Errorf("the subject left %s %v in the mapped root", e.Name(), fi.Mode())
				}
			}
		})
	}
}
