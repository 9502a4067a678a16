package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/internal/reaper"
	"github.com/termverify/termverify-sandbox/internal/sandboxtest"
)

// The reaper (internal/reaper, C) seen through the package API, in both
// isolations: what TestExitReporting, TestDirect and TestContainment do not
// already cover. Every subject here ends in well under a second.

var bothIsolations = []Isolation{IsolationOS, IsolationNone}

func (f *fixture) isoSpec(iso Isolation, args ...string) Spec {
	s := f.spec(args...)
	s.Isolation = iso
	return s
}

// inside is rel (a path in the mapped root) as the subject sees it.
func (f *fixture) inside(iso Isolation, rel string) string {
	if iso == IsolationNone {
		return filepath.Join(f.root, rel)
	}
	return Workdir + "/" + rel
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// longPathDecoy makes, under root, an executable decoy whose relative path
// ("./...") is PATH_MAX-1 bytes long, and returns that path with more bytes
// appended: a name the kernel must refuse (ENAMETOOLONG), which a reaper
// that copied it into a PATH_MAX buffer would cut down to the decoy's.
func longPathDecoy(t *testing.T, root string) string {
	t.Helper()
	dirs := strings.Repeat(strings.Repeat("d", 200)+"/", 20)
	decoy := ("./" + dirs + strings.Repeat("x", 300))[:unix.PathMax-1]
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(decoy[2:], "/")
	for _, d := range parts[:len(parts)-1] {
		if err := unix.Mkdirat(fd, d, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, d, unix.O_PATH|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	defer unix.Close(fd)
	w, err := unix.Openat(fd, parts[len(parts)-1], unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(w)
	if _, err := unix.Write(w, []byte("#!/bin/sh\necho decoy ran; exit 99\n")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fchmod(w, 0o755); err != nil {
		t.Fatal(err)
	}
	return decoy + strings.Repeat("y", 100)
}

// TestReaperExec covers how the reaper resolves and starts the subject:
// PATH lookup of a bare name, the shells' 126/127, execvp's /bin/sh
// fallback, the descriptors the subject inherits, and exits of its own.
func TestReaperExec(t *testing.T) {
	f := directFixture(t)
	r := f.root
	writeFile(t, filepath.Join(r, "bin/tvs-hello"), "#!/bin/sh\necho hello from PATH \"$@\"\n", 0o755)
	// Earlier in PATH but not executable, or not a file: skipped.
	writeFile(t, filepath.Join(r, "noexec/tvs-hello"), "#!/bin/sh\necho wrong one\n", 0o644)
	if err := os.MkdirAll(filepath.Join(r, "isdir/tvs-hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(r, "tvs-in-cwd"), "#!/bin/sh\necho found in cwd\n", 0o755)
	writeFile(t, filepath.Join(r, "plain"), "#!/bin/sh\necho must not run\n", 0o644)
	// No #! and no ELF header: ENOEXEC, run as "sh ./noshebang ARGS...".
	writeFile(t, filepath.Join(r, "noshebang"), "echo \"sh runs $0 with [$1] [$2]\"; exit 5\n", 0o755)
	if err := os.MkdirAll(filepath.Join(r, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tooLong := longPathDecoy(t, r)
	_, pyErr := os.Stat("/usr/bin/python3")

	type want struct {
		exec   int    // a *ExecError with this code from Start
		code   int    // else the subject's exit
		signal string //
		out    string // and its stdout
	}
	cases := []struct {
		name string
		only Isolation // "" both
		args []string
		path func(iso Isolation) string // PATH; nil: the default
		want want
		skip error
	}{
		{name: "bare name looked up in PATH, past non-executables",
			args: []string{"tvs-hello", "a b"},
			path: func(iso Isolation) string {
				return "/nonexistent:" + f.inside(iso, "isdir") + ":" + f.inside(iso, "noexec") + ":" + f.inside(iso, "bin") + ":/usr/bin:/bin"
			},
			want: want{out: "hello from PATH a b"}},
		{name: "empty PATH entry is the working directory",
			args: []string{"tvs-in-cwd"},
			path: func(Isolation) string { return "/usr/bin::/bin" },
			want: want{out: "found in cwd"}},
		{name: "bare name from the default PATH", args: []string{"echo", "default"}, want: want{out: "default"}},
		{name: "bare name not in PATH is 127", only: IsolationNone, args: []string{"tvs-no-such-command"}, want: want{exec: 127}},
		{name: "bare name only non-executable in PATH is 127",
			args: []string{"tvs-hello"},
			path: func(iso Isolation) string { return f.inside(iso, "noexec") },
			want: want{exec: 127}},
		{name: "missing path is 127", args: []string{"./no-such-file"}, want: want{exec: 127}},
		{name: "missing directory in path is 127", args: []string{"./plain/x"}, want: want{exec: 127}},
		{name: "non-executable file is 126", args: []string{"./plain"}, want: want{exec: 126}},
		{name: "directory is 126", args: []string{"./adir"}, want: want{exec: 126}},
		{name: "over-long path is 126, never a shorter one", args: []string{tooLong}, want: want{exec: 126}},
		{name: "script without #! runs under /bin/sh", args: []string{"./noshebang", "a b", "c"},
			want: want{code: 5, out: "sh runs ./noshebang with [a b] [c]"}},
		// The os tier's case is TestContainment's "only stdio inherited".
		{name: "only stdio inherited", only: IsolationNone, args: []string{"/bin/sh", "-c", "ls /proc/$$/fd"},
			want: want{out: "0\n1\n2"}},
		{name: "sigkill", only: IsolationNone, args: []string{"/bin/sh", "-c", "kill -KILL $$"},
			want: want{code: -1, signal: "KILL"}},
		{name: "abort()", only: IsolationNone, args: []string{"/usr/bin/python3", "-c", "import os; os.abort()"},
			want: want{code: -1, signal: "ABRT"}, skip: pyErr},
	}
	for _, iso := range bothIsolations {
		for _, tc := range cases {
			if tc.only != "" && tc.only != iso {
				continue
			}
			t.Run(string(iso)+"/"+tc.name, func(t *testing.T) {
				if tc.skip != nil {
					t.Skip(tc.skip)
				}
				spec := f.isoSpec(iso, tc.args...)
				if tc.path != nil {
					spec.Env = []string{"PATH=" + tc.path(iso)}
				}
				if tc.want.exec != 0 {
					sb, err := Start(context.Background(), spec)
					if err == nil {
						_ = sb.Destroy()
					}
					var ee *ExecError
					if !errors.As(err, &ee) || ee.Code != tc.want.exec {
						t.Fatalf("start: %v, want *ExecError with code %d", err, tc.want.exec)
					}
					// The sandbox was made before the exec failed, and
					// Start has released it already.
					if ee.ID == "" {
						t.Errorf("start: %v names no sandbox", err)
					}
					if cg := sandboxtest.CgroupsOf(ee.ID); len(cg) > 0 {
						t.Errorf("a failed start left cgroups %v", cg)
					}
					if _, err := os.Stat(filepath.Join(spec.StateDir, ee.ID)); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("a failed start left its state entry (%v)", err)
					}
					return
				}
				ex, out, stderr, _ := runBox(t, spec, 5*time.Second)
				if ex.Code != tc.want.code || ex.Signal != tc.want.signal || ex.InitLost || ex.Killed || out != tc.want.out {
					t.Errorf("exit %+v stdout %q (stderr %q), want code %d signal %q stdout %q",
						ex, out, stderr, tc.want.code, tc.want.signal, tc.want.out)
				}
			})
		}
	}
}

// TestReaperSignals sends signals through the Sandbox's API once the
// subject says it is ready: the reaper must forward them to the subject
// (as PID 1 it gets them from the host, blocked and read from a signalfd)
// and report the subject's own end.
func TestReaperSignals(t *testing.T) {
	f := directFixture(t)
	cases := []struct {
		name   string
		script string
		sig    unix.Signal
		code   int
		signal string
	}{
		{"TERM kills a default subject", "echo ready; exec sleep 10", unix.SIGTERM, -1, "TERM"},
		{"USR2 kills a default subject", "echo ready; exec sleep 10", unix.SIGUSR2, -1, "USR2"},
		{"USR1 reaches the subject's handler", "trap 'exit 42' USR1; echo ready; while :; do sleep 0.02; done", unix.SIGUSR1, 42, ""},
	}
	for _, iso := range bothIsolations {
		for _, tc := range cases {
			t.Run(string(iso)+"/"+tc.name, func(t *testing.T) {
				outR, outW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer outR.Close()
				spec := f.isoSpec(iso, "/bin/sh", "-c", tc.script)
				spec.Stdout = outW
				sb, err := Start(context.Background(), spec)
				outW.Close()
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				t.Cleanup(func() {
					if err := sb.Destroy(); err != nil {
						t.Errorf("destroy: %v", err)
					}
				})
				timer := time.AfterFunc(5*time.Second, func() { _ = sb.Kill() })
				defer timer.Stop()
				line, err := bufio.NewReader(outR).ReadString('\n')
				if line != "ready\n" {
					t.Fatalf("subject said %q (%v), want ready", line, err)
				}
				if err := sb.Signal(tc.sig); err != nil {
					t.Fatalf("signal: %v", err)
				}
				ex, err := sb.Wait()
				if err != nil {
					t.Fatalf("wait: %v", err)
				}
				if ex.Code != tc.code || ex.Signal != tc.signal || ex.Killed || ex.InitLost {
					t.Errorf("exit %+v, want code %d signal %q", ex, tc.code, tc.signal)
				}
			})
		}
	}
}

// orphanScript leaves five orphans in a process group of their own,
// reports whether they were adopted by the reaper (the subject's parent),
// SIGKILLs the group so that they die together (their SIGCHLDs coalesce)
// and lists which of the reaper's children are then left as zombies.
const orphanScript = `
setsid -w sh -c 'for i in 1 2 3 4 5; do sleep 5 & done; echo $$ $! >orphans'
read g o <orphans
pp=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$o/status)
[ "$pp" = "$PPID" ] && pp=yes
kill -KILL -$g
sleep 0.2
z=
for s in $(grep -l '^State:[[:space:]]*Z' /proc/[0-9]*/status 2>/dev/null); do
	[ "$(sed -n 's/^PPid:[[:space:]]*//p' $s 2>/dev/null)" = "$PPID" ] && z="$z ${s%/status}"
done
echo "adopted=$pp zombies=$z"
`

// TestReaperOrphans: orphaned grandchildren become the reaper's children
// (PID 1, or the subreaper with isolation none) and are reaped as they end,
// every one of them even when their ends coalesce into one SIGCHLD.
func TestReaperOrphans(t *testing.T) {
	for _, iso := range bothIsolations {
		t.Run(string(iso), func(t *testing.T) {
			// A root of its own: each sandbox has its own uid, and the
			// other run's "orphans" file is not this one's to overwrite.
			f := directFixture(t)
			ex, out, stderr, _ := runBox(t, f.isoSpec(iso, "/bin/sh", "-c", orphanScript), 5*time.Second)
			if ex.ShellStatus() != 0 || out != "adopted=yes zombies=" {
				t.Errorf("exit %+v stdout %q (stderr %q), want adopted=yes and no zombies", ex, out, stderr)
			}
		})
	}
}

// TestReaperInheritedSIGCHLDIgnored starts the reaper (direct mode, by its
// own protocol) with SIGCHLD ignored, as a non-Go parent may leave it
// (execve keeps SIG_IGN): it must still see and report the subject's exit,
// not have the kernel reap the subject for it.
func TestReaperInheritedSIGCHLDIgnored(t *testing.T) {
	f := newFixture(t)
	if err := exec.Command("env", "--ignore-signal=CHLD", "true").Run(); err != nil {
		t.Skipf("env --ignore-signal (coreutils 8.31): %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var pipes [3][2]*os.File // liveness, report, go
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		pipes[i] = [2]*os.File{r, w}
		defer r.Close()
		defer w.Close()
	}
	liveR, liveW := pipes[0][0], pipes[0][1]
	repR, repW := pipes[1][0], pipes[1][1]
	goR, goW := pipes[2][0], pipes[2][1]
	args := append([]string{"--ignore-signal=CHLD", exe}, reaper.Args(reaper.ModeDirect, nil, nil, 0, nil, []string{"/bin/sh", "-c", "exit 3"})...)
	cmd := exec.Command("env", args...)
	cmd.Dir = f.root
	cmd.ExtraFiles = []*os.File{liveR, repW, goR}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	liveR.Close()
	repW.Close()
	goR.Close()
	timer := time.AfterFunc(2*time.Second, func() { liveW.Close() }) // liveness EOF ends a stuck reaper
	defer timer.Stop()
	if _, err := goW.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	report, _ := io.ReadAll(repR)
	err = cmd.Wait()
	// No filter given: only no_new_privs, and the mode says so.
	// The direct reaper's seccomp report also names its working directory.
	if got := string(report); !strings.HasPrefix(got, "seccomp 0 cwd=") || !strings.Contains(got, "\nstarted ") || !strings.HasSuffix(got, "\nexited 3\n") {
		t.Errorf("report %q, want seccomp 0 cwd=DEV:INO, started, then exited 3", report)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("reaper: %v, want exit status 3", err)
	}
}

// TestReaperLost: with isolation none the subject is not in a PID
// namespace of its own and can kill its reaper. Wait must then say the init
// was lost and how it really died, not a KILL it made up.
func TestReaperLost(t *testing.T) {
	f := directFixture(t)
	cases := []struct {
		name, sig, want string
	}{
		{"SEGV", "SEGV", "SEGV"},
		{"KILL", "KILL", "KILL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The subject waits for a line on stdin, sent once Start has
			// returned: killed any sooner, the reaper could not report the
			// subject started and Start itself would fail.
			inR, inW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer inW.Close()
			spec := f.isoSpec(IsolationNone, "/bin/sh", "-c", "read go; kill -"+tc.sig+" $PPID; exec sleep 10")
			spec.Stdin = inR
			sb, err := Start(context.Background(), spec)
			inR.Close()
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			t.Cleanup(func() {
				if err := sb.Destroy(); err != nil {
					t.Errorf("destroy: %v", err)
				}
			})
			if _, err := inW.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			timer := time.AfterFunc(5*time.Second, func() { _ = sb.Kill() })
			defer timer.Stop()
			ex, err := sb.Wait()
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
			if !ex.InitLost || ex.Signal != tc.want || ex.Killed {
				t.Errorf("exit %+v, want the init lost to %s", ex, tc.want)
			}
		})
	}
}

// startPiped starts spec with a pipe as its stdin and another as its
// stdout, closes the subject's ends in this process, and returns ours.
// A timer kills the sandbox after 10 s: a bound for a test that fails,
// never a condition of one that passes.
func startPiped(t *testing.T, spec Spec) (sb *Sandbox, in *os.File, out *os.File) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outR.Close() })
	spec.Stdin, spec.Stdout = inR, outW
	sb, err = Start(context.Background(), spec)
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	timer := time.AfterFunc(10*time.Second, func() { _ = sb.Kill() })
	t.Cleanup(func() { timer.Stop() })
	return sb, inW, outR
}

// TestReaperStdioOnlyInSubject: the subject's stdio pipe ends must exist
// only in the subject. A reaper that kept its own copies would make a
// write after the subject closed its stdin succeed (an input recorded
// that the subject could never read) and hide the subject closing its
// stdout until the whole sandbox ended.
func TestReaperStdioOnlyInSubject(t *testing.T) {
	f := directFixture(t)
	for _, iso := range bothIsolations {
		t.Run(string(iso)+"/stdin closed by the subject: our write fails with EPIPE", func(t *testing.T) {
			sb, in, out := startPiped(t, f.isoSpec(iso, "/bin/sh", "-c", "exec 0<&-; echo closed; exec sleep 10"))
			line, err := bufio.NewReader(out).ReadString('\n')
			if line != "closed\n" {
				t.Fatalf("subject said %q (%v), want closed", line, err)
			}
			// Go returns EPIPE from writes to descriptors other than 1
			// and 2 instead of dying of SIGPIPE.
			if _, err := in.Write([]byte("late input\n")); !errors.Is(err, unix.EPIPE) {
				t.Errorf("write after the subject closed its stdin: %v, want EPIPE", err)
			}
			_ = sb.Kill()
			_, _ = sb.Wait()
		})
		t.Run(string(iso)+"/stdout closed by the subject: we read EOF while it runs", func(t *testing.T) {
			sb, in, out := startPiped(t, f.isoSpec(iso, "/bin/sh", "-c", "exec 1>&-; read x; exit 7"))
			if b, err := io.ReadAll(out); err != nil || len(b) != 0 {
				t.Fatalf("read %q %v, want EOF", b, err)
			}
			// EOF came while the subject still waits for this line: it
			// exits 7 on its own, where a late EOF means the timer killed it.
			_, _ = in.Write([]byte("go\n"))
			ex, err := sb.Wait()
			if err != nil || ex.Code != 7 || ex.Killed {
				t.Errorf("exit %+v %v, want code 7: EOF came only when the sandbox ended", ex, err)
			}
		})
	}
}

// openPty returns a new pseudo-terminal's master and slave, neither our
// controlling terminal.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	master = os.NewFile(uintptr(m), "ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		t.Skipf("TIOCGPTPEER: %v", errno)
	}
	return master, os.NewFile(s, "pts")
}

// groupsScript prints the subject shell's pid, process group and the
// terminal's foreground group (fields 1, 5 and 8 of /proc/self/stat; the
// shell's comm, "sh", has no spaces).
const groupsScript = `read -r pid comm state ppid pgrp sid tty tpgid rest </proc/self/stat; echo "pid=$pid pgrp=$pgrp tpgid=$tpgid"`

// TestReaperTerminalForeground: in a sandbox whose stdin is a terminal,
// the subject is the terminal's foreground process group (so the
// terminal's ^C, ^Z and reads reach it, as in a shell's job); with pipes
// nothing changes and it stays in the reaper's group.
func TestReaperTerminalForeground(t *testing.T) {
	f := newFixture(t)
	t.Run("pty", func(t *testing.T) {
		master, slave := openPty(t)
		spec := f.isoSpec(IsolationOS, "/bin/sh", "-c", groupsScript)
		spec.Stdin, spec.Stdout, spec.Stderr = slave, slave, slave
		sb, err := Start(context.Background(), spec)
		slave.Close()
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		t.Cleanup(func() {
			if err := sb.Destroy(); err != nil {
				t.Errorf("destroy: %v", err)
			}
		})
		timer := time.AfterFunc(10*time.Second, func() { _ = sb.Kill() })
		defer timer.Stop()
		// The master reads EIO once the last slave descriptor is closed.
		b, _ := io.ReadAll(master)
		ex, err := sb.Wait()
		if err != nil || ex.Code != 0 {
			t.Fatalf("exit %+v %v, output %q", ex, err, b)
		}
		var pid, pgrp, tpgid int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "pid=%d pgrp=%d tpgid=%d", &pid, &pgrp, &tpgid); err != nil {
			t.Fatalf("output %q: %v", b, err)
		}
		if pgrp != pid || tpgid != pid {
			t.Errorf("pid %d pgrp %d foreground %d: the subject is not the terminal's foreground group", pid, pgrp, tpgid)
		}
	})
	t.Run("pipes", func(t *testing.T) {
		_, out, stderr, _ := runBox(t, f.isoSpec(IsolationOS, "/bin/sh", "-c", groupsScript), 10*time.Second)
		var pid, pgrp, tpgid int
		if _, err := fmt.Sscanf(out, "pid=%d pgrp=%d tpgid=%d", &pid, &pgrp, &tpgid); err != nil {
			t.Fatalf("output %q (stderr %q): %v", out, stderr, err)
		}
		if pid == 1 || pgrp != 1 || tpgid != -1 {
			t.Errorf("pid %d pgrp %d foreground %d, want the subject in the reaper's group (1) without a terminal", pid, pgrp, tpgid)
		}
	})
}

// TestAfterDestroy: once destroyed, a sandbox's init pid (and a direct
// runner's process group) may name someone else's process, so Signal
// says ErrDestroyed and Kill touches nothing; Wait and Destroy repeat
// their results.
func TestAfterDestroy(t *testing.T) {
	f := directFixture(t)
	for _, iso := range bothIsolations {
		t.Run(string(iso), func(t *testing.T) {
			ex, _, _, sb := runBox(t, f.isoSpec(iso, "/bin/sh", "-c", "exit 3"), 5*time.Second)
			if err := sb.Destroy(); err != nil {
				t.Fatalf("destroy: %v", err)
			}
			if err := sb.Signal(unix.SIGTERM); !errors.Is(err, ErrDestroyed) {
				t.Errorf("Signal after Destroy: %v, want ErrDestroyed", err)
			}
			if err := sb.Kill(); err != nil {
				t.Errorf("Kill after Destroy: %v", err)
			}
			if again, err := sb.Wait(); err != nil || again != ex || again.Code != 3 {
				t.Errorf("Wait after Destroy: %+v %v, want %+v", again, err, ex)
			}
			if err := sb.Destroy(); err != nil {
				t.Errorf("second Destroy: %v", err)
			}
		})
	}
}
