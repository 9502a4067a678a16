package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/input"
	"github.com/termverify/termverify-sandbox/internal/canon"
	"github.com/termverify/termverify-sandbox/internal/safeout"
	"github.com/termverify/termverify-sandbox/receipts"
)

// victimText is what a host file the attacker aims at holds before a run.
const victimText = "root:x:0:0:root:/root:/bin/bash\n"

// TestStderrHostileTargets is the attack on --stderr: an earlier
// subject (or a local user) plants the --stderr path so that the supervisor,
// as root, opens a host file (or a device) and hands it to the next subject
// as its fd 2. Every such path is refused before anything starts, and the
// host file is untouched; a plain regular file is truncated and written.
func TestStderrHostileTargets(t *testing.T) {
	needSandbox(t)
	cases := []struct {
		name string
		// plant prepares dir (the mapped, subject-writable place) and
		// outside (a host place the subject must never reach) and returns
		// the --stderr path.
		plant  func(t *testing.T, dir, outside string) string
		refuse bool
	}{
		{"symlink to a host file", func(t *testing.T, dir, outside string) string {
			p := filepath.Join(dir, "stderr.log")
			mustSucceed(t, os.Symlink(filepath.Join(outside, "passwd"), p))
			return p
		}, true},
		{"parent directory is a symlink", func(t *testing.T, dir, outside string) string {
			mustSucceed(t, os.Symlink(outside, filepath.Join(dir, "logs")))
			return filepath.Join(dir, "logs", "stderr.log")
		}, true},
		{"hard link to a host file", func(t *testing.T, dir, outside string) string {
			p := filepath.Join(dir, "stderr.log")
			mustSucceed(t, os.Link(filepath.Join(outside, "passwd"), p))
			return p
		}, true},
		{"fifo", func(t *testing.T, dir, outside string) string {
			p := filepath.Join(dir, "fifo")
			mustSucceed(t, unix.Mkfifo(p, 0o666))
			return p
		}, true},
		{"character device", func(t *testing.T, dir, outside string) string {
			p := filepath.Join(dir, "null")
			if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
				t.Skipf("cannot make a device node here: %v", err)
			}
			return p
		}, true},
		{"existing regular file", func(t *testing.T, dir, outside string) string {
			p := filepath.Join(dir, "stderr.log")
			mustSucceed(t, os.WriteFile(p, []byte("old contents of the file\n"), 0o644))
			return p
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			dir, outside := filepath.Join(base, "mapped"), filepath.Join(base, "host")
			mustSucceed(t, os.Mkdir(dir, 0o777))
			mustSucceed(t, os.Mkdir(outside, 0o700))
			victim := filepath.Join(outside, "passwd")
			mustSucceed(t, os.WriteFile(victim, []byte(victimText), 0o644))
			path := tc.plant(t, dir, outside)

			req := exampleRequest(t, "stderr")
			req.StderrPath = path
			req.TranscriptPath = filepath.Join(base, "transcript.jsonl")
			res, err := Run(context.Background(), req)
			noteSandboxes(res.Sandboxes)

			if b, _ := os.ReadFile(victim); string(b) != victimText {
				t.Errorf("the host file was written: %q", b)
			}
			var st unix.Stat_t
			if err := unix.Stat(victim, &st); err == nil && st.Uid != uint32(os.Geteuid()) {
				t.Errorf("the host file was chowned to %d", st.Uid)
			}
			if _, err := os.Lstat(filepath.Join(outside, "stderr.log")); err == nil {
				t.Errorf("a file was created outside, through the symlinked directory")
			}
			if !tc.refuse {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				b, _ := os.ReadFile(path)
				if !bytes.Contains(b, []byte("echo-subject: stderr line 0")) || bytes.Contains(b, []byte("old contents")) {
					t.Errorf("stderr file %q: want the subject's stderr only", b)
				}
				return
			}
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "stderr") {
				t.Fatalf("Run: %v (outcome %q), want a usage error naming the stderr file", err, res.Outcome)
			}
			if _, err := os.Stat(req.TranscriptPath); err == nil {
				t.Errorf("a transcript was written for a refused run")
			}
		})
	}
}

