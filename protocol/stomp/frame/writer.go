package frame

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
)

// DefaultWriteBufferSize is the buffer size of [NewWriter].
const DefaultWriteBufferSize = 32 << 10

// EncodeOptions adjusts how frames are encoded.
type EncodeOptions struct {
	// ContentLength adds a content-length header to every frame with a
	// non-empty body. Without it the writer writes content-length only
	// when the frame has the header already or when the body contains a
	// NUL octet (which a reader could not otherwise delimit).
	ContentLength bool
}

// AppendFrame appends the encoding of f for version v to dst and returns
// the extended slice.
//
// The command line and every header line end in a single LF. Header names
// and values are escaped for v (\\, \n, \c, and \r in 1.2), except in
// CONNECT, STOMP and CONNECTED frames and in STOMP 1.0, which have no
// escapes. The first content-length header, if any, is written in place
// with the actual length of f.Body whatever its value in f; later
// content-length entries are written as they are (readers ignore them).
// When f has no content-length header, one is appended after the others if
// the body is not empty and either opts.ContentLength is set or the body
// holds a NUL octet.
//
// AppendFrame refuses, with an [*Error] of kind ErrUnencodable and dst
// returned as it was, a frame with an invalid command or version, an empty header
// name, a NUL octet in a header, or a header the version cannot represent:
// where there are no escapes, a name containing a colon or line feed or a
// value containing a line feed; and where there is no \r escape, a value
// ending in a carriage return (a reader would take it for part of a CR LF).
func AppendFrame(dst []byte, f *Frame, v Version, opts EncodeOptions) ([]byte, error) {
	out, err := appendHead(dst, f, v, opts)
	if err != nil {
		return dst, err
	}
	out = append(out, f.Body...)
	return append(out, 0), nil
}

// AppendHeartBeat appends a heart-beat (a single LF) to dst.
func AppendHeartBeat(dst []byte) []byte { return append(dst, '\n') }

// appendHead appends everything of f's encoding that precedes the body:
// the command line, the header lines and the blank line.
func appendHead(dst []byte, f *Frame, v Version, opts EncodeOptions) ([]byte, error) {
	if !f.Command.Valid() {
		return dst, newError(ErrUnencodable, "cannot encode invalid command "+f.Command.String())
	}
	if !v.Valid() {
		return dst, newError(ErrUnencodable, "cannot encode for invalid version "+v.String())
	}
	escaped := v.escapes() && !f.Command.IsConnect()
	v12 := v == V12
	orig := dst
	dst = append(dst, f.Command.String()...)
	dst = append(dst, '\n')
	wroteLength := false
	for _, h := range f.Headers {
		if err := checkHeader(h, escaped, v12, f.Command, v); err != nil {
			return orig, err
		}
		if !wroteLength && h.Name == HeaderContentLength {
			dst = appendContentLength(dst, len(f.Body))
			wroteLength = true
			continue
		}
		if escaped {
			dst = appendEscaped(dst, h.Name, v12)
			dst = append(dst, ':')
			dst = appendEscaped(dst, h.Value, v12)
		} else {
			dst = append(dst, h.Name...)
			dst = append(dst, ':')
			dst = append(dst, h.Value...)
		}
		dst = append(dst, '\n')
	}
	if !wroteLength && len(f.Body) > 0 && (opts.ContentLength || bytes.IndexByte(f.Body, 0) >= 0) {
		dst = appendContentLength(dst, len(f.Body))
	}
	return append(dst, '\n'), nil
}

