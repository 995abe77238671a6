package txn

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ForVersion adapts an error of this package to what a client of the
// given request (API key and version) understands, as Kafka's KafkaApis
// and AddPartitionsToTxnManager do; other errors pass unchanged:
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
func ForVersion(key kmsg.Key, version int16, err error) error {
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
	case kmsg.Produce:
		switch ke {
		case kerr.ProducerFenced:
			to = kerr.InvalidProducerEpoch
		case kerr.TransactionAbortable:
			if version <= 10 {
				to = kerr.InvalidTxnState
			}
		case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
			to = kerr.NotEnoughReplicas
		}
	case kmsg.TxnOffsetCommit:
		switch ke {
		case kerr.ProducerFenced:
			to = kerr.InvalidProducerEpoch
		case kerr.TransactionAbortable:
			if version < 4 {
				to = kerr.InvalidTxnState
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
