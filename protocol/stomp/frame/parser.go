package frame

import (
	"bytes"
	"math"
	"strconv"
)

// bodyPrealloc is the most the parser allocates for a body ahead of the
// octets that fill it: a large content-length within the limit makes the
// body grow with the data that actually arrives, not with the promise.
const bodyPrealloc = 64 << 10

// Event is what one call of [Parser.Feed] or [Reader.Next] produced. The
// zero Event means that more input is needed.
type Event struct {
	// Frame is the frame that was completed, or nil.
	Frame *Frame
	// HeartBeat is true when an EOL (a lone LF or CR LF) between frames was
	// consumed. Such an EOL carries no frame; it shows the peer is alive.
	HeartBeat bool
}

// parseState is the position of a Parser within the frame syntax.
type parseState uint8

const (
	stIdle       parseState = iota // between frames
	stIdleCR                       // between frames, after a CR
	stCommand                      // in the command line
	stHeader                       // in a header line, or at the blank line
	stBodyLength                   // in a body of known length
	stBodyNUL                      // after a body of known length, expecting NUL
	stBodyScan                     // in a body without content-length, up to NUL
)

// Parser decodes a stream of STOMP frames incrementally. Feed it input in
// slices of any size; its state carries over between calls, so splitting
// the same stream differently yields the same frames, heart-beats and
// errors. A Parser holds at most one partial line (bounded by
// Limits.MaxLineLength), the decoded headers of the current frame (bounded by
// Limits.MaxHeaderBytes) and its body (bounded by Limits.MaxBodySize).
//
// Header lines are split at their first colon. Where the grammar is stricter
// than real clients, the parser takes the octets as data: an unescaped colon
// in a header value (which the 1.1 and 1.2 grammars exclude) and a carriage
// return inside a line (which 1.2 excludes). It refuses what cannot be
// written back unambiguously: a NUL octet in the command or a header line, a
// line ending in CR CR LF, and a header with an empty name.
//
// After an error the Parser is stuck: every later Feed returns the same
// error until [Parser.Reset]. A server sends an ERROR frame and closes the
// connection instead. A Parser is not safe for concurrent use.
type Parser struct {
	lim     Limits
	version Version
	state   parseState
	err     error

	line []byte // the part of the current line seen in earlier input

	cmd       Command
	escaped   bool   // the current frame's headers are escaped
	text      []byte // decoded header names and values, back to back
	ends      []int  // per header: end of its name, end of its value, in text
	headBytes int    // header line octets so far, as sent
	length    int    // content-length of the current frame, -1 if none yet
	body      []byte
}

// NewParser returns a Parser with the given limits (zero fields take the
// defaults) that decodes headers as STOMP 1.0 until told otherwise with
// [Parser.SetVersion].
func NewParser(lim Limits) *Parser {
	return &Parser{lim: lim.withDefaults(), version: V10, length: -1}
}

// SetVersion sets the version used to decode the headers of the frames that
// follow: a server calls it once it has negotiated the version in answer to
// CONNECT. It takes effect at the next command line, never in the middle of
// a frame. An invalid version is treated as STOMP 1.0.
func (p *Parser) SetVersion(v Version) {
	if !v.Valid() {
		v = V10
	}
	p.version = v
}

// Version returns the version set with SetVersion (initially V10).
func (p *Parser) Version() Version { return p.version }

// Limits returns the limits in force, defaults filled in.
func (p *Parser) Limits() Limits { return p.lim }

// InFrame reports whether the Parser has consumed part of a frame (or the CR
// of a CR LF heart-beat) and waits for the rest. A stream that ends while
// InFrame is true has been cut short.
func (p *Parser) InFrame() bool { return p.state != stIdle }

// Err returns the error that stopped the Parser, or nil.
func (p *Parser) Err() error { return p.err }

// Reset discards any partial frame and any error, keeping the limits and
// the version.
func (p *Parser) Reset() {
	p.err = nil
	p.state = stIdle
	p.line = p.line[:0]
	p.resetFrame()
}

