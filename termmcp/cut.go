package termmcp

import (
	"fmt"
	"strings"
)

// truncated says what a result left out, and how to ask for it.
type truncated struct {
	LinesReturned int    `json:"lines_returned"`
	LinesTotal    int    `json:"lines_total"`
	BytesReturned int    `json:"bytes_returned"`
	BytesTotal    int    `json:"bytes_total"`
	LastLine      int    `json:"last_line" jsonschema:"the number of the last line returned"`
	NextFrom      int    `json:"next_from" jsonschema:"the from that asks for the lines left out"`
	Note          string `json:"note"`
}

// cutText keeps the lines of text (each ending in a newline, the first
// numbered first in the seed's numbering, which has no line 0) that fit
// in limit bytes, at least one, and says what it left out; nil when it
// left nothing out.
func cutText(text string, first, limit int) (string, *truncated) {
	if len(text) <= limit {
		return text, nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	n, size := 0, 0
	for n < len(lines) && (n == 0 || size+len(lines[n]) <= limit) {
		size += len(lines[n])
		n++
	}
	if n == len(lines) {
		return text, nil
	}
	last := lineAfter(first, n-1)
	next := lineAfter(first, n)
	c := &truncated{LinesReturned: n, LinesTotal: len(lines), BytesReturned: size, BytesTotal: len(text), LastLine: last, NextFrom: next}
	c.Note = fmt.Sprintf("[cut: %d of %d lines (%d of %d bytes) returned, lines %d to %d of %d to %d; call terminal_output with from %d for the next ones (to bounds a page).]",
		n, len(lines), size, len(text), first, last, first, lineAfter(first, len(lines)-1), next)
	return strings.Join(lines[:n], ""), c
}

// lineAfter is the number of the line k lines after line first, in the
// seed's numbering: the scrollback's -N…-1, then the screen's 1…, no 0.
func lineAfter(first, k int) int {
	n := first + k
	if first < 0 && n >= 0 {
		n++
	}
	return n
}