// TestSubjectStderrIsPipe: whatever --stderr and --evidence say, the
// subject's fd 2 is a pipe of the supervisor's, never a host file: the
// subject reads its own fd 2's link and writes it to that stderr.
func TestSubjectStderrIsPipe(t *testing.T) {
	needSandbox(t)
	cases := []struct {
		name      string
		isolation receipts.Isolation
		file      bool
	}{
		{"os, --stderr", receipts.IsolationAuto, true},
		{"os, evidence only", receipts.IsolationAuto, false},
		{"none, --stderr", receipts.IsolationNone, true},
		{"none, evidence only", receipts.IsolationNone, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			req := exampleRequest(t)
			req.Isolation = tc.isolation
			req.Args = []string{"/bin/sh", "-c", "printf 'fd2=%s\\n' \"$(readlink /proc/self/fd/2)\" >&2; exec ./echo-subject", leakMarker}
			req.EvidencePath = filepath.Join(dir, "evidence.json")
			if tc.file {
				req.StderrPath = filepath.Join(dir, "stderr.txt")
			}
			o := runCase(t, req)
			if !o.res.Succeeded() {
				t.Fatalf("result %+v", o.res)
			}
			ev := readEvidence(t, req.EvidencePath)
			seen := []string{ev.Stderr.Text}
			if tc.file {
				b, err := os.ReadFile(req.StderrPath)
				mustSucceed(t, err)
				seen = append(seen, string(b))
			}
			for _, s := range seen {
				if !regexp.MustCompile(`(?m)^fd2=pipe:\[\d+\]$`).MatchString(s) {
					t.Errorf("the subject's fd 2 is not a pipe: %q", s)
				}
			}
		})
	}
}

// TestStderrBounded: a subject writing 5 MiB to stderr under a 1 MiB cap
// gives a 1 MiB file (the first MiB, nothing appended), and the evidence
// keeps the head and the tail and says how much was dropped from each.
func TestStderrBounded(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	const body, limit = 5 << 20, 1 << 20
	dir := t.TempDir()
	req := exampleRequest(t)
	req.Args = []string{"/bin/sh", "-c",
		"printf HEADMARK >&2; head -c " + strconv.Itoa(body) + " /dev/zero | tr '\\000' x >&2; printf TAILMARK >&2; exec ./echo-subject",
		leakMarker}
	req.StderrPath, req.EvidencePath = filepath.Join(dir, "stderr.txt"), filepath.Join(dir, "evidence.json")
	req.StderrLimit = limit
	o := runCase(t, req)
	if !o.res.Succeeded() {
		t.Fatalf("result %+v", o.res)
	}
	const total = body + 16
	b, err := os.ReadFile(req.StderrPath)
	mustSucceed(t, err)
	if len(b) != limit || !bytes.HasPrefix(b, []byte("HEADMARKxxx")) || len(bytes.Trim(b[8:], "x")) != 0 {
		t.Errorf("stderr file: %d bytes starting %q, want the first %d bytes of the stream", len(b), b[:min(len(b), 16)], limit)
	}
	s := readEvidence(t, req.EvidencePath).Stderr
	if s == nil {
		t.Fatal("no stderr in the evidence")
	}
	kept := int64(len(s.Text) + len(s.Tail))
	switch {
	case s.Bytes != total:
		t.Errorf("evidence bytes %d, want %d", s.Bytes, total)
	case !strings.HasPrefix(s.Text, "HEADMARKxxx") || !strings.HasSuffix(s.Tail, "xxxTAILMARK"):
		t.Errorf("capture head %q… tail …%q: want both ends of the stream", s.Text[:min(len(s.Text), 16)], s.Tail[max(0, len(s.Tail)-16):])
	case kept != 2*stderrCaptureHalf || s.Dropped != total-kept || !s.Truncated:
		t.Errorf("capture kept %d, dropped %d (truncated %v): want %d kept, %d dropped", kept, s.Dropped, s.Truncated, 2*stderrCaptureHalf, total-2*stderrCaptureHalf)
	case s.FileBytes != limit || s.FileLimit != limit || s.FileDropped != total-limit:
		t.Errorf("file bytes %d, limit %d, dropped %d: want %d, %d, %d", s.FileBytes, s.FileLimit, s.FileDropped, limit, limit, total-limit)
	case !strings.Contains(s.Note, strconv.Itoa(total-2*stderrCaptureHalf)+" bytes dropped") ||
		!strings.Contains(s.Note, strconv.Itoa(total-limit)+" bytes dropped"):
		t.Errorf("evidence note %q: want both drops counted", s.Note)
	}
}

