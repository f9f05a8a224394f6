package amqp091

import (
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// amqpError is a refusal with a 0-9-1 reply code: a soft error (a
// channel exception) closes the channel with channel.close, a hard one
// (a connection exception, spec.IsHardError) the connection with
// connection.close. classID and methodID name the method that failed.
type amqpError struct {
	code              uint16
	text              string
	classID, methodID uint16
}

func (e *amqpError) Error() string { return e.text }

// hard reports whether e closes the connection.
func (e *amqpError) hard() bool { return spec.IsHardError(e.code) }

// replyNames are the names RabbitMQ and the specification print before a
// reply text ("NOT_FOUND - no queue 'q'").
var replyNames = map[uint16]string{
	spec.ReplySuccess: "OK", spec.ContentTooLarge: "CONTENT_TOO_LARGE", spec.NoRoute: "NO_ROUTE",
	spec.NoConsumers: "NO_CONSUMERS", spec.ConnectionForced: "CONNECTION_FORCED", spec.InvalidPath: "INVALID_PATH",
	spec.AccessRefused: "ACCESS_REFUSED", spec.NotFound: "NOT_FOUND", spec.ResourceLocked: "RESOURCE_LOCKED",
	spec.PreconditionFailed: "PRECONDITION_FAILED", spec.FrameError: "FRAME_ERROR", spec.SyntaxError: "SYNTAX_ERROR",
	spec.CommandInvalid: "COMMAND_INVALID", spec.ChannelError: "CHANNEL_ERROR", spec.UnexpectedFrame: "UNEXPECTED_FRAME",
	spec.ResourceError: "RESOURCE_ERROR", spec.NotAllowed: "NOT_ALLOWED", spec.NotImplemented: "NOT_IMPLEMENTED",
	spec.InternalError: "INTERNAL_ERROR",
}

// replyText is the reply text of code with its name in front, cut to the
// 255 octets of a short string.
func replyText(code uint16, text string) string {
	s := replyNames[code] + " - " + text
	if len(s) > 255 {
		s = s[:255]
	}
	return s
}

// refuse makes an amqpError for the method m (nil: none).
func refuse(code uint16, m spec.Method, format string, args ...any) *amqpError {
	e := &amqpError{code: code, text: fmt.Sprintf(format, args...)}
	if m != nil {
		e.classID, e.methodID = m.ClassID(), m.MethodID()
	}
	return e
}

// asAMQPError maps an engine error (or one of ours) to its reply code: a
// refused authorization is 403 ACCESS_REFUSED, a missing destination 404
// NOT_FOUND, a bad selector, quota or illegal state 406
// PRECONDITION_FAILED (all channel exceptions); anything else is 541
// INTERNAL_ERROR, which closes the connection.
func asAMQPError(err error, m spec.Method) *amqpError {
	var ae *amqpError
	if errors.As(err, &ae) {
		if ae.classID == 0 && m != nil {
			ae.classID, ae.methodID = m.ClassID(), m.MethodID()
		}
		return ae
	}
	code := uint16(spec.InternalError)
	switch engine.CodeOf(err) {
	case engine.CodeSecurity:
		code = spec.AccessRefused
	case engine.CodeInvalidDestination:
		code = spec.NotFound
	case engine.CodeInvalidSelector, engine.CodeResourceAllocation, engine.CodeIllegalState,
		engine.CodeMessageFormat, engine.CodeTransactionRolledBack, engine.CodeConsumerClosed:
		code = spec.PreconditionFailed
	}
	return refuse(code, m, "%v", err)
}
