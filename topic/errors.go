package topic

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a rejected topic operation: the Kafka error code a real broker
// returns for it, and a message for the response's ErrorMessage field.
//
// It unwraps to the kerr sentinel, so callers test it with
// errors.Is(err, kerr.TopicAlreadyExists) and broker/errors.go finds the code
// with errors.As(err, new(*kerr.Error)). A type rather than fmt.Errorf("%w")
// keeps Detail free of kerr's "CODE: description" text, so the handler can put
// it in ErrorMessage as Kafka does ("Topic 'x' already exists.").
type Error struct {
	// Code is the Kafka error the request gets, e.g. kerr.InvalidConfig.
	Code *kerr.Error
	// Detail says what was wrong, in lower case, without the "topic: " prefix.
	Detail string
}

// Error returns "topic: " followed by the detail and the Kafka error name.
func (e *Error) Error() string {
	return "topic: " + e.Detail + " (" + e.Code.Message + ")"
}

// Unwrap returns the kerr sentinel.
func (e *Error) Unwrap() error { return e.Code }

// errorf builds an *Error for code with a formatted detail.
func errorf(code *kerr.Error, format string, args ...any) error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// CorruptionError reports a topics file that cannot be trusted: unreadable
// JSON, a checksum mismatch, an unknown format version or contents that break
// an invariant (duplicate names or ids, an all-zero id, an invalid config).
// Open returns it instead of guessing, so an operator can restore the file;
// it never panics on what it reads.
type CorruptionError struct {
	// File is the path of the topics file.
	File string
	// Reason says what is wrong with it.
	Reason string
}

// Error names the file and the reason.
func (e *CorruptionError) Error() string {
	return "topic: corrupt topics file " + e.File + ": " + e.Reason
}