// resetFrame forgets the current frame, keeping reusable buffers.
func (p *Parser) resetFrame() {
	p.cmd = CmdInvalid
	p.escaped = false
	p.text = p.text[:0]
	p.ends = p.ends[:0]
	p.headBytes = 0
	p.length = -1
	p.body = nil
}

// fail makes err sticky and returns it.
func (p *Parser) fail(err error) error {
	p.err = err
	p.body = nil
	return err
}

// Feed consumes octets from b until it completes one frame or one
// heart-beat EOL, or until b is used up. It returns how many octets it
// consumed and what it completed: the caller keeps b[n:] for the next call.
// When ev is the zero Event, n == len(b) and the Parser waits for more.
//
// Feed returns after every frame so that the caller can act on it (for
// instance call SetVersion after CONNECT) before the next frame is decoded.
// The returned Frame is owned by the caller; the Parser keeps no reference
// to it or to b.
//
// On error, err is an [*Error] and n only says how far the Parser read; the
// stream cannot be resumed.
func (p *Parser) Feed(b []byte) (n int, ev Event, err error) {
	if p.err != nil {
		return 0, Event{}, p.err
	}
	i := 0
	for i < len(b) {
		switch p.state {
		case stIdle:
			switch b[i] {
			case '\n':
				return i + 1, Event{HeartBeat: true}, nil
			case '\r':
				p.state = stIdleCR
				i++
			default:
				p.state = stCommand
			}

		case stIdleCR:
			if b[i] != '\n' {
				return i + 1, Event{}, p.fail(newError(ErrMalformedFrame,
					"carriage return not followed by line feed between frames"))
			}
			p.state = stIdle
			return i + 1, Event{HeartBeat: true}, nil

		case stCommand, stHeader:
			line, m, ok, err := p.readLine(b[i:])
			i += m
			if err != nil {
				return i, Event{}, p.fail(err)
			}
			if !ok {
				continue // b is used up
			}
			if p.state == stCommand {
				err = p.command(line)
			} else {
				err = p.header(line, len(b)-i)
			}
			if err != nil {
				return i, Event{}, p.fail(err)
			}

		case stBodyLength:
			chunk := b[i:]
			if need := p.length - len(p.body); len(chunk) > need {
				chunk = chunk[:need]
			}
			p.body = appendBounded(p.body, chunk, p.length)
			i += len(chunk)
			if len(p.body) == p.length {
				p.state = stBodyNUL
			}

		case stBodyNUL:
			if b[i] != 0 {
				return i + 1, Event{}, p.fail(newError(ErrMissingNUL,
					"body of content-length "+strconv.Itoa(p.length)+" is not followed by a NUL octet"))
			}
			return i + 1, Event{Frame: p.finish()}, nil

		case stBodyScan:
			window := b[i:]
			room := p.lim.MaxBodySize - len(p.body) // octets allowed before the NUL
			if len(window)-1 > room {
				window = window[:room+1]
			}
			z := bytes.IndexByte(window, 0)
			if z < 0 {
				if len(window) > room {
					return i + len(window), Event{}, p.fail(limitError(ErrBodyTooLarge,
						"body without content-length too large", p.lim.MaxBodySize))
				}
				p.body = append(p.body, window...)
				i += len(window)
				continue
			}
			p.body = append(p.body, window[:z]...)
			return i + z + 1, Event{Frame: p.finish()}, nil
		}
	}
	return i, Event{}, nil
}

