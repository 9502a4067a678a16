package report_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/termverify/termverify-sandbox/internal/transcripttest"
	"github.com/termverify/termverify-sandbox/report"
	"github.com/termverify/termverify-sandbox/transcript"
)

// browser is headless Chromium with a fresh profile, every flag that
// stops it calling home, and a proxy of the test's own for every request
// it makes (loopback included), so a request the page makes is counted.
type browser struct {
	bin, profile string
	proxy        net.Listener
	requests     atomic.Int64
	idle         atomic.Int64 // connections closed with nothing sent
	mu           sync.Mutex
	seen         []string // each request's first line
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (scripts/setup.sh installs Debian's package): ", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback listener for the request counter: ", err)
	}
	b := &browser{bin: bin, profile: t.TempDir(), proxy: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 300)
			n, err := c.Read(buf)
			_ = c.Close()
			if n == 0 && errors.Is(err, io.EOF) {
				// Closed without a byte sent: a connection Chromium
				// opened ahead of need (it preconnects to its proxy)
				// and closed when it was killed. No request went over
				// it. One that stays silent until the deadline is
				// still counted: it cannot be told from a slow request.
				b.idle.Add(1)
				continue
			}
			line := strings.SplitN(string(buf[:n]), "\r\n", 2)[0]
			if chromiumOwn(line) {
				continue
			}
			b.requests.Add(1)
			b.mu.Lock()
			b.seen = append(b.seen, line)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return b
}

// reap kills what is left of this browser — helpers that left its
// process group, such as the crash handler — found by the profile
// directory on their command line, which is this test's alone, and waits
// until none is left.
func (b *browser) reap(t *testing.T) {
	t.Helper()
	mark := []byte("--user-data-dir=" + b.profile)
	for try := 0; ; try++ {
		left := 0
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
			if err != nil || !bytes.Contains(cmdline, mark) {
				continue
			}
			stat, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // a zombie, which its parent (or init) reaps
			}
			left++
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if left == 0 {
			return
		}
		if try == 100 {
			t.Errorf("%d Chromium processes outlived the test", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chromiumOwn reports whether a request line is one of Chromium's own
// calls home, which it makes whatever page it shows and which no flag of
// Debian's build stops: the component updater, the account service and
// the network time service. Everything else is the page's.
func chromiumOwn(line string) bool {
	f := strings.Fields(line)
	if len(f) < 2 {
		return false
	}
	host := f[1]
	if f[0] != "CONNECT" {
		host = strings.TrimPrefix(strings.TrimPrefix(host, "http://"), "https://")
		host, _, _ = strings.Cut(host, "/")
	}
	host, _, _ = strings.Cut(host, ":")
	switch host {
	case "update.googleapis.com", "accounts.google.com", "clients2.google.com":
		return true
	}
	return false
}

// run runs Chromium on the file with args, in a process group of its own
// that is killed afterwards, so none of its helpers survives the test.
func (b *browser) run(t *testing.T, file string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := []string{"--headless", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--user-data-dir=" + b.profile,
		"--no-pings", "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--disable-default-apps",
		"--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
		"--proxy-server=http://" + b.proxy.Addr().String(), "--proxy-bypass-list=<-loopback>"}
	if os.Geteuid() == 0 {
		all = append(all, "--no-sandbox") // Chromium refuses to run as root with its sandbox
	}
	all = append(append(all, args...), "file://"+file)
	cmd := exec.CommandContext(ctx, b.bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), "HOME="+b.profile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	b.reap(t)
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// TestBrowser loads the report of a real PTY run and of control/v1 runs
// from disk in headless Chromium: the DOM it builds shows every epoch's
// recorded screen lines, the receipts' tiers and the verdicts, the page's
// one script ran (its hash is in the policy), nothing was requested over
// the network, and it renders to a screenshot and prints to PDF.
func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	pty, vim := transcripttest.Load(t, ptyFixture), transcripttest.Load(t, vimFixture)
	page := filepath.Join(dir, "report.html")
	data := runs(t, report.Run{Name: "bash.jsonl", Transcript: pty}, report.Run{Name: "vim.jsonl", Transcript: vim},
		report.Run{Name: "failed.jsonl", Transcript: transcripttest.Load(t, "../examples/transcripts/failed.jsonl")},
		report.Run{Name: "hostile", Transcript: hostileRun(t)})
	must(t, os.WriteFile(page, data, 0o644))

	dom := string(b.run(t, page, "--dump-dom", "--virtual-time-budget=2000"))
	var frames [][]string
	for _, x := range []*transcript.Transcript{pty, vim} {
		for i := range x.Records {
			if o, ok := x.Records[i].Observation(); ok {
				frames = append(frames, o.Frame.Lines)
			}
		}
	}
	screens := screenRows(dom)
	if len(screens) < len(frames) {
		t.Fatalf("the DOM has %d screens, want at least the PTY runs' %d", len(screens), len(frames))
	}
	for i, want := range frames {
		if strings.Join(screens[i], "\n") != strings.Join(want, "\n") {
			t.Errorf("epoch %d in the browser:\n%s\nwant\n%s", i, strings.Join(screens[i], "\n"), strings.Join(want, "\n"))
		}
	}
	for _, want := range []string{`<span class="word">finished</span>`, "exit code 3", `<span class="word">failed</span>`, "adapter-runtime-failed",
		`<span class="tier t-os">■ os</span>`, `<span class="tier t-delivered">▲ delivered</span>`, `&lt;script&gt;alert(1)&lt;/script&gt;`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM lacks %s", want)
		}
	}
	// The script counted the page's epochs: it ran, under the policy.
	if want := `data-stops="` + itoa(strings.Count(string(data), " data-stop>")) + `"`; !strings.Contains(dom, want) {
		t.Errorf("the page's script did not run (want %s on body)", want)
	}
	checkNoMarkup(t, strings.Replace(dom, ` data-stops=`, ` data-x=`, 1), hostile)

	shot := filepath.Join(dir, "shot.png")
	b.run(t, page, "--screenshot="+shot, "--window-size=1100,1600")
	if png, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10000 {
		t.Errorf("no screenshot (%v, %d bytes)", err, len(png))
	}
	pdf := filepath.Join(dir, "print.pdf")
	b.run(t, page, "--print-to-pdf="+pdf, "--no-pdf-header-footer")
	if doc, err := os.ReadFile(pdf); err != nil || !bytes.HasPrefix(doc, []byte("%PDF")) {
		t.Errorf("printing gave no PDF (%v)", err)
	}
	if n := b.requests.Load(); n != 0 {
		b.mu.Lock()
		t.Errorf("the page made %d network requests: %q", n, b.seen)
		b.mu.Unlock()
	}
	if n := b.idle.Load(); n > 0 {
		t.Logf("%d connections to the proxy closed with nothing sent (Chromium's preconnects)", n)
	}
}

// TestBrowserCountsRequests: the request counter works. A page that
// loads an image from the network, without our policy, is counted: so a
// count of zero above means none was made.
func TestBrowserCountsRequests(t *testing.T) {
	b := newBrowser(t)
	page := filepath.Join(t.TempDir(), "leak.html")
	must(t, os.WriteFile(page, []byte(`<!DOCTYPE html><img src="http://report-test.invalid/x.png"><p>x</p>`), 0o644))
	b.run(t, page, "--dump-dom", "--virtual-time-budget=2000")
	if b.requests.Load() == 0 {
		t.Error("a page loading an image from the network made no request the counter saw")
	}
}

func itoa(n int) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(buf[i:])
		}
	}
}

