package interminai

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxCols and MaxRows bound a terminal size, as vt bounds its screen (a
// test holds the two equal); a larger size would be clamped by the
// emulator, so it is refused here instead of silently shrunk.
const (
	MaxCols = 1024
	MaxRows = 1024
)

// Size is a terminal size: OUTPUT's "size" member, RESIZE's request and
// `--size COLSxROWS`.
type Size struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// ParseSize reads "COLSxROWS" as `start --size` and `resize --size` give
// it ("80x24": 80 columns, 24 rows). Both are decimal, 1 to MaxCols and 1
// to MaxRows; anything else is an *Error with RuleSize whose message
// begins "Invalid size".
func ParseSize(s string) (Size, error) {
	c, r, ok := strings.Cut(s, "x")
	cols, err1 := parseDim(c)
	rows, err2 := parseDim(r)
	if !ok || err1 != nil || err2 != nil {
		return Size{}, &Error{Rule: RuleSize, Offset: -1, msg: fmt.Sprintf("Invalid size: %q (want COLSxROWS, like 80x24)", s)}
	}
	sz := Size{Cols: cols, Rows: rows}
	if err := sz.check(); err != nil {
		return Size{}, err
	}
	return sz, nil
}

// parseDim is one decimal dimension: digits only, since strconv also
// takes a sign.
func parseDim(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.Atoi(s)
}

// check holds a size to the bounds.
func (s Size) check() *Error {
	if s.Cols < 1 || s.Cols > MaxCols || s.Rows < 1 || s.Rows > MaxRows {
		return &Error{Rule: RuleSize, Offset: -1, msg: fmt.Sprintf("Invalid size: %dx%d (columns 1 to %d, rows 1 to %d)", s.Cols, s.Rows, MaxCols, MaxRows)}
	}
	return nil
}

// String is the COLSxROWS form ParseSize reads.
func (s Size) String() string { return fmt.Sprintf("%dx%d", s.Cols, s.Rows) }
