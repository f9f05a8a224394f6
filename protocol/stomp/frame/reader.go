package frame

import (
	"fmt"
	"io"
)

// DefaultReadBufferSize is the read buffer size of [NewReader].
const DefaultReadBufferSize = 32 << 10

// maxEmptyReads is how many reads returning neither data nor an error a
// Reader tolerates in a row before it gives up with io.ErrNoProgress.
const maxEmptyReads = 100

// Reader reads frames from an [io.Reader], typically a net.Conn, through a
// read buffer and a [Parser]: one Read call fills the buffer with as many
// frames as the peer has sent, and the frames are then decoded from it.
// Large bodies of known length bypass the buffer and are read straight into
// the frame's body.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	rd   io.Reader
	buf  []byte
	r, w int // buf[r:w] is read but not yet parsed
	p    Parser
	err  error // read error to report once the buffered input is parsed
}

// NewReader returns a Reader with a buffer of [DefaultReadBufferSize] octets
// that parses rd's input within lim (zero fields take the defaults) and
// decodes headers as STOMP 1.0 until [Reader.SetVersion].
func NewReader(rd io.Reader, lim Limits) *Reader {
	return NewReaderSize(rd, lim, DefaultReadBufferSize)
}

// NewReaderSize is [NewReader] with a read buffer of size octets (at least
// 16).
func NewReaderSize(rd io.Reader, lim Limits, size int) *Reader {
	size = max(size, 16)
	return &Reader{
		rd:  rd,
		buf: make([]byte, size),
		p:   Parser{lim: lim.withDefaults(), version: V10, length: -1},
	}
}

// SetVersion sets the version used to decode the headers of the frames
// that follow; see [Parser.SetVersion].
func (r *Reader) SetVersion(v Version) { r.p.SetVersion(v) }

// Version returns the version headers are decoded with.
func (r *Reader) Version() Version { return r.p.Version() }

// Buffered returns how many octets have been read from the underlying
// reader but not yet parsed.
func (r *Reader) Buffered() int { return r.w - r.r }

// Next returns the next frame or heart-beat. Exactly one of ev.Frame and
// ev.HeartBeat is set when err is nil.
//
// At the end of the input Next returns io.EOF if the input ended between
// frames, or an [*Error] of kind ErrTruncated (which also matches
// io.ErrUnexpectedEOF) if it ended inside one. A protocol violation is an
// [*Error] and is returned again by every later call. Any other error of
// the underlying reader, such as a deadline expiring on a net.Conn, is
// returned once, after the input read before it has been parsed; the
// partial frame is kept, so Next may be called again to go on.
func (r *Reader) Next() (Event, error) {
	empty := 0
	for {
		if r.r < r.w {
			n, ev, err := r.p.Feed(r.buf[r.r:r.w])
			r.r += n
			if err != nil {
				return Event{}, err
			}
			if ev.Frame != nil || ev.HeartBeat {
				return ev, nil
			}
		}
		if err := r.p.Err(); err != nil {
			return Event{}, err
		}
		if r.err != nil {
			err := r.err
			if err == io.EOF {
				if r.p.InFrame() {
					return Event{}, newError(ErrTruncated, "stream ended in the middle of a frame")
				}
				return Event{}, io.EOF
			}
			r.err = nil
			return Event{}, err
		}
		// Everything buffered has been consumed: read more.
		progressed, err := r.read()
		r.err = err
		if progressed || err != nil {
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			r.err = io.ErrNoProgress
		}
	}
}

// read reads once from the underlying reader: straight into the body of
// the current frame when at least a buffer's worth of a body of known
// length is still to come, and into the emptied buffer otherwise. It
// reports whether any octets arrived.
func (r *Reader) read() (bool, error) {
	r.r, r.w = 0, 0
	p := &r.p
	if p.state == stBodyLength && p.err == nil && p.length-len(p.body) >= len(r.buf) {
		space := p.bodySpace(len(r.buf))
		n, err := r.rd.Read(space)
		if n < 0 || n > len(space) {
			return false, fmt.Errorf("stomp frame: underlying reader returned %d for a %d-octet read", n, len(space))
		}
		p.bodyWritten(n)
		return n > 0, err
	}
	n, err := r.rd.Read(r.buf)
	if n < 0 || n > len(r.buf) {
		return false, fmt.Errorf("stomp frame: underlying reader returned %d for a %d-octet read", n, len(r.buf))
	}
	r.w = n
	return n > 0, err
}

// ReadFrame returns the next frame, skipping heart-beats. It suits tests
// and clients; a server that must notice heart-beats uses [Reader.Next].
func (r *Reader) ReadFrame() (*Frame, error) {
	for {
		ev, err := r.Next()
		if err != nil {
			return nil, err
		}
		if ev.Frame != nil {
			return ev.Frame, nil
		}
	}
}