// TestBrowserPolicyBlocks: the page's policy is a second wall. Markup
// that got into a report anyway (here put in by hand after the policy)
// loads nothing and runs nothing.
func TestBrowserPolicyBlocks(t *testing.T) {
	b := newBrowser(t)
	data := string(runs(t, report.Run{Name: "pty", Transcript: transcripttest.Load(t, ptyFixture)}))
	i := strings.Index(data, "<title>")
	injected := data[:i] + `<img src="http://report-test.invalid/leak.png"><script>document.title="ran"</script>` + data[i:]
	page := filepath.Join(t.TempDir(), "injected.html")
	must(t, os.WriteFile(page, []byte(injected), 0o644))
	dom := string(b.run(t, page, "--dump-dom", "--virtual-time-budget=2000"))
	if n := b.requests.Load(); n != 0 {
		t.Errorf("an injected image was requested despite the policy: %q", b.seen)
	}
	if strings.Contains(dom, "<title>ran</title>") {
		t.Error("an injected inline script ran despite the policy")
	}
}

// TestBrowserKeys: the keys move between epochs in a real browser. The
// test adds a script of its own (allowed by its hash, as the page's is)
// that presses keys and writes where each took the page.
func TestBrowserKeys(t *testing.T) {
	b := newBrowser(t)
	data := string(runs(t, report.Run{Name: "pty", Transcript: transcripttest.Load(t, ptyFixture)}))
	press := `window.addEventListener("load",function(){var out=[];` +
		`["ArrowRight","ArrowRight","j","ArrowLeft","End","k","Home"].forEach(function(k){` +
		`document.dispatchEvent(new KeyboardEvent("keydown",{key:k}));out.push(location.hash);});` +
		`document.body.setAttribute("data-nav",out.join(" "));});`
	sum := sha256.Sum256([]byte(press))
	const src = "script-src &#39;"
	if !strings.Contains(data, src) {
		t.Fatal("no script-src in the page's policy")
	}
	data = strings.Replace(data, src, "script-src &#39;sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"&#39; &#39;", 1)
	data = strings.Replace(data, "</body>", "<script>"+press+"</script>\n</body>", 1)
	page := filepath.Join(t.TempDir(), "keys.html")
	must(t, os.WriteFile(page, []byte(data), 0o644))
	dom := string(b.run(t, page, "--dump-dom", "--virtual-time-budget=2000"))
	want := `data-nav="#run-1-epoch-0 #run-1-epoch-1 #run-1-epoch-2 #run-1-epoch-1 #run-1-epoch-6 #run-1-epoch-5 #run-1-epoch-0"`
	if !strings.Contains(dom, want) {
		i := strings.Index(dom, "data-nav")
		t.Errorf("keys took the page to %s, want %s", dom[max(i, 0):min(max(i, 0)+200, len(dom))], want)
	}
}
