package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termverify/termverify-sandbox/sandbox"
)

// EvidenceFormat names the evidence file's format.
const EvidenceFormat = "termverify-sandbox.evidence/v1"

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

// StderrEvidence is what the subject wrote to stderr: bounded, whatever
// it wrote. The capture keeps the head and the tail (stderrCaptureHalf,
// 32 KiB, each) and counts what lies between; the --stderr file holds the
// first StderrLimit bytes and counts the rest. Nothing is appended to the
// file to mark a cut: the cut is said here.
type StderrEvidence struct {
	Path  string `json:"path,omitempty"` // --stderr file, if any
	Bytes int64  `json:"bytes"`          // everything the subject wrote
	// Text is the head: the first 32 KiB, invalid UTF-8 replaced.
	Text string `json:"text"`
	// Tail is the last 32 KiB after the head (none of it repeated in Text).
	Tail string `json:"tail,omitempty"`
	// Dropped counts the bytes between Text and Tail, kept nowhere here.
	Dropped   int64 `json:"dropped,omitempty"`
	Truncated bool  `json:"truncated,omitempty"` // Dropped > 0
	// FileBytes are the bytes written to the --stderr file, FileLimit its
	// cap, FileDropped what the subject wrote beyond it (or after a write
	// error, FileError).
	FileBytes   int64  `json:"file_bytes,omitempty"`
	FileLimit   int64  `json:"file_limit,omitempty"`
	FileDropped int64  `json:"file_dropped,omitempty"`
	FileError   string `json:"file_error,omitempty"`
	ReadError   string `json:"read_error,omitempty"`
	// Note says the same in words, "N bytes dropped" for each cut.
	Note string `json:"note,omitempty"`
}

type evidence struct {
	Evidence
	start, last time.Time
	// sandboxes are the ids of every sandbox started, a failed start's
	// included: Result.Sandboxes.
	sandboxes []string
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

// noteStart records a sandbox start, failed or not. A failed start had
// made a state directory and cgroups before Start released them, so its
// id (sandbox.FailedID) is kept too: a leak check looks for it.
func (e *evidence) noteStart(backend sandbox.Isolation, box *sandbox.Sandbox, err error) {
	e.Backend = string(backend)
	id := sandbox.FailedID(err)
	if box != nil {
		id = box.ID()
	}
	if id != "" {
		e.sandboxes = append(e.sandboxes, id)
	}
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

// noteStderr records what the drain saw; call it once the drain is over.
func (e *evidence) noteStderr(d *stderrDrain, path string) {
	if d != nil {
		e.Stderr = d.evidence(path)
	}
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

// write writes the evidence file into the directory opened before the run.
func (e *evidence) write(dst *outDir) error {
	data, err := json.MarshalIndent(&e.Evidence, "", "  ")
	if err != nil {
		return fmt.Errorf("encode evidence: %w", err)
	}
	// The path alone does not say which of the run's files failed.
	if err := writeFileAtomic(dst, append(data, '\n')); err != nil {
		return fmt.Errorf("evidence file: %w", err)
	}
	return nil
}