// TestOutputDirSwapped is the attack on the output directories: once the run has
// begun, the subject (or a local user) replaces the transcript's and the
// evidence's directory by a symlink to another directory. Both files land
// in the directory opened at the start, never in the symlink's target.
// A directory path that already holds a symlink is refused up front.
func TestOutputDirSwapped(t *testing.T) {
	needSandbox(t)
	t.Run("swapped during the run", func(t *testing.T) {
		t.Parallel()
		base := t.TempDir()
		out, orig, target := filepath.Join(base, "out"), filepath.Join(base, "orig"), filepath.Join(base, "root-only")
		mustSucceed(t, os.Mkdir(out, 0o755))
		mustSucceed(t, os.Mkdir(target, 0o700))
		req := exampleRequest(t)
		req.TranscriptPath = filepath.Join(out, "transcript.jsonl")
		req.EvidencePath = filepath.Join(out, "evidence.json")
		swapped := false
		req.hooks.afterOutputsOpened = func() {
			mustSucceed(t, os.Rename(out, orig))
			mustSucceed(t, os.Symlink(target, out))
			swapped = true
		}
		res, err := Run(context.Background(), req)
		noteSandboxes(res.Sandboxes)
		if !swapped {
			t.Fatal("the hook did not run")
		}
		if ents, _ := os.ReadDir(target); len(ents) != 0 {
			t.Errorf("files written into the symlink's target: %v", entryNames(ents))
		}
		if err != nil {
			t.Logf("Run failed cleanly: %v", err)
			return
		}
		ents, _ := os.ReadDir(orig)
		if got := strings.Join(entryNames(ents), " "); got != "evidence.json transcript.jsonl" {
			t.Errorf("the opened directory holds %q, want the evidence and the transcript", got)
		}
	})
	t.Run("symlink in the path", func(t *testing.T) {
		t.Parallel()
		for _, which := range []string{"transcript", "evidence"} {
			base := t.TempDir()
			real := filepath.Join(base, "real")
			mustSucceed(t, os.Mkdir(real, 0o755))
			mustSucceed(t, os.Symlink(real, filepath.Join(base, "link")))
			req := exampleRequest(t)
			req.TranscriptPath = filepath.Join(base, "transcript.jsonl")
			if which == "transcript" {
				req.TranscriptPath = filepath.Join(base, "link", "transcript.jsonl")
			} else {
				req.EvidencePath = filepath.Join(base, "link", "evidence.json")
			}
			started := false
			req.hooks.afterOutputsOpened = func() { started = true }
			res, err := Run(context.Background(), req)
			noteSandboxes(res.Sandboxes)
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "symbolic link") || started {
				t.Errorf("%s through a symlinked directory: Run: %v (started %v), want a usage error before the start", which, err, started)
			}
			if ents, _ := os.ReadDir(real); len(ents) != 0 {
				t.Errorf("%s: files written through the symlink: %v", which, entryNames(ents))
			}
		}
	})
}

// countingReader returns an endless stream of its pattern and counts
// what was read from it.
type countingReader struct {
	pattern []byte
	n       int64
	stop    int64 // EOF after this many bytes (0: never)
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.stop > 0 && r.n >= r.stop {
		return 0, io.EOF
	}
	if r.stop > 0 {
		p = p[:min(int64(len(p)), r.stop-r.n)]
	}
	for i := range p {
		p[i] = r.pattern[(r.n+int64(i))%int64(len(r.pattern))]
	}
	r.n += int64(len(p))
	return len(p), nil
}