// readLine looks for the end of the current command or header line in b.
// When the line is complete it returns it without its line ending (LF or CR
// LF) and ok; otherwise it stores the partial line and consumes all of b.
// The returned line is valid until the next call.
func (p *Parser) readLine(b []byte) (line []byte, n int, ok bool, err error) {
	// Octets still allowed before the LF: the line's content plus a CR.
	allow := p.lim.MaxLineLength + 1 - len(p.line)
	window := b
	if len(window) > allow+1 {
		window = window[:allow+1]
	}
	lf := bytes.IndexByte(window, '\n')
	seg := window
	if lf >= 0 {
		seg = window[:lf]
	}
	if bytes.IndexByte(seg, 0) >= 0 {
		return nil, 0, false, newError(ErrMalformedFrame,
			"NUL octet in the "+p.lineName()+" (missing blank line after the headers?)")
	}
	if lf < 0 {
		if len(window) > allow {
			return nil, len(window), false, limitError(ErrLineTooLong, p.lineName()+" too long", p.lim.MaxLineLength)
		}
		p.line = append(p.line, window...)
		return nil, len(window), false, nil
	}
	line = seg
	if len(p.line) > 0 {
		p.line = append(p.line, seg...)
		line = p.line
		p.line = p.line[:0] // line stays readable: nothing writes p.line before the next call
	}
	if k := len(line); k > 0 && line[k-1] == '\r' {
		line = line[:k-1]
	}
	if len(line) > p.lim.MaxLineLength {
		return nil, lf + 1, false, limitError(ErrLineTooLong, p.lineName()+" too long", p.lim.MaxLineLength)
	}
	if k := len(line); k > 0 && line[k-1] == '\r' {
		return nil, lf + 1, false, newError(ErrMalformedFrame, p.lineName()+" ends with a bare carriage return")
	}
	return line, lf + 1, true, nil
}

// lineName names the kind of line being read, for error reasons.
func (p *Parser) lineName() string {
	if p.state == stCommand {
		return "command line"
	}
	return "header line"
}

// command handles a complete command line.
func (p *Parser) command(line []byte) error {
	c := lookupCommand(line)
	if c == CmdInvalid {
		return newError(ErrUnknownCommand, "unknown command "+quoteForReason(line))
	}
	p.cmd = c
	p.escaped = p.version.escapes() && !c.IsConnect()
	p.state = stHeader
	return nil
}

// header handles a complete header line, or the blank line that ends the
// headers. rest is how many octets of the current input follow the line.
func (p *Parser) header(line []byte, rest int) error {
	if len(line) == 0 {
		p.endHeaders(rest)
		return nil
	}
	if len(p.ends)/2 >= p.lim.MaxHeaders {
		return limitError(ErrTooManyHeaders, "too many headers", p.lim.MaxHeaders)
	}
	p.headBytes += len(line)
	if p.headBytes > p.lim.MaxHeaderBytes {
		return limitError(ErrHeadersTooLarge, "header lines too large in total", p.lim.MaxHeaderBytes)
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return newError(ErrMalformedHeader, "header line without a colon: "+quoteForReason(line))
	}
	if colon == 0 {
		return newError(ErrMalformedHeader, "header line with an empty name: "+quoteForReason(line))
	}
	start := len(p.text)
	var err error
	if p.escaped {
		v12 := p.version == V12
		if p.text, err = appendUnescaped(p.text, line[:colon], v12, "header name"); err != nil {
			return err
		}
		nameEnd := len(p.text)
		if p.text, err = appendUnescaped(p.text, line[colon+1:], v12, "header value"); err != nil {
			return err
		}
		p.ends = append(p.ends, nameEnd, len(p.text))
	} else {
		p.text = append(p.text, line[:colon]...)
		nameEnd := len(p.text)
		p.text = append(p.text, line[colon+1:]...)
		p.ends = append(p.ends, nameEnd, len(p.text))
	}
	// The first content-length entry governs the body; later ones are
	// history, as for every repeated header.
	nameEnd := p.ends[len(p.ends)-2]
	if p.length < 0 && string(p.text[start:nameEnd]) == HeaderContentLength {
		n, err := parseContentLength(p.text[nameEnd:], p.lim.MaxBodySize)
		if err != nil {
			return err
		}
		p.length = n
	}
	return nil
}

