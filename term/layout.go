package term

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// layout is what the program sees of the host: the working directory and
// Config.Write read-write and Config.Read read-only, each at its own host
// path, and $TMPDIR where it is the caller's own. Everything else is the
// sandbox's default: the host's system directories read-only, a private
// /tmp, a generated /etc, no home.
type layout struct {
	binds  []sandbox.Bind
	dir    string // the working directory, at its host path
	tmpdir string // $TMPDIR for the program: the caller's, or /tmp
}

// newLayout resolves cfg's directories (absolute, cleaned; each must
// exist, and is opened again without symlinks by the sandbox). tmpdir is
// the caller's $TMPDIR ("" when unset).
func newLayout(dir string, write, read []string, tmpdir string) (layout, error) {
	l := layout{dir: filepath.Clean(dir), tmpdir: "/tmp"}
	type want struct {
		path     string
		writable bool
	}
	wants := []want{{l.dir, true}}
	for _, w := range write {
		wants = append(wants, want{w, true})
	}
	for _, r := range read {
		wants = append(wants, want{r, false})
	}
	if tmpdir != "" && filepath.IsAbs(tmpdir) {
		t := filepath.Clean(tmpdir)
		switch shared, err := sharedDir(t); {
		case err != nil:
			// An unusable $TMPDIR: the program gets the private /tmp.
		case shared && !slices.ContainsFunc(write, func(w string) bool { return filepath.Clean(w) == t }):
			// Other programs' sockets and files live there (a tmux
			// server, ssh-agent): the program gets the private /tmp.
		default:
			wants = append(wants, want{t, true})
			l.tmpdir = t
		}
	}
	for i := range wants {
		if !filepath.IsAbs(wants[i].path) {
			return layout{}, fmt.Errorf("%s is not an absolute path", wants[i].path)
		}
		wants[i].path = filepath.Clean(wants[i].path)
	}
	// Parents first: a directory inside one already bound with the same
	// access is covered by it; one that asks for other access than its
	// parent's is refused (the sandbox does not nest binds).
	slices.SortStableFunc(wants, func(a, b want) int { return len(a.path) - len(b.path) })
	var kept []want
	for _, w := range wants {
		covered := false
		for _, k := range kept {
			if w.path == k.path || strings.HasPrefix(w.path, k.path+"/") {
				if w.writable && !k.writable {
					return layout{}, fmt.Errorf("%s cannot be writable inside the read-only %s", w.path, k.path)
				}
				if !w.writable && k.writable {
					return layout{}, fmt.Errorf("%s cannot be read-only inside the writable %s", w.path, k.path)
				}
				covered = true
				break
			}
		}
		if !covered {
			kept = append(kept, w)
		}
	}
	for _, k := range kept {
		l.binds = append(l.binds, sandbox.Bind{Source: k.path, Writable: k.writable})
	}
	return l, nil
}

// sharedDir reports whether dir is a directory other users share: /tmp
// itself, or any directory anyone may write (world-writable, as /tmp,
// /var/tmp and /dev/shm are).
func sharedDir(dir string) (bool, error) {
	if dir == "/tmp" {
		return true, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, errors.New("not a directory")
	}
	return st.Mode&0o002 != 0, nil
}

// environ is the program's environment for l: the caller's less what
// names host places (HOME, PWD, XDG_RUNTIME_DIR, SSH_AUTH_SOCK, TMPDIR)
// and every locale variable (LANG, LANGUAGE, LC_*), with TERM, LANG,
// PWD, TMPDIR and HOME set. HOME is the private /tmp: a
// program's dotfiles (.viminfo, .python_history) stay out of the project
// and go with the sandbox.
func (l layout) environ(env []string) []string {
	var out []string
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		switch {
		case k == "HOME", k == "PWD", k == "OLDPWD", k == "XDG_RUNTIME_DIR", k == "SSH_AUTH_SOCK", k == "TMPDIR", k == "TERM":
			continue
		case k == "LANG", k == "LANGUAGE", strings.HasPrefix(k, "LC_"):
			// The locale is the one RECEIPTS says was delivered: no
			// category of the caller's may override it.
			continue
		}
		out = append(out, e)
	}
	return append(out, "TERM="+envTERM, "LANG="+envLANG, "HOME=/tmp", "PWD="+l.dir, "TMPDIR="+l.tmpdir)
}

// workingDir is dir, or the caller's working directory by its physical
// path (getcwd(2), not $PWD: a directory reached through a symlink, as
// /home is on some hosts, is still mapped, at the path the kernel
// resolves).
func workingDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Getcwd(buf)
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	return strings.TrimRight(string(buf[:n]), "\x00"), nil
}

// CallerOwner is the user who ran term start, whom the program's files
// belong to: the user sudo ran it for (SUDO_UID and SUDO_GID in env, which
// sudo sets and only root can forge for itself), else the process's own
// effective ids.
func CallerOwner(env []string) sandbox.Owner {
	uid, errU := strconv.Atoi(envValue(env, "SUDO_UID"))
	gid, errG := strconv.Atoi(envValue(env, "SUDO_GID"))
	if errU == nil && errG == nil && uid >= 0 && gid >= 0 {
		return sandbox.Owner{UID: uid, GID: gid}
	}
	return sandbox.Owner{UID: os.Geteuid(), GID: os.Getegid()}
}

// Warnings says what the caller may not expect of the program's view of
// dir (its working directory, "" for the caller's): a directory others
// share (/tmp, any world-writable one) is mapped whole, what any user may
// write there included, and a home directory is mapped with every dotfile
// in it.
func Warnings(dir string, env []string) []string {
	dir, err := workingDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	if shared, err := sharedDir(dir); err == nil && shared {
		out = append(out, fmt.Sprintf("the working directory %s is shared with other users: the program may write there what any user may", dir))
	}
	if home := envValue(env, "HOME"); home != "" && filepath.Clean(home) == dir {
		out = append(out, fmt.Sprintf("the working directory %s is your home: the program may read and write every file in it, dotfiles included", dir))
	}
	return out
}