// appendContentLength appends a content-length header line.
func appendContentLength(dst []byte, n int) []byte {
	dst = append(dst, HeaderContentLength+":"...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\n')
}

// checkHeader reports whether h can be encoded; escaped tells whether the
// frame's headers are escaped, v12 whether the version is 1.2 (so that \r is
// among the escapes when escaped is set); c and v serve the error reason.
func checkHeader(h Header, escaped, v12 bool, c Command, v Version) error {
	bad := func(why string) error {
		return newError(ErrUnencodable, "cannot encode header "+quoteForReason([]byte(h.Name))+
			" of a "+c.String()+" frame in STOMP "+v.String()+": "+why)
	}
	if h.Name == "" {
		return bad("empty name")
	}
	if strings.IndexByte(h.Name, 0) >= 0 || strings.IndexByte(h.Value, 0) >= 0 {
		return bad("NUL octet")
	}
	if !escaped {
		if strings.IndexByte(h.Name, ':') >= 0 {
			return bad("colon in the name")
		}
		if strings.IndexByte(h.Name, '\n') >= 0 || strings.IndexByte(h.Value, '\n') >= 0 {
			return bad("line feed")
		}
	}
	if !(escaped && v12) && strings.HasSuffix(h.Value, "\r") {
		return bad("value ends with a carriage return")
	}
	return nil
}

// Writer encodes frames for one connection into a buffer and writes the
// buffer to the underlying [io.Writer] when it fills up or on
// [Writer.Flush], so that a server can queue many frames and send them with
// one system call. A body at least as large as the buffer is not copied into
// it: the buffered octets, the body and its NUL go out together as a
// vectored write (net.Buffers).
//
// The first error of the underlying writer is sticky: every later call
// returns it. A Writer is not safe for concurrent use.
type Writer struct {
	w       io.Writer
	buf     []byte
	size    int
	version Version
	opts    EncodeOptions
	err     error
}

// NewWriter returns a Writer with a [DefaultWriteBufferSize] buffer that
// encodes for STOMP 1.0 until [Writer.SetVersion].
func NewWriter(w io.Writer, opts EncodeOptions) *Writer {
	return NewWriterSize(w, DefaultWriteBufferSize, opts)
}

// NewWriterSize is [NewWriter] with a buffer of size octets (at least 64).
func NewWriterSize(w io.Writer, size int, opts EncodeOptions) *Writer {
	size = max(size, 64)
	return &Writer{w: w, buf: make([]byte, 0, size), size: size, version: V10, opts: opts}
}

// SetVersion sets the version the frames that follow are encoded for. An
// invalid version is treated as STOMP 1.0.
func (w *Writer) SetVersion(v Version) {
	if !v.Valid() {
		v = V10
	}
	w.version = v
}

// Version returns the version frames are encoded for.
func (w *Writer) Version() Version { return w.version }

// Buffered returns how many octets wait in the buffer for Flush.
func (w *Writer) Buffered() int { return len(w.buf) }

// WriteFrame encodes f into the buffer (see [AppendFrame] for the rules),
// writing the buffer out if it fills up. A frame that cannot be encoded is
// refused with an [*Error] of kind ErrUnencodable and nothing of it is
// buffered; the Writer stays usable.
func (w *Writer) WriteFrame(f *Frame) error {
	if w.err != nil {
		return w.err
	}
	if len(f.Body) >= w.size {
		head, err := appendHead(w.buf, f, w.version, w.opts)
		if err != nil {
			return err
		}
		bufs := net.Buffers{head, f.Body, []byte{0}}
		_, err = bufs.WriteTo(w.w)
		w.buf = head[:0]
		w.err = err
		return err
	}
	buf, err := AppendFrame(w.buf, f, w.version, w.opts)
	if err != nil {
		return err
	}
	w.buf = buf
	if len(w.buf) >= w.size {
		return w.Flush()
	}
	return nil
}

// WriteHeartBeat buffers a heart-beat: a single LF.
func (w *Writer) WriteHeartBeat() error {
	if w.err != nil {
		return w.err
	}
	w.buf = AppendHeartBeat(w.buf)
	if len(w.buf) >= w.size {
		return w.Flush()
	}
	return nil
}

// Flush writes the buffered octets to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	w.buf = w.buf[:0]
	w.err = err
	return err
}
