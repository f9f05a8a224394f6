// Package frames is Sluice's AMQP 1.0 frame layer: the protocol headers
// that open a connection ("AMQP" 0 1 0 0, "AMQP" 3 1 0 0), the 8-byte frame
// header, reading frames from a bufio.Reader under a maximum frame size,
// and writing them.
//
// It sits between the network connection and the AMQP server: a Reader
// turns bytes into Frames whose Body is a decoded performative (or SASL
// frame) from package github.com/sluicemq/sluice/protocol/amqp/types and
// whose Payload is what follows a transfer; a Writer turns Frames back into
// bytes. Both directions handle every performative, so the same code
// serves a server and a test client.
//
// A typical server loop:
//
//	r := frames.NewReader(bufio.NewReader(conn), types.SpecMinMaxFrameSize)
//	w := frames.NewWriter(conn, types.SpecMinMaxFrameSize)
//	hdr, err := r.ReadProtocolHeader()        // "AMQP" 3 1 0 0 for SASL
//	...
//	f, err := r.ReadFrame()
//	switch body := f.Body.(type) {
//	case nil:                                 // an empty frame (heartbeat)
//	case *types.Open:
//	case *types.Transfer:                     // f.Payload is the message part
//	...
//	}
//	err = w.WriteFrame(frames.Frame{Type: frames.TypeAMQP, Channel: ch, Body: &types.Begin{...}})
package frames

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// Type is the frame type byte of the frame header.
type Type uint8

// The frame types.
const (
	TypeAMQP Type = 0x00 // body is a performative
	TypeSASL Type = 0x01 // body is a SASL frame
)

// String returns "AMQP", "SASL" or the number.
func (t Type) String() string {
	switch t {
	case TypeAMQP:
		return "AMQP"
	case TypeSASL:
		return "SASL"
	}
	return fmt.Sprintf("Type(%#02x)", uint8(t))
}

// HeaderSize is the size of the fixed frame header.
const HeaderSize = 8

// Header is the fixed 8-byte frame header.
type Header struct {
	Size       uint32 // the whole frame, header included
	DataOffset uint8  // in 4-byte words: where the body starts; 2 without an extended header
	Type       Type   // TypeAMQP or TypeSASL
	Channel    uint16 // the type-specific field; ignored for SASL frames
}

// Error is an error of the frame layer; test with errors.Is. Decoding
// errors of a body are *types.DecodeError.
type Error string

// Error returns the description.
func (e Error) Error() string { return string(e) }

// The errors of the frame layer.
const (
	// ErrFrameTooLarge: a frame's size exceeds the reader's (or writer's)
	// maximum frame size. The reader reports it before reading the body.
	ErrFrameTooLarge Error = "amqp: frame larger than the maximum frame size"
	// ErrBadHeader: a frame header with a size below 8, a data offset
	// below 2 or pointing past the frame, or an unknown frame type.
	ErrBadHeader Error = "amqp: malformed frame header"
	// ErrBadProtocolHeader: the 8 bytes that open a connection do not
	// start with "AMQP".
	ErrBadProtocolHeader Error = "amqp: not an AMQP protocol header"
	// ErrUnexpectedBody: a frame body of the wrong kind for the frame
	// type (a SASL frame in an AMQP frame, ...), or bytes after a
	// performative other than transfer.
	ErrUnexpectedBody Error = "amqp: unexpected frame body"
)

// ParseHeader parses and checks a frame header.
func ParseHeader(b [HeaderSize]byte) (Header, error) {
	h := Header{
		Size:       binary.BigEndian.Uint32(b[0:4]),
		DataOffset: b[4],
		Type:       Type(b[5]),
		Channel:    binary.BigEndian.Uint16(b[6:8]),
	}
	switch {
	case h.Size < HeaderSize:
		return h, fmt.Errorf("%w: size %d is below 8", ErrBadHeader, h.Size)
	case h.DataOffset < 2:
		return h, fmt.Errorf("%w: data offset %d is below 2", ErrBadHeader, h.DataOffset)
	case uint32(h.DataOffset)*4 > h.Size:
		return h, fmt.Errorf("%w: data offset %d points past the frame's %d bytes", ErrBadHeader, h.DataOffset, h.Size)
	case h.Type != TypeAMQP && h.Type != TypeSASL:
		return h, fmt.Errorf("%w: frame type %#02x", ErrBadHeader, uint8(h.Type))
	}
	return h, nil
}

