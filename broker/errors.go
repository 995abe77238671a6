package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/kbroker/kbroker/log"
)

// This file is the one place where Go errors become Kafka error codes.
// errorCode is the base mapping; the two others are what Kafka itself
// layers on top of it for particular answers:
//
//   - forVersion: the code a client of an older request version
//     understands (transaction errors), as Kafka's KafkaApis does;
//   - coordinatorWriteCode: the code for a failed write of coordinator
//     state (offset commits and deletes, group deletion), as Kafka's
//     CoordinatorRuntime maps append errors.
//
// errors_test.go holds the table of all three.

// errorCode turns a Go error into a Kafka error code: errors that wrap a
// kerr code keep it; store failures become KAFKA_STORAGE_ERROR; anything
// else is UNKNOWN_SERVER_ERROR, which the caller should log since it means
// a bug or an unexpected failure.
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

// versionCode is errorCode of forVersion: the code for an answer to the
// given request (API key and version).
func versionCode(key kmsg.Key, version int16, err error) int16 {
	return errorCode(forVersion(key, version, err))
}

// forVersion adapts an error (of the transaction coordinator, mostly) to
// what a client of the given request (API key and version) understands,
// as Kafka's KafkaApis and AddPartitionsToTxnManager do; other errors pass
// unchanged:
//
//   - InitProducerId below v4, AddPartitionsToTxn, AddOffsetsToTxn and
//     EndTxn below v2 predate PRODUCER_FENCED (KIP-588): it becomes
//     INVALID_PRODUCER_EPOCH.
//   - Produce (Verify of a transactional batch): PRODUCER_FENCED becomes
//     INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE becomes
//     INVALID_TXN_STATE up to v10 (clients before KIP-890 know only
//     that); CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
//     COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR become
//     NOT_ENOUGH_REPLICAS, which every producer retries without a
//     metadata refresh (ReplicaManager.handleProduceAppend).
//   - TxnOffsetCommit (Verify of the group's partition): PRODUCER_FENCED
//     becomes INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE becomes
//     INVALID_TXN_STATE below v4.
//
// It returns an error rather than a code because TxnOffsetCommit hands the
// result on to the offsets layer, which fills the per-partition codes.
func forVersion(key kmsg.Key, version int16, err error) error {
	if err == nil {
		// The common answer, before errors.As (whose target escapes).
		return nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	to := ke
	switch key {
	case kmsg.InitProducerID:
		if version < 4 && ke == kerr.ProducerFenced {
			to = kerr.InvalidProducerEpoch
		}
	case kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn:
		if version < 2 && ke == kerr.ProducerFenced {
			to = kerr.InvalidProducerEpoch
		}
	case kmsg.Produce, kmsg.TxnOffsetCommit:
		// The first version that knows TRANSACTION_ABORTABLE (KIP-890).
		abortable := int16(11)
		if key == kmsg.TxnOffsetCommit {
			abortable = 4
		}
		switch ke {
		case kerr.ProducerFenced:
			to = kerr.InvalidProducerEpoch
		case kerr.TransactionAbortable:
			if version < abortable {
				to = kerr.InvalidTxnState
			}
		case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
			if key == kmsg.Produce {
				to = kerr.NotEnoughReplicas
			}
		}
	}
	if to == ke {
		return err
	}
	// The original code stays in the text only: the error carries one
	// Kafka code.
	return fmt.Errorf("%v: %w", err, to)
}

// coordinatorWriteCode maps a failed write of coordinator state to the
// code clients expect (Kafka's CoordinatorRuntime error mapping of
// appendRecordsErrorMapping): they retry COORDINATOR_NOT_AVAILABLE and
// look for the coordinator again on NOT_COORDINATOR.
func coordinatorWriteCode(err error) int16 {
	code := errorCode(err)
	switch code {
	case 0:
		return 0
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return code
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
