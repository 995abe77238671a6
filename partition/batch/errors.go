package batch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a batch this package refused. It unwraps to the Kafka error code
// the produce response should carry, so callers test it with
// errors.Is(err, kerr.CorruptMessage) and the broker's errorCode mapping finds
// the code with errors.As.
//
// Record is the index of the offending record inside the batch, or -1 when
// the batch as a whole is at fault. Produce v8+ responses can report it
// (KIP-467 RecordErrors, Kafka's ProduceResponse.RecordError.batchIndex).
type Error struct {
	Code   *kerr.Error
	Record int
	Reason string
	// InLog is set on the batch faults Kafka finds in the log layer
	// (UnifiedLog.analyzeAndValidateRecords' base offset, LogValidator's
	// header rules): ReplicaManager answers those with the partition's log
	// start offset, and those found before (ProduceRequest.validateRecords)
	// or corrupt and oversized batches with -1.
	InLog bool
}

// Error formats as "batch: CODE: [record N: ]reason".
func (e *Error) Error() string {
	if e.Record >= 0 {
		return fmt.Sprintf("batch: %s: record %d: %s", e.Code.Message, e.Record, e.Reason)
	}
	return fmt.Sprintf("batch: %s: %s", e.Code.Message, e.Reason)
}

// Unwrap returns the Kafka error code.
func (e *Error) Unwrap() error { return e.Code }

// logError is newError for a batch fault Kafka finds in the log layer
// (Error.InLog).
func logError(code *kerr.Error, format string, args ...any) *Error {
	e := newError(code, -1, format, args...)
	e.InLog = true
	return e
}

// newError builds an *Error. Only error paths call it, so the happy path of
// Validate stays free of allocations.
func newError(code *kerr.Error, record int, format string, args ...any) *Error {
	return &Error{Code: code, Record: record, Reason: fmt.Sprintf(format, args...)}
}