// AppendHeader appends the encoding of h.
func AppendHeader(b []byte, h Header) []byte {
	b = binary.BigEndian.AppendUint32(b, h.Size)
	b = append(b, h.DataOffset, byte(h.Type))
	return binary.BigEndian.AppendUint16(b, h.Channel)
}

// ProtocolID is the protocol id byte of a protocol header.
type ProtocolID uint8

// The protocol ids of AMQP 1.0.
const (
	ProtocolAMQP ProtocolID = 0 // plain AMQP
	ProtocolTLS  ProtocolID = 2 // TLS negotiation
	ProtocolSASL ProtocolID = 3 // SASL negotiation
)

// ProtocolHeader is the 8-byte header a peer sends before its frames:
// "AMQP", protocol id, major, minor, revision.
type ProtocolHeader struct {
	// ID says what follows: AMQP, TLS or SASL.
	ID ProtocolID
	// Major, Minor and Revision are the protocol version: 1.0.0.
	Major, Minor, Revision uint8
}

// NewProtocolHeader returns the AMQP 1.0.0 protocol header for id.
func NewProtocolHeader(id ProtocolID) ProtocolHeader {
	return ProtocolHeader{ID: id, Major: types.SpecMajor, Minor: types.SpecMinor, Revision: types.SpecRevision}
}

// IsAMQP10 reports whether h names AMQP 1.0.0 (with any protocol id).
func (h ProtocolHeader) IsAMQP10() bool {
	return h.Major == types.SpecMajor && h.Minor == types.SpecMinor && h.Revision == types.SpecRevision
}

// Bytes returns the 8 bytes of h.
func (h ProtocolHeader) Bytes() [8]byte {
	return [8]byte{'A', 'M', 'Q', 'P', byte(h.ID), h.Major, h.Minor, h.Revision}
}

// String returns h as "AMQP id major.minor.revision".
func (h ProtocolHeader) String() string {
	return fmt.Sprintf("AMQP %d %d.%d.%d", h.ID, h.Major, h.Minor, h.Revision)
}

// ParseProtocolHeader parses the 8 bytes that open a connection. Any
// version parses; the caller compares it with the one it speaks (and, per
// the specification, answers a mismatch with its own header and closes).
func ParseProtocolHeader(b [8]byte) (ProtocolHeader, error) {
	if string(b[:4]) != "AMQP" {
		return ProtocolHeader{}, fmt.Errorf("%w: % x", ErrBadProtocolHeader, b[:])
	}
	return ProtocolHeader{ID: ProtocolID(b[4]), Major: b[5], Minor: b[6], Revision: b[7]}, nil
}

// Body is the decoded body of a frame: a types.Performative in an AMQP
// frame, a types.SASLFrame in a SASL frame.
type Body = types.DescribedType

// Frame is one decoded frame.
type Frame struct {
	// Type is TypeAMQP or TypeSASL.
	Type Type
	// Channel is the session's channel (0 for connection-level frames
	// and SASL frames).
	Channel uint16
	// Body is the performative or SASL frame; nil for an empty frame,
	// which peers send as a heartbeat.
	Body Body
	// Payload is what follows the performative in the frame body: the
	// message bytes of a transfer, empty otherwise. It aliases the frame's
	// buffer, which the Reader does not reuse.
	Payload []byte
}

// IsEmpty reports whether f is an empty frame (a heartbeat).
func (f Frame) IsEmpty() bool { return f.Body == nil }

