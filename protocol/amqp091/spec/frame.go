package spec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ProtocolHeader is what a client sends first on a new connection: "AMQP",
// 0, then the version 0-9-1.
const ProtocolHeader = "AMQP\x00\x00\x09\x01"

// frameOverhead is the bytes of a frame around its payload: type (1),
// channel (2), size (4) and the frame-end octet (1).
const frameOverhead = 8

// ReadBufferSize is the read buffer of a [FrameReader]: many small frames
// (a publish is three) come in one read, and a payload larger than the
// buffer is read straight into the payload buffer.
const ReadBufferSize = 32 << 10

// Frame is one frame: its type ([FrameMethod], [FrameHeader], [FrameBody]
// or [FrameHeartbeat]), channel and payload.
type Frame struct {
	Type    uint8
	Channel uint16
	Payload []byte
}

// FrameReader reads frames from a byte stream, bounded by the negotiated
// frame-max.
type FrameReader struct {
	r        *bufio.Reader
	maxFrame uint32
	hdr      [7]byte
	buf      []byte
}

// NewFrameReader returns a reader of frames from r that refuses frames
// larger than maxFrame bytes (the whole frame, as connection.tune's
// frame-max counts it). A maxFrame below [FrameMinSize], including 0, is
// taken as FrameMinSize: a peer may always send frames that large, and the
// reader has no unbounded mode.
//
// The reader buffers r with [ReadBufferSize] bytes, unless r is a
// *bufio.Reader already.
func NewFrameReader(r io.Reader, maxFrame uint32) *FrameReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, ReadBufferSize)
	}
	fr := &FrameReader{r: br}
	fr.SetMaxFrame(maxFrame)
	return fr
}

// SetMaxFrame changes the largest frame accepted, as for NewFrameReader;
// a server calls it once connection.tune-ok agrees on frame-max.
func (fr *FrameReader) SetMaxFrame(maxFrame uint32) {
	fr.maxFrame = max(maxFrame, FrameMinSize)
}

// ReadFrame reads the next frame. Its Payload is valid until the next call.
//
// A frame larger than the frame-max, a frame type the reader does not know
// or a missing frame-end octet is an [*Error] (with reply code
// [FrameError]), found before the payload is read where it can be; an
// error of the underlying reader is returned wrapped (io.EOF as it is when
// the stream ends between frames, io.ErrUnexpectedEOF inside one).
func (fr *FrameReader) ReadFrame() (Frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return Frame{}, io.EOF
		}
		return Frame{}, fmt.Errorf("reading a frame header: %w", err)
	}
	typ := fr.hdr[0]
	ch := binary.BigEndian.Uint16(fr.hdr[1:])
	size := binary.BigEndian.Uint32(fr.hdr[3:])
	switch typ {
	case FrameMethod, FrameHeader, FrameBody, FrameHeartbeat:
	default:
		if fr.hdr[0] == 'A' && string(fr.hdr[:4]) == "AMQP" {
			return Frame{}, errorf(FrameError, "a protocol header where a frame was due")
		}
		return Frame{}, errorf(FrameError, "unknown frame type %d on channel %d", typ, ch)
	}
	if uint64(size)+frameOverhead > uint64(fr.maxFrame) {
		return Frame{}, errorf(FrameError, "frame of %d bytes (payload %d) on channel %d exceeds frame-max %d", uint64(size)+frameOverhead, size, ch, fr.maxFrame)
	}
	n := int(size) + 1
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n)
	}
	buf := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, fmt.Errorf("reading a frame of type %d, %d bytes, on channel %d: %w", typ, size, ch, err)
	}
	if end := buf[size]; end != FrameEnd {
		return Frame{}, errorf(FrameError, "frame of type %d on channel %d ends in 0x%02x, not the frame-end octet 0x%02x", typ, ch, end, FrameEnd)
	}
	return Frame{Type: typ, Channel: ch, Payload: buf[:size]}, nil
}

// Buffered returns how many bytes the reader holds that have not been
// returned as frames yet.
func (fr *FrameReader) Buffered() int { return fr.r.Buffered() }

// AppendFrame appends a frame of type typ on channel with payload.
func AppendFrame(b []byte, typ uint8, channel uint16, payload []byte) []byte {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint16(b, channel)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return append(b, FrameEnd)
}

// AppendMethodFrame appends a method frame carrying m on channel. The
// method is encoded in place; the size is written afterwards.
func AppendMethodFrame(b []byte, channel uint16, m Method) []byte {
	b = append(b, FrameMethod)
	b = binary.BigEndian.AppendUint16(b, channel)
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	b = AppendMethod(b, m)
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return append(b, FrameEnd)
}

// AppendHeaderFrame appends a content header frame carrying h on channel,
// encoded in place like AppendMethodFrame.
func AppendHeaderFrame(b []byte, channel uint16, h *ContentHeader) []byte {
	b = append(b, FrameHeader)
	b = binary.BigEndian.AppendUint16(b, channel)
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	b = AppendContentHeader(b, h)
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return append(b, FrameEnd)
}

// AppendHeartbeat appends a heartbeat frame (channel 0, no payload).
func AppendHeartbeat(b []byte) []byte {
	return AppendFrame(b, FrameHeartbeat, 0, nil)
}
