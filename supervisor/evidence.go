package supervisor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// EvidenceFormat names the evidence file's format.
const EvidenceFormat = "termverify-sandbox.evidence/v1"

// maxStderrEvidence bounds the subject stderr copied into the evidence.
const maxStderrEvidence = 64 << 10

// Evidence is the --evidence file: the volatile host facts an auditor
// needs to see the mechanism at work, kept out of the transcript so that
// transcripts stay byte-for-byte replay-comparable. Times are wall-clock,
// ids and paths are this host's.
type Evidence struct {
	Format     string `json:"format"`
	RunID      string `json:"run_id"`
	Transcript string `json:"transcript,omitempty"`
	Outcome    string `json:"outcome,omitempty"` // the terminal record's kind

	Isolation string `json:"isolation"`         // requested: os, auto, none
	Backend   string `json:"backend,omitempty"` // what ran: os or none
	// Downgrades lists what --isolation auto took below os, and why.
	Downgrades []string `json:"downgrades,omitempty"`
	// StartErrors are the full errors of sandbox starts that failed
	// (host paths included), for a downgrade or refusal.
	StartErrors []string `json:"start_errors,omitempty"`

	SupervisorPID int       `json:"supervisor_pid"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	WallMicros    int64     `json:"wall_us"`
	// Phases are wall-clock durations of the run's steps, in order.
	Phases []Phase `json:"phases"`

	Sandbox *sandbox.Evidence `json:"sandbox,omitempty"` // namespaces, cgroups, host root, pids, peak memory
	Applied *sandbox.Applied  `json:"applied,omitempty"` // every mechanism and its check
	Exit    *sandbox.Exit     `json:"exit,omitempty"`    // the init's report, Killed/OOM included

	Stderr *StderrEvidence `json:"stderr,omitempty"`

	SupervisorMaxRSSBytes int64 `json:"supervisor_max_rss_bytes"`
	// SupervisorCPUMicros is the supervisor's own CPU time (user+system,
	// children excluded) for the whole run.
	SupervisorCPUMicros int64    `json:"supervisor_cpu_us"`
	SweptStale          []string `json:"swept_stale,omitempty"` // dead supervisors' sandboxes removed first
	SweepError          string   `json:"sweep_error,omitempty"` // what that sweep could not remove
	TeardownError       string   `json:"teardown_error,omitempty"`
}

// Phase is one step of the run and its wall-clock duration.
type Phase struct {
	Name   string `json:"name"`
	Micros int64  `json:"us"`
}

// StderrEvidence is the head of what the subject wrote to stderr.
type StderrEvidence struct {
	Path      string `json:"path,omitempty"` // --stderr file, if any
	Bytes     int64  `json:"bytes"`
	Text      string `json:"text"` // the first 64 KiB, invalid UTF-8 replaced
	Truncated bool   `json:"truncated,omitempty"`
}

type evidence struct {
	Evidence
	start, last time.Time
	sandboxes   []string
}

func newEvidence(req *Request) *evidence {
	now := time.Now()
	return &evidence{Evidence: Evidence{
		Format: EvidenceFormat, RunID: req.RunID, Transcript: req.TranscriptPath,
		Isolation: string(req.Isolation), SupervisorPID: os.Getpid(), StartedAt: now.UTC(), Phases: []Phase{},
	}, start: now, last: now}
}

// mark closes the current phase under name.
func (e *evidence) mark(name string) {
	now := time.Now()
	e.Phases = append(e.Phases, Phase{Name: name, Micros: now.Sub(e.last).Microseconds()})
	e.last = now
}

func (e *evidence) noteStart(backend sandbox.Isolation, box *sandbox.Sandbox, err error) {
	e.Backend = string(backend)
	if err != nil {
		e.StartErrors = append(e.StartErrors, fmt.Sprintf("%s: %v", backend, err))
	}
	e.mark("start-" + string(backend))
}

func (e *evidence) noteSandbox(box *sandbox.Sandbox) {
	if box == nil {
		return
	}
	sev := box.Evidence()
	applied := box.Applied()
	e.Sandbox, e.Applied = &sev, &applied
	if ex, err := box.Wait(); err == nil {
		e.Exit = &ex
	}
}

func (e *evidence) noteStderr(f *os.File, path string) {
	if f == nil {
		return
	}
	st := &StderrEvidence{Path: path}
	if fi, err := f.Stat(); err == nil {
		st.Bytes = fi.Size()
	}
	buf := make([]byte, maxStderrEvidence)
	n, _ := io.ReadFull(io.NewSectionReader(f, 0, maxStderrEvidence), buf)
	st.Text = string([]rune(string(buf[:n]))) // invalid UTF-8 becomes U+FFFD
	st.Truncated = st.Bytes > int64(n)
	e.Stderr = st
}

func (e *evidence) finish(outcome string) {
	now := time.Now()
	e.Outcome = outcome
	e.FinishedAt = now.UTC()
	e.WallMicros = now.Sub(e.start).Microseconds()
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		e.SupervisorMaxRSSBytes = ru.Maxrss * 1024
		e.SupervisorCPUMicros = ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
	}
}

func (e *evidence) write(path string) error {
	data, err := json.MarshalIndent(&e.Evidence, "", "  ")
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	return writeFileAtomic(path, append(data, '\n'))
}
