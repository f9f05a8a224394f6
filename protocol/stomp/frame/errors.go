package frame

import (
	"io"
	"strconv"
)

// ErrorKind classifies an [*Error]. Each kind is itself an error value, so
// errors.Is(err, ErrLineTooLong) tells whether err is an *Error of that kind.
type ErrorKind uint8

// The kinds of [*Error].
const (
	// ErrUnknownCommand: the command line is not one of the STOMP commands.
	ErrUnknownCommand ErrorKind = iota + 1
	// ErrLineTooLong: a command or header line exceeds Limits.MaxLineLength.
	ErrLineTooLong
	// ErrTooManyHeaders: a frame has more than Limits.MaxHeaders headers.
	ErrTooManyHeaders
	// ErrHeadersTooLarge: a frame's header lines together exceed
	// Limits.MaxHeaderBytes.
	ErrHeadersTooLarge
	// ErrBodyTooLarge: a content-length or a NUL-terminated body exceeds
	// Limits.MaxBodySize.
	ErrBodyTooLarge
	// ErrMalformedHeader: a header line has no colon or an empty name.
	ErrMalformedHeader
	// ErrInvalidEscape: a header holds a backslash sequence the version does
	// not define.
	ErrInvalidEscape
	// ErrInvalidContentLength: content-length is not a non-negative decimal.
	ErrInvalidContentLength
	// ErrMissingNUL: the content-length octets of a body are not followed by
	// the NUL octet.
	ErrMissingNUL
	// ErrMalformedFrame: any other violation of the frame syntax, such as a
	// NUL octet in the frame head or a carriage return not followed by a
	// line feed.
	ErrMalformedFrame
	// ErrTruncated: the stream ended in the middle of a frame. Such an
	// error also matches io.ErrUnexpectedEOF.
	ErrTruncated
	// ErrUnsupportedVersion: version negotiation found no common version.
	ErrUnsupportedVersion
	// ErrInvalidHeartBeat: a heart-beat header is malformed.
	ErrInvalidHeartBeat
	// ErrUnencodable: the writer was given a frame that cannot be encoded in
	// the requested version (an invalid command, or a header that the
	// version cannot represent).
	ErrUnencodable
)

var errorKindNames = [...]string{
	ErrUnknownCommand:       "unknown command",
	ErrLineTooLong:          "line too long",
	ErrTooManyHeaders:       "too many headers",
	ErrHeadersTooLarge:      "headers too large",
	ErrBodyTooLarge:         "body too large",
	ErrMalformedHeader:      "malformed header",
	ErrInvalidEscape:        "invalid escape sequence",
	ErrInvalidContentLength: "invalid content-length",
	ErrMissingNUL:           "missing NUL after body",
	ErrMalformedFrame:       "malformed frame",
	ErrTruncated:            "truncated frame",
	ErrUnsupportedVersion:   "unsupported version",
	ErrInvalidHeartBeat:     "invalid heart-beat",
	ErrUnencodable:          "unencodable frame",
}

// String returns a short name of the kind.
func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) && errorKindNames[k] != "" {
		return errorKindNames[k]
	}
	return "ErrorKind(" + strconv.Itoa(int(k)) + ")"
}

// Error makes ErrorKind usable as a target of errors.Is.
func (k ErrorKind) Error() string { return "stomp frame: " + k.String() }

// Error is the error returned for a frame that breaks the protocol or a
// limit, for failed negotiations and for frames the writer cannot encode.
type Error struct {
	// Kind classifies the error.
	Kind ErrorKind
	// Reason is a short, single-line description without a trailing period,
	// suitable for the message header of an ERROR frame, for example
	// "header line too long (limit 8192)". It is printable ASCII (octets
	// taken from the input are quoted and cut short), so it can be written
	// as a header value in any STOMP version.
	Reason string
}

// Error implements the error interface.
func (e *Error) Error() string { return "stomp frame: " + e.Reason }

// Is reports whether target is e's Kind, so that errors.Is(err,
// ErrLineTooLong) works; a truncated frame also matches io.ErrUnexpectedEOF.
func (e *Error) Is(target error) bool {
	if k, ok := target.(ErrorKind); ok {
		return k == e.Kind
	}
	return e.Kind == ErrTruncated && target == io.ErrUnexpectedEOF
}

// newError builds an *Error.
func newError(kind ErrorKind, reason string) *Error {
	return &Error{Kind: kind, Reason: reason}
}

// limitError builds an *Error for an exceeded limit.
func limitError(kind ErrorKind, what string, limit int) *Error {
	return &Error{Kind: kind, Reason: what + " (limit " + strconv.Itoa(limit) + ")"}
}

// quoteForReason renders untrusted bytes for an error reason: quoted, with
// control octets escaped, and cut to a few dozen octets so that an attacker
// cannot make the reason large.
func quoteForReason(b []byte) string {
	const max = 32
	cut := len(b) > max
	if cut {
		b = b[:max]
	}
	s := strconv.QuoteToASCII(string(b))
	if cut {
		s += "..."
	}
	return s
}
