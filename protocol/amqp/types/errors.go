package types

import (
	"strconv"
	"strings"
)

// ErrorKind classifies a decode or encode failure. Every *[DecodeError]
// and *[EncodeError] wraps one; test with errors.Is.
type ErrorKind string

// Error returns the kind's description.
func (k ErrorKind) Error() string { return string(k) }

// The kinds of decode and encode failure.
const (
	// ErrTruncated: a value runs past the end of its input or of the
	// list, map or array that holds it.
	ErrTruncated ErrorKind = "value runs past the end of the input"
	// ErrLength: a size or element count is larger than the bytes that
	// remain, checked before anything is allocated.
	ErrLength ErrorKind = "size or count larger than the remaining input"
	// ErrFormatCode: a format code that is not valid for the expected
	// type, or not an AMQP format code at all.
	ErrFormatCode ErrorKind = "unexpected format code"
	// ErrMissingField: a mandatory field is absent or null.
	ErrMissingField ErrorKind = "mandatory field is missing"
	// ErrDepth: lists, maps, arrays and described values nest deeper
	// than MaxDepth.
	ErrDepth ErrorKind = "values nest too deeply"
	// ErrDescriptor: a described value has a descriptor that is not the
	// expected one, or that no known type has.
	ErrDescriptor ErrorKind = "unexpected descriptor"
	// ErrMalformed: an encoding that is internally inconsistent, such as
	// a list whose elements do not fill its size, a map with an odd
	// number of elements, a message whose sections are out of order.
	ErrMalformed ErrorKind = "malformed encoding"
	// ErrTrailingBytes: input left over after a value that should fill it.
	ErrTrailingBytes ErrorKind = "trailing bytes after the value"
	// ErrUnsupported: (encoding) a Go value that has no AMQP encoding,
	// such as an int (use int32 or int64) or an array of mixed types.
	ErrUnsupported ErrorKind = "Go value has no AMQP encoding"
	// ErrTooLarge: (encoding) a value too large for a 32-bit AMQP size.
	ErrTooLarge ErrorKind = "value too large to encode"
)

// MaxDepth is how deeply lists, maps, arrays and described values may
// nest in decoded input. A performative with a delivery state with an
// error with an info map uses 5 levels.
const MaxDepth = 32

// DecodeError reports a decoding failure: which AMQP type (and composite
// field, if any) was being decoded at which offset. Err is either an
// [ErrorKind] (possibly wrapped with detail) or the *DecodeError of the
// nested value that failed, so the chain reads from the outer value to
// the inner one.
type DecodeError struct {
	Type   string // AMQP type name, such as "attach", "map" or "uint"
	Field  string // field name within Type, if the failure is in a field
	Offset int    // byte offset in the input where Type (or Field) starts
	Err    error  // the cause: an ErrorKind or a nested *DecodeError
}

// Error returns the failure path, such as
// "amqp: decode transfer.state at 14: rejected.error at 17: ...".
func (e *DecodeError) Error() string {
	var sb strings.Builder
	sb.WriteString("amqp: decode ")
	for cur := e; ; {
		sb.WriteString(cur.Type)
		if cur.Field != "" {
			sb.WriteByte('.')
			sb.WriteString(cur.Field)
		}
		sb.WriteString(" at ")
		sb.WriteString(strconv.Itoa(cur.Offset))
		sb.WriteString(": ")
		if next, ok := cur.Err.(*DecodeError); ok && next != nil {
			cur = next
			continue
		}
		if cur.Err == nil {
			sb.WriteString("unknown error")
		} else {
			sb.WriteString(cur.Err.Error())
		}
		return sb.String()
	}
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError reports an encoding failure in a type and field.
type EncodeError struct {
	Type  string // AMQP type name
	Field string // field name within Type, if any
	Err   error  // the cause: an ErrorKind or a nested *EncodeError
}

// Error returns the failure path, such as
// "amqp: encode open.properties: map value: Go value has no AMQP encoding: int".
func (e *EncodeError) Error() string {
	var sb strings.Builder
	sb.WriteString("amqp: encode ")
	for cur := e; ; {
		sb.WriteString(cur.Type)
		if cur.Field != "" {
			sb.WriteByte('.')
			sb.WriteString(cur.Field)
		}
		sb.WriteString(": ")
		if next, ok := cur.Err.(*EncodeError); ok && next != nil {
			cur = next
			continue
		}
		if cur.Err == nil {
			sb.WriteString("unknown error")
		} else {
			sb.WriteString(cur.Err.Error())
		}
		return sb.String()
	}
}

// Unwrap returns the cause.
func (e *EncodeError) Unwrap() error { return e.Err }

// fieldDecodeErr wraps the failure of a composite's field.
func fieldDecodeErr(typ, field string, off int, err error) error {
	return &DecodeError{Type: typ, Field: field, Offset: off, Err: err}
}

// fieldEncodeErr wraps the failure of a composite's field.
func fieldEncodeErr(typ, field string, err error) error {
	return &EncodeError{Type: typ, Field: field, Err: err}
}
