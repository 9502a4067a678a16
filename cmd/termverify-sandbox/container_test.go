package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/receipts"
	"github.com/termverify/termverify-sandbox/supervisor"
	"golang.org/x/sys/unix"
)

// The container matrix: the built binary inside Podman containers as CI
// runners start them, one container per row of docs/CONTAINERS.md's
// table. Every container runs with Debian's runc (crun refuses this
// machine's hybrid cgroup layout), --network none and --pull=never, on a
// --rootfs made from the host's own files (/usr bound read-only): no
// image, no registry.

// rootlessAccount is the unprivileged account the rootless-Podman rows
// run Podman as; scripts/setup.sh creates it with a subordinate id range.
const rootlessAccount = "tvs-rootless"

// podmanRow is one container set-up and the tiers it must give.
type podmanRow struct {
	name     string
	rootless bool     // Podman run as rootlessAccount
	flags    []string // podman run flags of the set-up
	// tier is what filesystem and network get with --isolation auto,
	// and what probe must predict; --isolation none always gives
	// delivered.
	tier receipts.Tier
}

var podmanRows = []podmanRow{
	{"default", false, nil, receipts.Delivered},
	{"cap-add SYS_ADMIN", false, []string{"--cap-add", "SYS_ADMIN"}, receipts.Delivered},
	{"cap-add SYS_ADMIN,NET_ADMIN,SYS_PTRACE", false, []string{"--cap-add", "SYS_ADMIN,NET_ADMIN,SYS_PTRACE"}, receipts.OS},
	{"privileged", false, []string{"--privileged"}, receipts.OS},
	{"unmasked", false, []string{"--security-opt", "unmask=ALL"}, receipts.Delivered},
	{"unmasked, seccomp unconfined", false, []string{"--security-opt", "unmask=ALL", "--security-opt", "seccomp=unconfined"}, receipts.OS},
	{"rootless", true, nil, receipts.Delivered},
	{"rootless, unmasked, seccomp unconfined", true, []string{"--security-opt", "unmask=ALL", "--security-opt", "seccomp=unconfined"}, receipts.OS},
}

// podmanEnv is what the matrix needs on the host: the tools, and the
// account for the rootless rows (nil when absent: those rows skip).
type podmanEnv struct {
	podman, runc string
	account      *user.User
	accountUID   int
}

// requirePodman skips t, saying why, unless Podman can run a container
// with Debian's runc here.
func requirePodman(t *testing.T) podmanEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the container matrix starts Podman containers")
	}
	if os.Geteuid() != 0 {
		t.Skip("the container matrix runs Podman as root (and as " + rootlessAccount + "); run the tests as root")
	}
	var env podmanEnv
	var err error
	if env.podman, err = exec.LookPath("podman"); err != nil {
		t.Skipf("podman not installed (scripts/setup.sh installs it): %v", err)
	}
	env.runc = "/usr/sbin/runc"
	if _, err := os.Stat(env.runc); err != nil {
		t.Skipf("Debian's runc not installed (scripts/setup.sh installs it): %v", err)
	}
	if u, err := user.Lookup(rootlessAccount); err == nil {
		env.account = u
		env.accountUID, _ = strconv.Atoi(u.Uid)
	}
	return env
}

// command is podman run as root, or as the rootless account with its own
// runtime directory (runuser sets no XDG_RUNTIME_DIR; the cgroupfs
// manager and file events need no systemd user session).
func (e podmanEnv) command(rootless bool, args ...string) *exec.Cmd {
	if !rootless {
		return exec.Command(e.podman, args...)
	}
	pre := []string{"-u", rootlessAccount, "--", "env", "HOME=" + e.account.HomeDir, "XDG_RUNTIME_DIR=" + e.rootlessRunDir(),
		"sh", "-c", `mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR" && exec "$@"`, "sh",
		e.podman, "--cgroup-manager=cgroupfs", "--events-backend=file"}
	return exec.Command("runuser", append(pre, args...)...)
}

// rootlessRunDir is the rootless account's Podman runtime directory.
func (e podmanEnv) rootlessRunDir() string {
	return fmt.Sprintf("/tmp/%s-run-%d", rootlessAccount, e.accountUID)
}

