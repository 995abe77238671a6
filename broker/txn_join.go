package broker

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/txn"
)

// Under transactions v2 a producer begins its next transaction as soon as
// EndTxn answers, while the coordinator is still writing the previous
// one's markers and completion record. Its first Produce (or
// TxnOffsetCommit) then meets CONCURRENT_TRANSACTIONS, which Produce hands
// to the client as NOT_ENOUGH_REPLICAS; clients retry that only after a
// metadata refresh (franz-go waits its 5 s metadata minimum age), long
// enough for a short delivery timeout to expire. Kafka retries the add on
// the broker instead (AddPartitionsToTxnManager, with
// add.partitions.to.txn.retry.backoff.ms 20 and ...backoff.max.ms 100).
// kbroker does the same with a longer bound, since on one node the wait is
// only the coordinator's own writes, which in sync flush mode are two
// fsyncs.
const (
	joinRetryBackoff = 20 * time.Millisecond
	joinRetryMax     = time.Second
)

// joinNeeded reports whether the coordinator's Verify answer for a
// partition means the partition must be added to the transaction first:
// it is not in it, or the previous transaction is still completing (by
// the time that is done the partition is not in the new one).
func joinNeeded(err error) bool {
	return errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.ConcurrentTransactions)
}

// addPartitionsV2 adds tps to the transaction of txnID under transactions
// v2 and waits until that is durable, retrying CONCURRENT_TRANSACTIONS
// every joinRetryBackoff for up to joinRetryMax; it returns the
// coordinator's last answer.
func addPartitionsV2(coord *txn.Coordinator, txnID string, pid int64, epoch int16, tps []txn.TopicPartition) error {
	deadline := time.Now().Add(joinRetryMax)
	ch := make(chan error, 1)
	for {
		coord.AddPartitionsV2(txnID, pid, epoch, tps, func(err error) { ch <- err })
		err := <-ch
		if !errors.Is(err, kerr.ConcurrentTransactions) || time.Now().Add(joinRetryBackoff).After(deadline) {
			return err
		}
		time.Sleep(joinRetryBackoff)
	}
}
