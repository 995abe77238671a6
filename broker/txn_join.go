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
// TxnOffsetCommit) would then meet CONCURRENT_TRANSACTIONS, which Produce
// hands to the client as NOT_ENOUGH_REPLICAS; clients retry that only
// after a metadata refresh (franz-go waits its 5 s metadata minimum age),
// long enough for a short delivery timeout to expire. Kafka retries the
// add on the broker instead (AddPartitionsToTxnManager, every
// add.partitions.to.txn.retry.backoff.ms 20 for up to ...backoff.max.ms
// 100). Here the coordinator parks the add until the previous
// transaction's completion is durable and answers it then
// (txn.Coordinator.AddPartitionsV2), bounded by the request's timeout:
// Produce's TimeoutMillis, and for TxnOffsetCommit, which has none,
// txnOffsetCommitJoinWait.
const txnOffsetCommitJoinWait = 5 * time.Second

// joinNeeded reports whether the coordinator's Verify answer for a
// partition means the partition must be added to the transaction first:
// it is not in it, or the previous transaction is still completing (by
// the time that is done the partition is not in the new one).
func joinNeeded(err error) bool {
	return errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.ConcurrentTransactions)
}

// addPartitionsV2 adds tps to the transaction of txnID under transactions
// v2 and waits until that is durable; a busy transactional id is waited
// for up to wait. It returns the coordinator's answer.
func addPartitionsV2(coord *txn.Coordinator, txnID string, pid int64, epoch int16, tps []txn.TopicPartition, wait time.Duration) error {
	ch := make(chan error, 1)
	coord.AddPartitionsV2(txnID, pid, epoch, tps, wait, func(err error) { ch <- err })
	return <-ch
}