// TestInputFileLimits: an oversized request or input script is refused by
// its limit while it is read, not after it was read whole, so a huge file
// cannot exhaust the supervisor's memory.
func TestInputFileLimits(t *testing.T) {
	t.Run("input script: endless line", func(t *testing.T) {
		// A bounded stream, so that code without the limit ends too.
		r := &countingReader{pattern: []byte("x"), stop: 3 * canon.MaxLineBytes}
		_, err := ParseInputs(r, ModeControl)
		se, ok := errors.AsType[*input.Error](err)
		if !ok || se.Line != 1 || se.Rule != canon.RuleLineBytes || !strings.Contains(err.Error(), strconv.Itoa(canon.MaxLineBytes)) {
			t.Errorf("ParseInputs: %v, want line 1 refused by the %d-byte line limit", err, canon.MaxLineBytes)
		}
		if r.n > canon.MaxLineBytes+1<<20 {
			t.Errorf("read %d bytes of a line over %d", r.n, canon.MaxLineBytes)
		}
	})
	t.Run("input script: endless lines", func(t *testing.T) {
		r := &countingReader{pattern: line0, stop: canon.MaxTranscriptBytes + 1<<20}
		_, err := ParseInputs(r, ModeControl)
		se, ok := errors.AsType[*input.Error](err)
		if !ok || se.Rule != input.RuleScriptBytes || !strings.Contains(err.Error(), strconv.Itoa(canon.MaxTranscriptBytes)) {
			t.Errorf("ParseInputs: %v, want the script refused by the %d-byte limit", err, canon.MaxTranscriptBytes)
		}
		if r.n > canon.MaxTranscriptBytes+1 {
			t.Errorf("read %d bytes, limit %d", r.n, canon.MaxTranscriptBytes)
		}
	})
	t.Run("request file just over the limit", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "request.json")
		data := append([]byte(`{"run_id": "r"`), bytes.Repeat([]byte(" "), canon.MaxLineBytes)...)
		mustSucceed(t, os.WriteFile(path, data, 0o644))
		_, err := ReadRunFile(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), strconv.Itoa(canon.MaxLineBytes)) {
			t.Errorf("ReadRunFile: %v, want an error naming the file and the %d-byte limit", err, canon.MaxLineBytes)
		}
	})
}

func readEvidence(t *testing.T, path string) Evidence {
	t.Helper()
	data, err := os.ReadFile(path)
	mustSucceed(t, err)
	var ev Evidence
	mustSucceed(t, json.Unmarshal(data, &ev))
	return ev
}

func entryNames(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func mustSucceed(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadersStopAtTheLimit: the request reader, fed an endless stream,
// reads at most its limit and one byte, and names the file and the limit;
// --inputs-from refuses a transcript over its limit the same way (a sparse
// file: no disk is filled).
func TestReadersStopAtTheLimit(t *testing.T) {
	t.Run("request: endless stream", func(t *testing.T) {
		r := &countingReader{pattern: []byte(" ")}
		_, err := readRunFile(r, "endless.json")
		var se *SizeError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "endless.json") || !strings.Contains(err.Error(), strconv.Itoa(MaxRequestBytes)) {
			t.Errorf("readRunFile: %v, want a *SizeError naming the file and %d", err, MaxRequestBytes)
		}
		if r.n != MaxRequestBytes+1 {
			t.Errorf("read %d bytes, want exactly %d", r.n, MaxRequestBytes+1)
		}
	})
	t.Run("exactly the limit is read", func(t *testing.T) {
		r := &countingReader{pattern: []byte("ab"), stop: 1000}
		data, err := readAtMost(r, 1000)
		if err != nil || len(data) != 1000 {
			t.Errorf("readAtMost: %d bytes, %v", len(data), err)
		}
		if _, err := readAtMost(&countingReader{pattern: []byte("ab"), stop: 1001}, 1000); err == nil {
			t.Error("1001 bytes accepted under a 1000-byte limit")
		}
	})
	t.Run("input script file: a long line names the file and the line", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "inputs.jsonl")
		long := append([]byte(`{"kind":"input.text","payload":{"text":"`), bytes.Repeat([]byte("a"), canon.MaxLineBytes)...)
		mustSucceed(t, os.WriteFile(path, append(append([]byte(nil), line0...), long...), 0o644))
		_, err := ReadInputsFile(path, ModeControl)
		se, ok := errors.AsType[*input.Error](err)
		if !ok || se.Line != 2 || se.Rule != canon.RuleLineBytes || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadInputsFile: %v, want line 2 of %s refused", err, path)
		}
	})
}

