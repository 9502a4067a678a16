package batch

import (
	"fmt"
	"io"
	"sync"

	"github.com/termverify/termverify-sandbox/internal/termsafe"
)

// progress is the one status line on a terminal, rewritten in place (CR,
// then erase to the end of the line) on every start and finish. With no
// writer it does nothing. Its mutex also serializes the operator notes,
// which clear the line, print, and redraw it.
type progress struct {
	mu                     sync.Mutex
	w                      io.Writer
	cols                   int
	total, done, running   int
	passed, failed, others int
	last                   string
}

func newProgress(w io.Writer, cols, total int) *progress {
	return &progress{w: w, cols: cols, total: total}
}

func (p *progress) start(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running++
	p.last = name
	p.draw()
}

func (p *progress) finish(s Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.done++
	switch s {
	case StatusPassed:
		p.passed++
	case StatusFailed:
		p.failed++
	default:
		p.others++
	}
	p.draw()
}

// around runs fn (which prints a note) with the line cleared.
func (p *progress) around(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil {
		io.WriteString(p.w, "\r\x1b[K")
	}
	fn()
	p.draw()
}

// close erases the line: what remains on the terminal is the command's
// own last word.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil {
		io.WriteString(p.w, "\r\x1b[K")
	}
}

// draw writes the line, cut to the terminal's width: a line that wraps
// could not be rewritten in place. The entry name is a manifest's word,
// escaped for the terminal.
func (p *progress) draw() {
	if p.w == nil {
		return
	}
	line := fmt.Sprintf("batch %d/%d done, %d running: %d passed, %d failed, %d other; started %s",
		p.done, p.total, p.running, p.passed, p.failed, p.others, termsafe.String(p.last))
	if p.cols > 1 && len(line) > p.cols-1 {
		line = line[:p.cols-1]
	}
	io.WriteString(p.w, "\r\x1b[K"+line)
}