// endHeaders moves to the body once the blank line has been read.
func (p *Parser) endHeaders(rest int) {
	switch {
	case p.length == 0:
		p.state = stBodyNUL
	case p.length > 0:
		// Allocate what the current input can fill, at least a modest
		// amount, never more than the content-length.
		p.body = make([]byte, 0, min(p.length, max(bodyPrealloc, rest)))
		p.state = stBodyLength
	default:
		p.state = stBodyScan
	}
}

// finish builds the completed frame and readies the Parser for the next.
func (p *Parser) finish() *Frame {
	n := len(p.ends) / 2
	f := newFrame(p.cmd, n)
	if n > 0 {
		// One string holds every name and value; the headers are
		// substrings of it.
		s := string(p.text)
		hs := f.Headers
		start := 0
		for i := range hs {
			nameEnd, valueEnd := p.ends[2*i], p.ends[2*i+1]
			hs[i] = Header{Name: s[start:nameEnd], Value: s[nameEnd:valueEnd]}
			start = valueEnd
		}
	}
	if len(p.body) > 0 {
		f.Body = p.body
	}
	p.state = stIdle
	p.resetFrame()
	return f
}

// newFrame allocates a frame with n zero headers. For common header counts
// the frame and its header array share one allocation; the slice's capacity
// is n, so a later Add moves the headers out rather than writing past them.
func newFrame(c Command, n int) *Frame {
	switch {
	case n == 0:
		return &Frame{Command: c}
	case n <= 4:
		b := new(struct {
			f Frame
			h [4]Header
		})
		b.f = Frame{Command: c, Headers: b.h[:n:n]}
		return &b.f
	case n <= 8:
		b := new(struct {
			f Frame
			h [8]Header
		})
		b.f = Frame{Command: c, Headers: b.h[:n:n]}
		return &b.f
	case n <= 16:
		b := new(struct {
			f Frame
			h [16]Header
		})
		b.f = Frame{Command: c, Headers: b.h[:n:n]}
		return &b.f
	}
	return &Frame{Command: c, Headers: make([]Header, n)}
}

// parseContentLength parses a content-length value: one or more ASCII
// digits, nothing else. A value above limit is an ErrBodyTooLarge error.
func parseContentLength(v []byte, limit int) (int, error) {
	if len(v) == 0 {
		return 0, newError(ErrInvalidContentLength, "empty content-length")
	}
	n, over := 0, false
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, newError(ErrInvalidContentLength,
				"content-length "+quoteForReason(v)+" is not a non-negative decimal number")
		}
		if !over {
			if n > (math.MaxInt-9)/10 {
				over = true
				continue
			}
			n = n*10 + int(c-'0')
			over = n > limit
		}
	}
	if over {
		return 0, limitError(ErrBodyTooLarge, "content-length "+quoteForReason(v)+" too large", limit)
	}
	return n, nil
}

// bodySpace returns the free capacity of the body of known length being
// read, growing it first if it is full (by doubling, by at least want
// octets, and never past the content-length).
func (p *Parser) bodySpace(want int) []byte {
	if len(p.body) == cap(p.body) {
		grown := make([]byte, len(p.body), min(p.length, max(2*cap(p.body), len(p.body)+want)))
		copy(grown, p.body)
		p.body = grown
	}
	return p.body[len(p.body):cap(p.body)]
}

// bodyWritten records that n octets were written into bodySpace.
func (p *Parser) bodyWritten(n int) {
	p.body = p.body[:len(p.body)+n]
	if len(p.body) == p.length {
		p.state = stBodyNUL
	}
}

// appendBounded appends src to dst, growing dst by doubling but never past
// capLimit octets of capacity (the caller never appends beyond it).
func appendBounded(dst, src []byte, capLimit int) []byte {
	if len(dst)+len(src) > cap(dst) {
		newCap := min(capLimit, max(2*cap(dst), len(dst)+len(src)))
		grown := make([]byte, len(dst), newCap)
		copy(grown, dst)
		dst = grown
	}
	return append(dst, src...)
}
