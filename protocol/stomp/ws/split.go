package ws

import (
	"bytes"
	"strconv"
)

// splitter cuts the octets the STOMP server writes into units: one
// heart-beat (a single LF) or one whole frame, from its command line
// through its NUL. Each unit becomes one WebSocket message.
//
// The input is what frame.Writer produces, so the splitter relies on its
// form: lines end in a single LF, the headers end at the first empty line,
// and a body that holds a NUL has a content-length header (the first one
// gives the body's length). The STOMP writer writes many frames at once and
// a large body in several pieces; the splitter keeps an incomplete unit
// until the rest of it arrives.
type splitter struct {
	pend []byte // the start of an incomplete unit
	// The search state of the unit at the start of pend, so that each octet
	// is looked at once however the unit arrives.
	scan  int // octets already searched (for the blank line, then the NUL)
	body  int // where the body starts, 0 until the headers have ended
	total int // the unit's length, once a content-length gives it
}

// pendLimit is the capacity of pend kept between units; a larger buffer
// (a large frame's) is let go once the frame is out.
const pendLimit = 64 << 10

// write cuts p, after whatever an earlier write left incomplete, and calls
// emit with each complete unit in order. It stops at the first error of
// emit.
func (s *splitter) write(p []byte, emit func([]byte) error) error {
	b := p
	if len(s.pend) > 0 {
		s.pend = append(s.pend, p...)
		b = s.pend
	}
	for len(b) > 0 {
		n := s.cut(b)
		if n == 0 {
			break
		}
		if err := emit(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		s.scan, s.body, s.total = 0, 0, 0
	}
	if len(b) == 0 && cap(s.pend) > pendLimit {
		s.pend = nil
		return nil
	}
	// b is empty, a suffix of pend, or (when nothing was pending) of p; the
	// copy keeps nothing of p, which the caller may reuse.
	s.pend = append(s.pend[:0], b...)
	return nil
}

// lflf ends the headers: the LF of the last header line (or of the command
// line) and the empty line's LF.
var lflf = []byte("\n\n")

// cut returns the length of the unit at the start of b (which is never
// empty), or 0 when b holds only part of it. It remembers how far it has
// searched, for the next call with the same unit and more octets.
func (s *splitter) cut(b []byte) int {
	if s.total > 0 {
		if len(b) >= s.total {
			return s.total
		}
		return 0
	}
	if s.body == 0 {
		if b[0] == '\n' {
			return 1 // a heart-beat
		}
		from := max(s.scan-1, 0) // the first LF of the pair may end the last search
		i := bytes.Index(b[from:], lflf)
		if i < 0 {
			s.scan = len(b)
			return 0
		}
		s.body = from + i + len(lflf)
		s.scan = s.body
		if n, ok := contentLength(b[:s.body]); ok {
			s.total = s.body + n + 1
			if len(b) >= s.total {
				return s.total
			}
			return 0
		}
	}
	i := bytes.IndexByte(b[s.scan:], 0)
	if i < 0 {
		s.scan = len(b)
		return 0
	}
	return s.scan + i + 1
}

// contentLength returns the value of the first content-length header of a
// frame's head (its command and header lines, ending in the empty line).
func contentLength(head []byte) (int, bool) {
	const name = "content-length:"
	_, rest, _ := bytes.Cut(head, []byte{'\n'}) // the command line
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		v, ok := bytes.CutPrefix(line, []byte(name))
		if !ok {
			continue
		}
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