// DecodeBody decodes a frame body of type t: the performative (or SASL
// frame), and for a transfer the payload after it. An empty body is an
// empty frame and decodes to a nil Body.
func DecodeBody(t Type, body []byte) (Body, []byte, error) {
	if len(body) == 0 {
		return nil, nil, nil
	}
	var (
		v   Body
		n   int
		err error
	)
	switch t {
	case TypeAMQP:
		var p types.Performative
		p, n, err = types.DecodePerformative(body)
		v = p
	case TypeSASL:
		var s types.SASLFrame
		s, n, err = types.DecodeSASLFrame(body)
		v = s
	default:
		return nil, nil, fmt.Errorf("%w: frame type %#02x", ErrBadHeader, uint8(t))
	}
	if err != nil {
		return nil, nil, err
	}
	payload := body[n:len(body):len(body)]
	if _, transfer := v.(*types.Transfer); !transfer && len(payload) > 0 {
		name, _ := v.Descriptor()
		return nil, nil, fmt.Errorf("%w: %d bytes after %s", ErrUnexpectedBody, len(payload), name)
	}
	if len(payload) == 0 {
		payload = nil
	}
	return v, payload, nil
}

// Reader reads protocol headers and frames from a buffered connection. It
// is not safe for concurrent use.
type Reader struct {
	br           *bufio.Reader
	maxFrameSize uint32
	hdr          [HeaderSize]byte
}

// NewReader returns a Reader that refuses frames larger than maxFrameSize
// bytes (header included). Before the open frames are exchanged that is
// types.SpecMinMaxFrameSize (512); afterwards the max-frame-size this side
// announced in its open.
func NewReader(br *bufio.Reader, maxFrameSize uint32) *Reader {
	return &Reader{br: br, maxFrameSize: maxFrameSize}
}

// SetMaxFrameSize changes the largest frame the Reader accepts.
func (r *Reader) SetMaxFrameSize(n uint32) { r.maxFrameSize = n }

// Buffered returns how many bytes are read from the connection and not yet
// taken as frames: 0 means the next read waits for the peer.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// MaxFrameSize returns the largest frame the Reader accepts.
func (r *Reader) MaxFrameSize() uint32 { return r.maxFrameSize }

// ReadProtocolHeader reads the 8-byte protocol header.
func (r *Reader) ReadProtocolHeader() (ProtocolHeader, error) {
	var b [8]byte
	if _, err := io.ReadFull(r.br, b[:]); err != nil {
		return ProtocolHeader{}, err
	}
	return ParseProtocolHeader(b)
}

// RawFrame is a frame whose body has not been decoded.
type RawFrame struct {
	// Header is the frame's fixed header.
	Header Header
	// Body is the frame body after any extended header; empty for an
	// empty frame. It is freshly allocated for every frame.
	Body []byte
}

// ReadRawFrame reads one frame without decoding its body. A frame larger
// than the maximum frame size is an error wrapping ErrFrameTooLarge,
// reported before the body is read or any room is allocated for it. A
// connection that ends between frames reads as io.EOF, within one as
// io.ErrUnexpectedEOF.
func (r *Reader) ReadRawFrame() (RawFrame, error) {
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		return RawFrame{}, err
	}
	h, err := ParseHeader(r.hdr)
	if err != nil {
		return RawFrame{Header: h}, err
	}
	if h.Size > r.maxFrameSize {
		return RawFrame{Header: h}, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, h.Size, r.maxFrameSize)
	}
	ext := int(h.DataOffset)*4 - HeaderSize
	if ext > 0 {
		if _, err := r.br.Discard(ext); err != nil {
			return RawFrame{Header: h}, noEOF(err)
		}
	}
	n := int(h.Size) - int(h.DataOffset)*4
	if n == 0 {
		return RawFrame{Header: h}, nil
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.br, body); err != nil {
		return RawFrame{Header: h}, noEOF(err)
	}
	return RawFrame{Header: h, Body: body}, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadFrame reads one frame and decodes its body.
