package consumer

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// codedError is a Kafka error code with Kafka's message for it: Error()
// is the message (for a response's error message field) and errors.As
// finds the *kerr.Error (for its code).
type codedError struct {
	code *kerr.Error
	msg  string
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// errorf returns code with a formatted message.
func errorf(code *kerr.Error, format string, args ...any) error {
	return &codedError{code: code, msg: fmt.Sprintf(format, args...)}
}

// NewError returns an error with Kafka's code and message, as this
// package's own errors are: for the classic coordinator's answers on the
// consumer side of the namespace.
func NewError(code *kerr.Error, msg string) error { return &codedError{code: code, msg: msg} }
