package spec

import (
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf8"
)

// Method is an AMQP 0-9-1 method: one generated struct per method of the
// XML, such as [BasicPublish].
type Method interface {
	// ClassID and MethodID are the method's ids on the wire.
	ClassID() uint16
	MethodID() uint16
	// Name is the XML's name, such as "basic.publish".
	Name() string
	// Synchronous is the XML's synchronous="1": the method expects a reply
	// or is one.
	Synchronous() bool
	// HasContent is the XML's content="1": a content header and body
	// frames follow the method frame.
	HasContent() bool
	// Append appends the method's arguments (what follows the class and
	// method ids), consecutive bits packed into octets.
	Append(b []byte) []byte
	// Decode decodes the method's arguments, which must fill b exactly,
	// into the receiver; the error is an [*Error] naming the method and
	// field.
	Decode(b []byte) error
}

// MethodIDs returns the class and method ids at the start of a method
// frame's payload, so that a caller can decode into a struct it keeps
// (see [Method.Decode]).
func MethodIDs(payload []byte) (classID, methodID uint16, err error) {
	if len(payload) < 4 {
		return 0, 0, errorf(FrameError, "method frame payload of %d bytes: too short for the class and method ids", len(payload))
	}
	return binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]), nil
}

// DecodeMethod decodes a method frame's whole payload: the class and method
// ids, then the arguments, into a new value of the method's struct.
func DecodeMethod(payload []byte) (Method, error) {
	classID, methodID, err := MethodIDs(payload)
	if err != nil {
		return nil, err
	}
	m := NewMethod(classID, methodID)
	if m == nil {
		return nil, errorf(CommandInvalid, "unknown method: class %d, method %d", classID, methodID)
	}
	if err := m.Decode(payload[4:]); err != nil {
		return nil, err
	}
	return m, nil
}

// AppendMethod appends a method frame's payload: m's class and method ids,
// then its arguments.
func AppendMethod(b []byte, m Method) []byte {
	b = binary.BigEndian.AppendUint16(b, m.ClassID())
	b = binary.BigEndian.AppendUint16(b, m.MethodID())
	return m.Append(b)
}

// decoder reads the primitive types of AMQP 0-9-1 from buf. The first
// failure sticks: later reads return zero values, and finish reports it.
type decoder struct {
	buf  []byte
	off  int
	what string // the method or structure being decoded, for errors
	err  *Error
}

// failf records a decoding failure of field, unless one is recorded.
func (d *decoder) failf(field, format string, args ...any) {
	if d.err == nil {
		d.err = errorf(FrameError, "%s: %s: %s (at byte %d of %d)", d.what, field, fmt.Sprintf(format, args...), d.off, len(d.buf))
	}
}

// take returns the next n bytes, or nil after recording a failure.
func (d *decoder) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.buf)-d.off < n {
		d.failf(field, "truncated: %d bytes needed, %d left", n, len(d.buf)-d.off)
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// finish returns the recorded failure, or an error if bytes are left over.
func (d *decoder) finish() error {
	if d.err == nil && d.off != len(d.buf) {
		d.err = errorf(FrameError, "%s: %d bytes after the last field", d.what, len(d.buf)-d.off)
	}
	if d.err != nil {
		return d.err
	}
	return nil
}

func (d *decoder) octet(field string) uint8 {
	b := d.take(field, 1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (d *decoder) short(field string) uint16 {
	b := d.take(field, 2)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

func (d *decoder) long(field string) uint32 {
	b := d.take(field, 4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

func (d *decoder) longlong(field string) uint64 {
	b := d.take(field, 8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// shortstr decodes a short string into *dst, keeping *dst (and allocating
// nothing) when it already holds the same bytes.
func (d *decoder) shortstr(field string, dst *string) {
	n := d.octet(field)
	b := d.take(field, int(n))
	if d.err != nil {
		*dst = ""
		return
	}
	if *dst != string(b) {
		*dst = string(b)
	}
}

// longstr appends a long string to dst (a copy, never aliasing the input).
func (d *decoder) longstr(field string, dst []byte) []byte {
	n := d.long(field)
	if d.err != nil {
		return dst
	}
	if uint64(n) > uint64(len(d.buf)-d.off) {
		d.failf(field, "long string of %d bytes, %d left", n, len(d.buf)-d.off)
		return dst
	}
	return append(dst, d.take(field, int(n))...)
}

func (d *decoder) timestamp(field string) time.Time {
	return timestampTime(d.longlong(field))
}

func (d *decoder) table(field string) Table {
	if d.err != nil {
		return nil
	}
	t, n, err := decodeTable(d.buf[d.off:], 0)
	if err != nil {
		d.failf(field, "%s", err.Msg)
		return nil
	}
	d.off += n
	return t
}

// timestampTime converts seconds since the epoch to a time.Time: 0 is the
// zero time, anything else a time in UTC.
func timestampTime(s uint64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(int64(s), 0).UTC()
}

// appendTimestamp appends t as seconds since the epoch (the zero time as 0).
func appendTimestamp(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.BigEndian.AppendUint64(b, 0)
	}
	return binary.BigEndian.AppendUint64(b, uint64(t.Unix()))
}

// appendShortstr appends s as a short string, cut to 255 bytes at a UTF-8
// character boundary if it is longer.
func appendShortstr(b []byte, s string) []byte {
	if len(s) > 255 {
		n := 255
		for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); i++ {
			n--
		}
		s = s[:n]
	}
	b = append(b, byte(len(s)))
	return append(b, s...)
}

// appendLongstr appends s as a long string.
func appendLongstr(b []byte, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}
