package termverifysandbox_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// byNameCalls are the calls that create, rename, remove or change a file
// by path name, resolving every component again each time: what a hostile
// writer of any directory on the path can redirect with a symlink. Every
// output the binary writes for its caller goes through internal/safeout
// instead (opened by descriptor, no symlink at any component).
var byNameCalls = map[string]map[string]bool{
	"os": {
		"Create": true, "OpenFile": true, "WriteFile": true, "CreateTemp": true, "MkdirTemp": true,
		"Mkdir": true, "MkdirAll": true, "Rename": true, "Chmod": true, "Chown": true, "Lchown": true,
		"Truncate": true, "Symlink": true, "Link": true, "Remove": true, "RemoveAll": true,
	},
	"unix": {
		"Creat": true, "Mkdir": true, "Mknod": true, "Mkfifo": true, "Rename": true, "Chmod": true,
		"Chown": true, "Lchown": true, "Truncate": true, "Symlink": true, "Link": true, "Unlink": true, "Rmdir": true,
		// unix.Open only with a flag that writes or creates (below).
	},
}

// byNameDirs hold no code of the product: programs that run inside the
// sandbox as the subject, developer scripts, and test helpers.
var byNameDirs = map[string]string{
	"examples/":             "example subjects: they run inside the sandbox as its unprivileged subject, on its own /sandbox",
	"scripts/":              "developer benchmarks, run by hand on a throwaway state directory",
	"internal/sandboxtest/": "test helpers (and the escape program a test runs inside the sandbox)",
	"internal/tmuxtest/":    "test helper: tmux's config in the test's own temporary directory",
	"internal/ptytest/":     "test helper: opens /dev/ptmx, a fixed root-owned device",
	"internal/safeout/":     "the mechanism itself: unix.Open of \"/\" or \".\" (O_PATH) and of /proc/self/fd/N, our own descriptor",
}

// byNameAllowed are the by-name calls of the product left as they are,
// each keyed file:function:package.Call, with why it is safe.
var byNameAllowed = map[string]string{
	// The sandbox's state directory is checked before every use
	// (sandbox/statedir.go: every component from / without a symlink,
	// each parent root-owned or ours and not writable by others unless
	// sticky, the directory itself ours and not group- or other-writable):
	// below it only root, or we, can create or rename. A sandbox's entry
	// and everything in it are made by us for that sandbox.
	"sandbox/sandbox.go:start:os.Mkdir":               "the sandbox's entry, in the checked state directory",
	"sandbox/sandbox.go:start:os.RemoveAll":           "undoes the scratch root this start just made (ours, 0700, in sticky /tmp)",
	"sandbox/rootfs.go:buildSkeleton:os.Mkdir":        "the sandbox's own root, in its entry",
	"sandbox/rootfs.go:skeletonFromHost:os.Mkdir":     "the own root's /etc, in the entry",
	"sandbox/rootfs.go:skeletonFromHost:os.WriteFile": "the own root's generated /etc files, in the entry",
	"sandbox/rootfs.go:skeletonFromHost:os.Symlink":   "the host's /lib-style symlinks recreated in the own root, never followed on the host",
	"sandbox/rootfs.go:skeletonFromRootFS:os.Symlink": "a --rootfs symlink recreated in the own root, never followed on the host",
	"sandbox/rootfs.go:writeNewFile:os.OpenFile":      "a file of the own root, O_EXCL|O_NOFOLLOW",
	"sandbox/hostpath.go:mount:os.Mkdir":              "the pins directory in the entry, 0700",
	"sandbox/hostpath.go:source:os.Mkdir":             "a pin mountpoint in the root-only pins tmpfs",
	"sandbox/hostpath.go:source:os.OpenFile":          "a pin mountpoint file in the root-only pins tmpfs, O_EXCL",
	"sandbox/hostpath.go:removeEntry:os.RemoveAll":    "removes an entry only after every pin below it is unmounted",
	"sandbox/sweep.go:makeScratchRoot:os.WriteFile":   "the scratch root's record, in the entry",
	"sandbox/sweep.go:makeScratchRoot:os.RemoveAll":   "undoes the scratch root just made (ours, in sticky /tmp) when it cannot be finished",
	"sandbox/sweep.go:sweepScratch:os.RemoveAll":      "a dead sandbox's scratch root named by its record (absolute, termverify-scratch- prefix); RemoveAll never follows a symlink",
	"sandbox/sweep.go:writeOwner:os.WriteFile":        "the entry's owner record (pid, start time), in the entry",
	"sandbox/sandbox.go:chownTree:os.Lchown":          "the own root, built by us for a user namespace; Lchown never follows a symlink",
	"sandbox/sweep.go:sweepCgroups:os.Remove":         "rmdir of a dead sandbox's cgroup in root-owned /sys/fs/cgroup",
	// O_RDWR because a pty master is read and written; no O_CREAT: the
	// kernel's multiplexer makes a new pty, and the descriptor is
	// checked to be a pty master (5:2 with a number) before use.
	"sandbox/console_direct.go:openHostTerminal:unix.Open": "opens /dev/ptmx for a new pty (isolation none's terminal); creates and changes no file",
}

func TestNoOutputByName(t *testing.T) {
	var hits []string
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		for dir := range byNameDirs {
			if strings.HasPrefix(path, dir) {
				return nil
			}
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				name := sel.Sel.Name
				flagged := byNameCalls[pkg.Name][name]
				if pkg.Name == "unix" && name == "Open" && len(call.Args) >= 2 {
					flagged = writesOrCreates(call.Args[1])
				}
				if !flagged {
					return true
				}
				key := path + ":" + fn.Name.Name + ":" + pkg.Name + "." + name
				seen[key] = true
				if _, ok := byNameAllowed[key]; !ok {
					hits = append(hits, fset.Position(call.Pos()).String()+": "+key)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(hits)
	for _, h := range hits {
		t.Errorf("%s: a file changed by name; write outputs through internal/safeout, or add a justified entry to byNameAllowed", h)
	}
	for key := range byNameAllowed {
		if !seen[key] {
			t.Errorf("byNameAllowed entry %s matches no call any more: remove it", key)
		}
	}
}

// writesOrCreates reports whether an open flags expression names a flag
// that writes or creates.
func writesOrCreates(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			switch id.Name {
			case "O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "O_TMPFILE":
				found = true
			}
		}
		return true
	})
	return found
}
