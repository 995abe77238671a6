package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	klog "github.com/kbroker/kbroker/log"
)

// errorCode is the one place that turns a Go error into a Kafka error code:
// errors that wrap a kerr code keep it; store failures become
// KAFKA_STORAGE_ERROR; anything else is UNKNOWN_SERVER_ERROR, which the
// caller should log since it means a bug or an unexpected failure.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, klog.ErrClosed), errors.Is(err, klog.ErrFault):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, klog.ErrEntryTooLarge):
		return kerr.MessageTooLarge.Code
	}
	var we *klog.WriteError
	if errors.As(err, &we) {
		return kerr.KafkaStorageError.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the text for a response's error message field: nil for
// success, else the error's text.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