var line0 = []byte(`{"kind":"input.text","payload":{"text":"a"}}` + "\n")

// TestOpenStderrFile: what the --stderr opener refuses without opening it
// for writing, and what it accepts.
func TestOpenStderrFile(t *testing.T) {
	cases := []struct {
		name   string
		make   func(t *testing.T, p string)
		refuse string // a word of the error; "" accepts
	}{
		{"absent: created", func(t *testing.T, p string) {}, ""},
		{"regular: truncated", func(t *testing.T, p string) { mustSucceed(t, os.WriteFile(p, []byte("old"), 0o600)) }, ""},
		{"symlink to a directory", func(t *testing.T, p string) { mustSucceed(t, os.Symlink(t.TempDir(), p)) }, "symbolic link"},
		{"dangling symlink", func(t *testing.T, p string) { mustSucceed(t, os.Symlink("/nonexistent-target", p)) }, "symbolic link"},
		{"directory", func(t *testing.T, p string) { mustSucceed(t, os.Mkdir(p, 0o755)) }, "directory"},
		{"set-user-id file", func(t *testing.T, p string) {
			mustSucceed(t, os.WriteFile(p, nil, 0o755))
			mustSucceed(t, unix.Chmod(p, 0o4755))
		}, "set-user-id"},
		{"socket", func(t *testing.T, p string) {
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			mustSucceed(t, err)
			t.Cleanup(func() { unix.Close(fd) })
			mustSucceed(t, unix.Bind(fd, &unix.SockaddrUnix{Name: p}))
		}, "socket"},
		{"block device", func(t *testing.T, p string) {
			// A loop device minor that does not exist: nothing could be
			// written even if it were opened.
			if err := unix.Mknod(p, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 250))); err != nil {
				t.Skipf("cannot make a device node here: %v", err)
			}
		}, "block device"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "stderr.log")
			tc.make(t, p)
			f, err := openStderrFile(p)
			if tc.refuse != "" {
				if err == nil {
					f.Close()
					t.Fatalf("accepted")
				}
				if !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), p) {
					t.Errorf("error %q: want it to name the path and say %q", err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var st unix.Stat_t
			mustSucceed(t, unix.Fstat(int(f.Fd()), &st))
			if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != 0 {
				t.Errorf("opened mode %o size %d, want an empty regular file", st.Mode, st.Size)
			}
			if fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); fl&unix.O_ACCMODE != unix.O_WRONLY {
				t.Errorf("flags %#x: want write-only", fl)
			}
		})
	}
	t.Run("relative path through a symlinked directory", func(t *testing.T) {
		dir := t.TempDir()
		mustSucceed(t, os.Symlink(t.TempDir(), filepath.Join(dir, "link")))
		t.Chdir(dir)
		if f, err := openStderrFile("link/stderr.log"); err == nil {
			f.Close()
			t.Fatal("accepted")
		} else if !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("error %q", err)
		}
	})
}

// openNamedTemp is openOutput on the named temporary file that safeout
// falls back to where the file system has no O_TMPFILE.
func openNamedTemp(dst *outDir) (*output, error) {
	f, err := dst.dir.CreateNamedTemp(dst.base, 0o644)
	if err != nil {
		return nil, err
	}
	return newOutput(dst, f), nil
}

