package spec

import (
	"fmt"
	"strconv"
)

// Error is a violation of the protocol found while reading a frame or
// decoding a payload. Code is the reply code a server closes the
// connection with (such as [FrameError] or [SyntaxError]); Msg says what
// was wrong, naming the method and field where there is one, and is fit
// for a connection.close reply-text.
//
// (The contract's name for this type was FrameError; that is also the
// generated reply-code constant of the XML's frame-error, so the type is
// Error, like the STOMP codec's.)
type Error struct {
	Code uint16
	Msg  string
}

// Error returns the message and the reply code's name.
func (e *Error) Error() string {
	return "amqp 0-9-1: " + e.Msg + " (" + replyName(e.Code) + ")"
}

// replyName returns the XML name of a reply code, such as "frame-error".
func replyName(code uint16) string {
	switch code {
	case FrameError:
		return "frame-error"
	case SyntaxError:
		return "syntax-error"
	case CommandInvalid:
		return "command-invalid"
	case UnexpectedFrame:
		return "unexpected-frame"
	case NotImplemented:
		return "not-implemented"
	case InternalError:
		return "internal-error"
	}
	return "reply code " + strconv.Itoa(int(code))
}

func errorf(code uint16, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}
