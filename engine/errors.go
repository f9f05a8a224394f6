package engine

import (
	"errors"
	"fmt"
)

// Code classifies an engine error the way JMS classifies its exceptions, so
// that protocol front-ends can map it to their own error conditions.
type Code uint8

// Error codes, named after the JMS exceptions they stand for.
const (
	// CodeJMS is a general failure (JMSException).
	CodeJMS Code = iota + 1
	// CodeIllegalState is an operation at the wrong time (IllegalStateException).
	CodeIllegalState
	// CodeInvalidClientID is a client ID refused (InvalidClientIDException).
	CodeInvalidClientID
	// CodeInvalidDestination is an unknown or deleted destination (InvalidDestinationException).
	CodeInvalidDestination
	// CodeInvalidSelector is a malformed selector (InvalidSelectorException).
	CodeInvalidSelector
	// CodeResourceAllocation is a quota or limit reached (ResourceAllocationException).
	CodeResourceAllocation
	// CodeMessageFormat is a bad message or property value (MessageFormatException).
	CodeMessageFormat
	// CodeTransactionRolledBack is a commit that rolled back instead (TransactionRolledBackException).
	CodeTransactionRolledBack
	// CodeConsumerClosed is a consumer closed by the broker (ConsumerClosedException).
	CodeConsumerClosed
	// CodeSecurity is an action the connection's user may not take
	// (JMSSecurityException).
	CodeSecurity
)

// String returns the JMS exception name of the code.
func (c Code) String() string {
	switch c {
	case CodeIllegalState:
		return "IllegalStateException"
	case CodeInvalidClientID:
		return "InvalidClientIDException"
	case CodeInvalidDestination:
		return "InvalidDestinationException"
	case CodeInvalidSelector:
		return "InvalidSelectorException"
	case CodeResourceAllocation:
		return "ResourceAllocationException"
	case CodeMessageFormat:
		return "MessageFormatException"
	case CodeTransactionRolledBack:
		return "TransactionRolledBackException"
	case CodeConsumerClosed:
		return "ConsumerClosedException"
	case CodeSecurity:
		return "JMSSecurityException"
	}
	return "JMSException"
}

// Error is an engine error with its JMS classification.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

// Error returns the message, with the wrapped cause if any.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same Code, so that
// errors.Is(err, engine.ErrIllegalState) works.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Msg == "" && t.Code == e.Code
	}
	return false
}

// Sentinels for errors.Is; each matches any engine error of its code.
var (
	ErrIllegalState       = &Error{Code: CodeIllegalState}
	ErrInvalidClientID    = &Error{Code: CodeInvalidClientID}
	ErrInvalidDestination = &Error{Code: CodeInvalidDestination}
	ErrInvalidSelector    = &Error{Code: CodeInvalidSelector}
	ErrResourceAllocation = &Error{Code: CodeResourceAllocation}
	ErrMessageFormat      = &Error{Code: CodeMessageFormat}
	ErrConsumerClosed     = &Error{Code: CodeConsumerClosed}
)

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of an engine error in err's chain, or CodeJMS.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeJMS
}