// cleanRootless ends what rootless Podman leaves running after its
// containers are gone, its pause process (catatonit, which holds the
// account's user namespace for the next podman call) and the conmon of a
// container that has exited, reaps them, and removes the runtime
// directory. The account exists only for these tests (scripts/setup.sh),
// so every process of it is ours to end.
//
// Killing is not enough: both were orphaned when podman exited, and an
// orphan's zombie waits for its new parent to reap it. Where PID 1 does
// not reap (CI's init does not), the zombies would stay for good, so the
// matrix makes the test process their subreaper (adoptOrphans) and reaps
// them here; a zombie of someone else's is reported, not waited for.
func (e podmanEnv) cleanRootless(t *testing.T) {
	t.Helper()
	_ = exec.Command("pkill", "-KILL", "-u", rootlessAccount).Run()
	var left []accountProcess
	for range 100 {
		left = left[:0]
		for _, p := range e.accountProcesses(t) {
			if p.zombie() && p.ppid == os.Getpid() {
				var ws unix.WaitStatus
				if _, err := unix.Wait4(p.pid, &ws, unix.WNOHANG, nil); err == nil {
					continue
				}
			}
			left = append(left, p)
		}
		if len(left) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range left {
		t.Errorf("process of %s left after the matrix: pid %d, parent %d, state %s, %s", rootlessAccount, p.pid, p.ppid, p.state, p.comm)
	}
	if err := os.RemoveAll(e.rootlessRunDir()); err != nil {
		t.Errorf("remove rootless Podman's runtime directory: %v", err)
	}
}

// adoptOrphans makes the test process the subreaper of what it starts
// until the test ends, so that the processes Podman orphans become its
// children and cleanRootless can reap them. Registered before
// cleanRootless, it is undone after it (cleanups run last-in first-out).
func adoptOrphans(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("become the subreaper of Podman's orphans: %v", err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// accountProcess is one process of the rootless account, from /proc.
type accountProcess struct {
	pid, ppid   int
	state, comm string
}

func (p accountProcess) zombie() bool { return p.state == "Z" }

// accountProcesses lists every process (zombies included) whose real uid
// is the rootless account's.
func (e podmanEnv) accountProcesses(t *testing.T) []accountProcess {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var ps []accountProcess
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue // gone since the listing
		}
		p := accountProcess{pid: pid}
		uid := -1
		for line := range strings.Lines(string(status)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			f := strings.Fields(v)
			if len(f) == 0 {
				continue
			}
			switch k {
			case "Name":
				p.comm = f[0]
			case "State":
				p.state = f[0]
			case "PPid":
				p.ppid, _ = strconv.Atoi(f[0])
			case "Uid":
				uid, _ = strconv.Atoi(f[0])
			}
		}
		if uid == e.accountUID {
			ps = append(ps, p)
		}
	}
	return ps
}

// runFlags are the flags every container of the matrix starts with.
func (e podmanEnv) runFlags() []string {
	// Podman's default ulimits exceed this VM's hard limits.
	return []string{"run", "--rm", "--runtime", e.runc, "--pull=never", "--network", "none",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"}
}

// hostRootfs makes a root file system of the host's files for
// --rootfs: the merged-/usr symlinks, empty mount points, the host's
// passwd and group; /usr is bound read-only when the container starts.
// owner owns it (the rootless account: its containers' root must own /).
func hostRootfs(t *testing.T, owner int) string {
	t.Helper()
	dir := publicTempDir(t, 0o755)
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"", "usr", "etc", "proc", "sys", "dev", "tmp", "run", "out", "app", "tvs", "root"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"passwd", "group"} {
		b, err := os.ReadFile("/etc/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chownTree(t, root, owner)
	return root
}

func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// matrixScript runs inside each container: probe, then the example with
// --isolation auto and with none, then cat under run --pty, every result
// in /out.
const matrixScript = `cd /out
/tvs/termverify-sandbox probe --json >probe.json 2>probe.err; echo $? >probe.status
for iso in auto none; do
	/tvs/termverify-sandbox run --isolation $iso --request /tvs/request.json --inputs /tvs/inputs.jsonl \
		--root app=/app --transcript $iso.jsonl --evidence $iso.evidence.json -- ./echo-subject >$iso.out 2>$iso.err
	echo $? >$iso.status
done
/tvs/termverify-sandbox run --pty --request /tvs/request.json --inputs /tvs/inputs.jsonl \
	--root app=/app --transcript pty.jsonl -- /bin/cat >pty.out 2>pty.err
echo $? >pty.status`

// TestContainerMatrix: in every row, the example run finishes with
// --isolation auto and with none, filesystem and network get the row's
// tier, probe predicts exactly that tier, and nothing of ours is left on
// the host (containers, cgroups).
func TestContainerMatrix(t *testing.T) {
	env := requirePodman(t)
	bin := buildBinary(t)
	subject := echoSubjectRoot(t)
	tvs := filepath.Dir(bin) // the request and inputs go beside the binary

	copyExample(t, tvs)
	rootfs := map[bool]string{false: hostRootfs(t, 0)}
	if env.account != nil {
		rootfs[true] = hostRootfs(t, env.accountUID)
		adoptOrphans(t)
		t.Cleanup(func() { env.cleanRootless(t) })
	}
	for _, row := range podmanRows {
		t.Run(row.name, func(t *testing.T) {
			if row.rootless && env.account == nil {
				t.Skipf("rootless Podman needs the account %s with a subordinate id range (scripts/setup.sh creates it)", rootlessAccount)
			}
			owner := 0
			if row.rootless {
				owner = env.accountUID
			}
			out := publicTempDir(t, 0o755)
			chownTree(t, out, owner)
			args := append(env.runFlags(), row.flags...)
			args = append(args,
				"-v", "/usr:/usr:ro",
				"-v", tvs+":/tvs:ro",
				"-v", subject+":/app:ro",
				"-v", out+":/out",
				"--rootfs", rootfs[row.rootless],
				"/bin/sh", "-c", matrixScript)
			cmd := env.command(row.rootless, args...)
			if b, err := cmd.CombinedOutput(); err != nil {
				if strings.Contains(string(b), "cannot") && strings.Contains(string(b), "newuidmap") {
					t.Skipf("rootless Podman cannot map ids here: %s", b)
				}
				t.Fatalf("podman %v: %v\n%s", args, err, b)
			}
			checkMatrixRow(t, bin, out, row)
		})
	}
	if leaks := containerSandboxCgroups(); len(leaks) > 0 {
		t.Errorf("cgroups of ours left on the host: %v", leaks)
	}
}

// checkMatrixRow reads what the container left in out.
func checkMatrixRow(t *testing.T, bin, out string, row podmanRow) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return strings.TrimSpace(string(b))
	}
	if s := read("probe.status"); s != "0" {
		t.Fatalf("probe exit %s: %s", s, read("probe.err"))
	}
	var probe supervisor.ProbeReport
	if err := json.Unmarshal([]byte(read("probe.json")), &probe); err != nil {
		t.Fatalf("probe --json: %v", err)
	}
	predicted := map[receipts.Constraint]receipts.Tier{}
	for _, c := range probe.Constraints {
		predicted[c.Constraint] = c.Tier
	}
	for _, iso := range []string{"auto", "none"} {
		want := row.tier
		if iso == "none" {
			want = receipts.Delivered
		}
		if s := read(iso + ".status"); s != "0" {
			t.Errorf("run --isolation %s: exit %s, stderr:\n%s", iso, s, read(iso+".err"))
			continue
		}
		got := transcriptTiers(t, bin, filepath.Join(out, iso+".jsonl"))
		for _, c := range []receipts.Constraint{receipts.Filesystem, receipts.Network} {
			if got[c] != want {
				t.Errorf("run --isolation %s: %s %s, want %s; stderr:\n%s", iso, c, got[c], want, read(iso+".err"))
			}
			if iso == "auto" && predicted[c] != got[c] {
				t.Errorf("probe predicts %s %s, run --isolation auto got %s", c, predicted[c], got[c])
			}
		}
		// What was not given is said on the run's stderr.
		if iso == "auto" && want != receipts.OS && !strings.Contains(read("auto.err"), "running without namespaces") {
			t.Errorf("auto ran without namespaces but did not say why:\n%s", read("auto.err"))
		}
	}
	checkMatrixPTY(t, bin, filepath.Join(out, "pty.jsonl"), probe.PTYTerminal.Tier, read("pty.err"))
	t.Logf("probe: filesystem %s, network %s, terminal with --pty %s (rootless %v: %s)", predicted[receipts.Filesystem], predicted[receipts.Network],
		probe.PTYTerminal.Tier, probe.Rootless, probe.RootlessReason)
}

// checkMatrixPTY: run --pty gets the terminal tier probe predicted: os
// and a finished run (cat ends by the hangup), or, where the os sandbox
// cannot start, a refusal of the terminal and nothing run.
func checkMatrixPTY(t *testing.T, bin, path string, predicted receipts.Tier, stderr string) {
	t.Helper()
	stdout, errOut, status := run(t, exec.Command(bin, "receipts", "--json", path))
	if status != 0 && status != exitFailed {
		t.Fatalf("receipts %s: exit %d: %s\nrun's stderr:\n%s", path, status, errOut, stderr)
	}
	var rep struct {
		Outcome  string `json:"outcome"`
		Receipts []struct {
			Constraint receipts.Constraint `json:"constraint"`
			Status     string              `json:"status"`
			Tier       receipts.Tier       `json:"tier"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	got := receipts.None
	for _, r := range rep.Receipts {
		if r.Constraint == receipts.Terminal && r.Status == "applied" {
			got = r.Tier
		}
	}
	wantOutcome := "run.finished"
	if predicted != receipts.OS {
		wantOutcome = "run.unsupported"
	}
	if got != predicted || rep.Outcome != wantOutcome {
		t.Errorf("run --pty: terminal %s, %s; probe predicted %s (want %s)\nstderr:\n%s", got, rep.Outcome, predicted, wantOutcome, stderr)
	}
}

// transcriptTiers reads the receipts of a transcript with our own
// receipts command, which validates it first.
func transcriptTiers(t *testing.T, bin, path string) map[receipts.Constraint]receipts.Tier {
	t.Helper()
	stdout, stderr, status := run(t, exec.Command(bin, "receipts", "--json", path))
	if status != 0 {
		t.Fatalf("receipts %s: exit %d: %s", path, status, stderr)
	}
	var rep struct {
		Outcome  string `json:"outcome"`
		Receipts []struct {
			Constraint receipts.Constraint `json:"constraint"`
			Tier       receipts.Tier       `json:"tier"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != "run.finished" {
		t.Errorf("%s: outcome %s, want run.finished", path, rep.Outcome)
	}
	tiers := map[receipts.Constraint]receipts.Tier{}
	for _, r := range rep.Receipts {
		tiers[r.Constraint] = r.Tier
	}
	return tiers
}

// containerSandboxCgroups lists every sandbox cgroup (tvs-* under a
// termverify-sandbox parent) below a Podman container's cgroup (libpod)
// in any hierarchy on the host: a privileged container's sandboxes make
// theirs in the host's cgroupfs. (Only there: other packages' tests run
// sandboxes of their own at the same time.)
func containerSandboxCgroups() []string {
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), "tvs-") && filepath.Base(filepath.Dir(p)) == "termverify-sandbox" && strings.Contains(p, "libpod") {
			found = append(found, p)
			return filepath.SkipDir
		}
		return nil
	})
	return found
}