func (r *Reader) ReadFrame() (Frame, error) {
	raw, err := r.ReadRawFrame()
	if err != nil {
		return Frame{}, err
	}
	return Decode(raw)
}

// Decode decodes the body of a raw frame.
func Decode(raw RawFrame) (Frame, error) {
	body, payload, err := DecodeBody(raw.Header.Type, raw.Body)
	if err != nil {
		return Frame{}, err
	}
	return Frame{Type: raw.Header.Type, Channel: raw.Header.Channel, Body: body, Payload: payload}, nil
}

// AppendFrame appends the encoding of f: header, performative, payload.
// It checks that the body suits the frame type (a performative in an
// AMQP frame, a SASL frame in a SASL frame) and that only a transfer has a
// payload, but not the size: see Writer for that.
func AppendFrame(b []byte, f Frame) ([]byte, error) {
	start := len(b)
	b = AppendHeader(b, Header{DataOffset: 2, Type: f.Type, Channel: f.Channel})
	if f.Body != nil {
		switch f.Type {
		case TypeAMQP:
			if _, ok := f.Body.(types.Performative); !ok {
				return b[:start], fmt.Errorf("%w: %T in an AMQP frame", ErrUnexpectedBody, f.Body)
			}
		case TypeSASL:
			if _, ok := f.Body.(types.SASLFrame); !ok {
				return b[:start], fmt.Errorf("%w: %T in a SASL frame", ErrUnexpectedBody, f.Body)
			}
		default:
			return b[:start], fmt.Errorf("%w: frame type %#02x", ErrBadHeader, uint8(f.Type))
		}
		var err error
		if b, err = f.Body.AppendAMQP(b); err != nil {
			return b[:start], err
		}
	}
	if len(f.Payload) > 0 {
		if _, ok := f.Body.(*types.Transfer); !ok {
			return b[:start], fmt.Errorf("%w: payload with %T", ErrUnexpectedBody, f.Body)
		}
		b = append(b, f.Payload...)
	}
	size := len(b) - start
	if uint64(size) > 0xFFFFFFFF {
		return b[:start], fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, size)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(size))
	return b, nil
}

// Writer writes protocol headers and frames. It keeps one buffer for
// encoding, so steady writing does not allocate. It is not safe for
// concurrent use.
type Writer struct {
	w            io.Writer
	buf          []byte
	maxFrameSize uint32
}

// NewWriter returns a Writer that refuses to write frames larger than
// maxFrameSize (the max-frame-size the peer announced; 512 before that).
// Each Write* call makes one Write to w; wrap w in a bufio.Writer to batch.
func NewWriter(w io.Writer, maxFrameSize uint32) *Writer {
	return &Writer{w: w, maxFrameSize: maxFrameSize}
}

// SetMaxFrameSize changes the largest frame the Writer writes.
func (w *Writer) SetMaxFrameSize(n uint32) { w.maxFrameSize = n }

// MaxFrameSize returns the largest frame the Writer writes.
func (w *Writer) MaxFrameSize() uint32 { return w.maxFrameSize }

// WriteProtocolHeader writes a protocol header.
func (w *Writer) WriteProtocolHeader(h ProtocolHeader) error {
	b := h.Bytes()
	_, err := w.w.Write(b[:])
	return err
}

// WriteFrame encodes and writes f. A frame larger than the maximum frame
// size is not written and is an error wrapping ErrFrameTooLarge (splitting
// a message over several transfers is the link's job).
func (w *Writer) WriteFrame(f Frame) error {
	b, err := AppendFrame(w.buf[:0], f)
	if err != nil {
		return err
	}
	if uint64(len(b)) > uint64(w.maxFrameSize) {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(b), w.maxFrameSize)
	}
	w.buf = b
	_, err = w.w.Write(b)
	return err
}

// WriteEmptyFrame writes an empty AMQP frame on channel 0: a heartbeat.
func (w *Writer) WriteEmptyFrame() error {
	return w.WriteFrame(Frame{Type: TypeAMQP})
}
