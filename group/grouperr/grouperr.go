// Package grouperr is the error the group coordinators (classic, consumer,
// share, streams) answer with: a Kafka error code with Kafka's own message
// for it, so a response carries both as Kafka's would.
package grouperr

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

// New returns code with msg as its message.
func New(code *kerr.Error, msg string) error { return &codedError{code: code, msg: msg} }

// Errorf returns code with a formatted message.
func Errorf(code *kerr.Error, format string, args ...any) error {
	return &codedError{code: code, msg: fmt.Sprintf(format, args...)}
}
