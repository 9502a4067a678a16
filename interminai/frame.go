package interminai

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest request or reply line, newline excluded: the
// seed's "Maximum message size: 10MB", read as 10 MiB. interminai states
// the limit and does not enforce it; ReadRequest and Call do, so neither
// side of a connection buffers more than this for one line.
const MaxLine = 10 << 20

// readLine reads one newline-terminated line of at most limit bytes from
// r and returns it without the newline. It stops reading as soon as the
// limit is passed rather than draining the rest, so a peer cannot make it
// buffer more than limit+bufio's buffer. A line that ends with the
// connection, without its newline, is refused: the seed's framing ends
// every message with one, and a peer that died mid-line sent a fragment.
// An *Error means the peer sent a bad line; any other error is the
// transport's. what names the line in messages: "Invalid request" or
// "invalid reply".
func readLine(r io.Reader, limit int, what string) ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		content := len(line) + len(chunk)
		if err == nil {
			content-- // the newline is the delimiter, not part of the line
		}
		if content > limit {
			e := lineErr(what, RuleTooLong, -1, "line longer than %d bytes", limit)
			e.Limit = limit
			return nil, e
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, lineErr(what, RuleUnterminated, -1, "connection closed before a line was sent")
			}
			return nil, lineErr(what, RuleUnterminated, int64(len(line)), "connection closed after %d bytes, before the line's newline", len(line))
		default:
			return nil, fmt.Errorf("read line: %w", err)
		}
	}
}