// TestNamedTempReplaced: where O_TMPFILE is missing, the named temporary
// file lives in the output directory for the run; a subject that replaces
// that name (when the directory is in its mapped root) does not get its
// file committed as the transcript.
func TestNamedTempReplaced(t *testing.T) {
	dir := t.TempDir()
	dst, err := openOutDir("transcript", filepath.Join(dir, "transcript.jsonl"))
	mustSucceed(t, err)
	defer dst.close()
	o, err := openNamedTemp(dst)
	mustSucceed(t, err)
	defer o.discard()
	_, _ = o.Write([]byte("ours\n"))
	mustSucceed(t, os.Remove(filepath.Join(dir, o.file.Temp())))
	mustSucceed(t, os.WriteFile(filepath.Join(dir, o.file.Temp()), []byte("forged\n"), 0o644))
	if err := o.commit(); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("commit: %v, want the replacement refused", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "transcript.jsonl")); err == nil {
		t.Error("a transcript was committed")
	}
	// Without the swap it commits, and leaves no temporary name.
	o2, err := openNamedTemp(dst)
	mustSucceed(t, err)
	_, _ = o2.Write([]byte("ours\n"))
	mustSucceed(t, o2.commit())
	if b, _ := os.ReadFile(filepath.Join(dir, "transcript.jsonl")); string(b) != "ours\n" {
		t.Errorf("committed %q", b)
	}
}

// TestTailRing: the ring keeps exactly the last bytes, in order, whatever
// the sizes of the writes.
func TestTailRing(t *testing.T) {
	cases := []struct {
		name   string
		writes []int
	}{
		{"empty", nil},
		{"short", []int{3}},
		{"exactly full", []int{8}},
		{"wraps", []int{5, 5}},
		{"ends at the boundary", []int{3, 5, 8}},
		{"one big write", []int{3, 20}},
		{"many small", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	}
	for _, tc := range cases {
		r := tailRing{buf: make([]byte, 8)}
		var all []byte
		for _, n := range tc.writes {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte('a' + (len(all)+i)%26)
			}
			all = append(all, p...)
			r.write(p)
		}
		want := all[max(0, len(all)-8):]
		if got := r.bytes(); !bytes.Equal(got, want) {
			t.Errorf("%s: %q, want %q", tc.name, got, want)
		}
	}
}

// TestWalkNoSymlinks: the fallback for kernels without openat2 refuses a
// symlink at any component too, from "/" and from the working directory.
func TestWalkNoSymlinks(t *testing.T) {
	dir := t.TempDir()
	mustSucceed(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	mustSucceed(t, os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "link")))
	t.Chdir(dir)
	cases := []struct {
		path string
		ok   bool
	}{
		{filepath.Join(dir, "a", "b"), true},
		{"a/b", true},
		{".", true},
		{filepath.Join(dir, "link", "b"), false},
		{"link/b", false},
		{"a/b/../../link", false},
	}
	for _, tc := range cases {
		fd, err := safeout.WalkNoSymlinks(tc.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.path, err, tc.ok)
		}
	}
}

// TestEvidenceFailureLeavesNoTranscript: Run's error means "no transcript
// of this run in place" (exit 2). The evidence is written before the
// transcript's commit, so an evidence file that cannot be written leaves
// no transcript behind (before, a valid transcript was committed and the
// run still exited 2).
func TestEvidenceFailureLeavesNoTranscript(t *testing.T) {
	needSandbox(t)
	base := t.TempDir()
	evDir := filepath.Join(base, "evidence")
	mustSucceed(t, os.Mkdir(evDir, 0o755))
	req := exampleRequest(t)
	req.TranscriptPath = filepath.Join(base, "transcript.jsonl")
	req.EvidencePath = filepath.Join(evDir, "evidence.json")
	// The opened evidence directory is deleted under the run: its
	// O_TMPFILE cannot be made any more.
	req.hooks.afterOutputsOpened = func() { mustSucceed(t, os.Remove(evDir)) }
	res, err := Run(context.Background(), req)
	noteSandboxes(res.Sandboxes)
	if err == nil || !strings.Contains(err.Error(), "evidence") {
		t.Fatalf("Run = %v, want an evidence error", err)
	}
	if _, serr := os.Stat(req.TranscriptPath); !os.IsNotExist(serr) {
		t.Errorf("a transcript is in place after Run failed: %v", serr)
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("left in the output directory: %v", entryNames(ents))
	}
}
