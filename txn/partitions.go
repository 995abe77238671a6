package txn

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AddPartitions adds partitions to the producer's transaction, starting
// it if none is open (TransactionCoordinator
// .handleAddPartitionsToTransaction, AddPartitionsToTxn v0–v3). It is all
// or nothing, as in Kafka: one answer for every partition, which the
// handler fans out (after its own checks: a partition of an unknown topic
// fails the request with OPERATION_NOT_ATTEMPTED for the others, before
// the coordinator is asked). The new state (Ongoing, the partitions, the
// start time if the transaction starts) is durable before done hears nil.
// done hears:
//
//   - nil: added, or every partition was already in the open transaction
//     (answered at once, as Kafka does), or tps is empty.
//   - INVALID_REQUEST: an empty transactional id.
//   - INVALID_PRODUCER_ID_MAPPING: unknown id, or another producer id.
//   - PRODUCER_FENCED: another epoch (the handler answers
//     INVALID_PRODUCER_EPOCH below v2, see broker/errors.go).
//   - CONCURRENT_TRANSACTIONS: a transition in flight, or the previous
//     transaction is still completing (PrepareCommit, PrepareAbort); the
//     client retries.
//   - the errors of a failed write or of Close (see EndTxn).
//
// done runs once, before AddPartitions returns or on another goroutine.
func (c *Coordinator) AddPartitions(txnID string, pid int64, epoch int16, tps []TopicPartition, done func(error)) {
	c.addPartitions(txnID, pid, epoch, tps, false, done)
}

// AddPartitionsV2 is AddPartitions for transactions v2 (KIP-890 part 2):
// a transactional Produce v12+ adds its partition, and TxnOffsetCommit
// v5+ its group's offsets partition, implicitly, before they write
// (Kafka's AddPartitionsToTxnManager with the addPartition operation).
// The transaction records that it runs under transactions v2. It answers
// as AddPartitions does.
func (c *Coordinator) AddPartitionsV2(txnID string, pid int64, epoch int16, tps []TopicPartition, done func(error)) {
	c.addPartitions(txnID, pid, epoch, tps, true, done)
}

func (c *Coordinator) addPartitions(txnID string, pid int64, epoch int16, tps []TopicPartition, v2 bool, done func(error)) {
	answer, ok := c.accept(txnID, done)
	if !ok {
		return
	}
	now := c.cfg.Now().UnixMilli()
	c.mu.Lock()
	t := c.mu.txns[txnID]
	var r rec
	var err error
	switch {
	case t == nil:
		err = codeError(kerr.InvalidProducerIDMapping, txnID, "unknown transactional id")
	case t.producerID != pid:
		err = codeError(kerr.InvalidProducerIDMapping, txnID, "producer id %d, not %d", pid, t.producerID)
	case t.epoch != epoch:
		err = codeError(kerr.ProducerFenced, txnID, "epoch %d, not %d", epoch, t.epoch)
	case t.pending != noState:
		err = codeError(kerr.ConcurrentTransactions, txnID, "moving to %s", t.pending)
	case t.state == PrepareCommit || t.state == PrepareAbort:
		err = codeError(kerr.ConcurrentTransactions, txnID, "in %s", t.state)
	case len(tps) == 0 || (t.state == Ongoing && t.hasAll(tps)):
		c.mu.Unlock()
		answer(nil)
		return
	case t.state != Ongoing && !t.state.expirable():
		err = codeError(kerr.UnknownServerError, txnID, "unexpected state %s", t.state)
	default:
		// prepareAddPartitions: the union, and a start time if the
		// transaction starts now.
		r = t.transit(Ongoing, now)
		r.v2 = v2
		if t.state != Ongoing {
			r.startMs = now
		}
		all := maps.Clone(t.partitions)
		if all == nil {
			all = make(map[TopicPartition]struct{}, len(tps))
		}
		for _, tp := range tps {
			all[tp] = struct{}{}
		}
		r.partitions = slices.SortedFunc(maps.Keys(all), compareTP)
		t.pending = Ongoing
	}
	c.mu.Unlock()
	if err != nil {
		answer(err)
		return
	}
	c.write(c.partitionOf(txnID), []rec{r}, func(err error) {
		if err != nil {
			c.resetPending(txnID, Ongoing)
		}
		answer(err)
	})
}

// AddOffsets adds the group's __consumer_offsets partition
// (Deps.GroupPartition) to the producer's transaction, so that its
// TxnOffsetCommits are committed or aborted with it (AddOffsetsToTxn,
// which Kafka handles as AddPartitionsToTxn of that partition). done hears
// what AddPartitions answers (PRODUCER_FENCED becomes
// INVALID_PRODUCER_EPOCH below AddOffsetsToTxn v2, see broker/errors.go).
func (c *Coordinator) AddOffsets(txnID string, pid int64, epoch int16, group string, done func(error)) {
	c.AddPartitions(txnID, pid, epoch, []TopicPartition{c.deps.GroupPartition(group)}, done)
}

// Verify reports whether tp is part of the open transaction of this
// producer (TransactionCoordinator.handleVerifyPartitionsInTransaction,
// KIP-890 part 1), for Produce of a transactional batch and for
// TxnOffsetCommit (with the group's partition) before they write. It
// answers at once:
//
//   - nil: tp was added to the Ongoing transaction of pid/epoch.
//   - INVALID_REQUEST: an empty transactional id.
//   - INVALID_PRODUCER_ID_MAPPING: unknown id, or another producer id.
//   - PRODUCER_FENCED: another epoch.
//   - CONCURRENT_TRANSACTIONS: the transaction is completing.
//   - TRANSACTION_ABORTABLE: tp is not in the transaction (or none is
//     open).
//   - COORDINATOR_NOT_AVAILABLE: after Close.
//
// Kafka's Produce and TxnOffsetCommit translate some of these for the
// client; broker/errors.go does it. Kafka verifies only a producer's first
// transactional batch on a partition (one without an open transaction of
// that producer there); the handler may do the same. As in Kafka, a
// transition in flight is not waited for: a partition counts once its
// addition is durable.
func (c *Coordinator) Verify(txnID string, pid int64, epoch int16, tp TopicPartition) error {
	if txnID == "" {
		return codeError(kerr.InvalidRequest, txnID, "empty transactional id")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return codeError(kerr.CoordinatorNotAvailable, txnID, "coordinator closed")
	}
	t := c.mu.txns[txnID]
	switch {
	case t == nil:
		return codeError(kerr.InvalidProducerIDMapping, txnID, "unknown transactional id")
	case t.producerID != pid:
		return codeError(kerr.InvalidProducerIDMapping, txnID, "producer id %d, not %d", pid, t.producerID)
	case t.epoch != epoch:
		return codeError(kerr.ProducerFenced, txnID, "epoch %d, not %d", epoch, t.epoch)
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return codeError(kerr.ConcurrentTransactions, txnID, "in %s", t.state)
	}
	if _, ok := t.partitions[tp]; !ok {
		return codeError(kerr.TransactionAbortable, txnID, "%s-%d is not in the transaction", tp.Topic, tp.Partition)
	}
	return nil
}