// TestContainerImage builds the repository's Containerfile with
// podman build --pull=never on a base imported from the host's own files
// (no registry), and runs the example with the image's entrypoint: in a
// privileged container filesystem and network are os, in a default one
// the run still finishes, delivered, as probe in it predicts.
func TestContainerImage(t *testing.T) {
	env := requirePodman(t)
	bin := buildBinary(t)
	subject := echoSubjectRoot(t)
	tag := fmt.Sprintf("test-%d", os.Getpid())
	base := "localhost/tvs-hostbase:" + tag
	image := "localhost/termverify-sandbox:" + tag
	t.Cleanup(func() { _ = exec.Command(env.podman, "rmi", "--force", image, base).Run() })

	// The base: the --rootfs of the matrix, as an image.
	rootfs := hostRootfs(t, 0)
	imp := exec.Command("sh", "-c", `tar -C "$1" -cf - . | "$2" import - "$3"`, "sh", rootfs, env.podman, base)
	if b, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v\n%s", err, b)
	}
	// The build context holds the binary where the Containerfile wants it.
	ctx := publicTempDir(t, 0o755)
	if err := os.Mkdir(filepath.Join(ctx, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctx, "bin", "termverify-sandbox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	containerfile, err := filepath.Abs("../../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command(env.podman, "build", "--pull=never", "-q", "-f", containerfile, "--build-arg", "BASE="+base, "-t", image, ctx)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("podman build: %v\n%s", err, b)
	}
	tvs := publicTempDir(t, 0o755)
	copyExample(t, tvs)
	for _, c := range []struct {
		name  string
		flags []string
		want  receipts.Tier
	}{
		{"privileged", []string{"--privileged"}, receipts.OS},
		{"default", nil, receipts.Delivered},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := publicTempDir(t, 0o755)
			args := append(env.runFlags(), c.flags...)
			// No /usr from the host here: it would hide the binary in
			// /usr/local/bin, and the static subject needs none.
			args = append(args, "-v", tvs+":/tvs:ro", "-v", subject+":/app:ro", "-v", out+":/out", image,
				"run", "--request", "/tvs/request.json", "--inputs", "/tvs/inputs.jsonl", "--root", "app=/app",
				"--transcript", "/out/t.jsonl", "--", "./echo-subject")
			if b, err := exec.Command(env.podman, args...).CombinedOutput(); err != nil {
				t.Fatalf("podman %v: %v\n%s", args, err, b)
			}
			got := transcriptTiers(t, bin, filepath.Join(out, "t.jsonl"))
			if got[receipts.Filesystem] != c.want || got[receipts.Network] != c.want {
				t.Errorf("filesystem %s, network %s; want %s", got[receipts.Filesystem], got[receipts.Network], c.want)
			}
		})
	}
}

// copyExample copies the example request and inputs into dir, where every
// user can read them: the checkout may be in a directory the rootless
// account cannot enter.
func copyExample(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"request.json", "inputs.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
