package broker

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/coordlog"
	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
	"github.com/kbroker/kbroker/txn"
)

// transactions returns the transaction coordinator, opening it on first
// use. Like Kafka, the broker creates __transaction_state only when a
// transaction first needs it (FindCoordinator for a transactional id, a
// transactional InitProducerId); with create unset a missing topic means
// no transactions (nil, nil). After a restart the coordinator opens at
// start-up if the topic exists, so that transactions left in PrepareCommit
// or PrepareAbort are completed and open ones time out.
func (b *Broker) transactions(create bool) (*txn.Coordinator, error) {
	if c := b.txns.Load(); c != nil {
		return c, nil
	}
	b.txnsMu.Lock()
	defer b.txnsMu.Unlock()
	if c := b.txns.Load(); c != nil {
		return c, nil
	}
	parts, err := b.stateTopic(topic.TransactionTopic, b.cfg.TransactionTopicPartitions, create)
	if parts == nil || err != nil {
		return nil, err
	}
	c, err := txn.Open(txn.Config{
		Dir:                filepath.Join(b.cfg.DataDir, "metadata"),
		MaxTimeout:         b.cfg.TransactionMaxTimeout,
		AbortCheckInterval: b.cfg.TransactionAbortCheckInterval,
		IDExpiration:       b.cfg.TransactionalIDExpiration,
		SnapshotInterval:   b.cfg.OffsetsSnapshotInterval,
	}, b.store, parts, txn.Deps{
		NextProducerID: b.pids.Next,
		WriteMarkers:   b.writeMarkers,
		GroupPartition: b.groupPartition,
		V2:             b.txnV2,
	}, b.lg)
	if err != nil {
		return nil, err
	}
	b.txns.Store(c)
	return c, nil
}

// transactionCoordinator is transactions(true) for a request handler: a
// failure is COORDINATOR_NOT_AVAILABLE, which clients retry.
func (b *Broker) transactionCoordinator() (*txn.Coordinator, error) {
	c, err := b.transactions(true)
	if err != nil {
		b.lg.Error("open transaction coordinator", zap.Error(err))
		return nil, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
	}
	return c, nil
}

// groupPartition is the __consumer_offsets partition that holds a
// group's offsets (AddOffsetsToTxn adds it to the transaction).
func (b *Broker) groupPartition(groupID string) txn.TopicPartition {
	n := int(b.cfg.OffsetsTopicPartitions)
	if t, ok := b.topics.Get(topic.GroupMetadataTopic); ok {
		n = int(t.Partitions)
	}
	return txn.TopicPartition{Topic: topic.GroupMetadataTopic, Partition: int32(coordlog.PartitionFor(groupID, n))}
}

// ownCoordinatorEpoch is the coordinator epoch in the markers of this
// broker's transaction coordinator (partition.OwnCoordinatorEpoch): 0, as
// Kafka's single node has (the leader epoch of its __transaction_state
// partition never moves), or the higher epoch of an admin's marker for the
// producer, which must not fence the coordinator.
const ownCoordinatorEpoch = partition.OwnCoordinatorEpoch

// writeMarkers writes the end-transaction markers of a producer into every
// partition of its transaction, with transaction version tv (2 for
// transactions v2), and calls done once they are durable. A
// __consumer_offsets partition gets its marker through the offsets store,
// which makes the transaction's offsets visible (commit) or drops them
// (abort). A partition that no longer exists (its topic was deleted) needs
// no marker. The partitions whose marker could not be written are reported
// in a txn.MarkerError, so the coordinator retries only those.
func (b *Broker) writeMarkers(producerID int64, epoch int16, commit bool, tv int8, tps []txn.TopicPartition, done func(error)) {
	nowMs := time.Now().UnixMilli()
	var failed []txn.TopicPartition
	var firstErr error
	var maxEnd int64
	var offsetsParts []int32
	for _, tp := range tps {
		if tp.Topic == topic.GroupMetadataTopic {
			offsetsParts = append(offsetsParts, tp.Partition)
			continue
		}
		t, ok := b.topics.Get(tp.Topic)
		if !ok {
			continue
		}
		p := b.store.Partition(partition.TopicID(t.ID), tp.Partition)
		if p == nil {
			continue
		}
		res, err := p.AppendMarkerTV(producerID, epoch, commit, ownCoordinatorEpoch, tv, nowMs)
		if err != nil {
			failed = append(failed, tp)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		maxEnd = max(maxEnd, res.End)
	}
	finish := func(offsetsErr error) {
		b.store.SubmitDurable(maxEnd, func(err error) {
			switch {
			case err != nil:
				done(err) // nothing is known durable: retry them all
			case offsetsErr != nil || len(failed) > 0:
				if firstErr == nil {
					firstErr = offsetsErr
				}
				if offsetsErr != nil {
					for _, p := range offsetsParts {
						failed = append(failed, txn.TopicPartition{Topic: topic.GroupMetadataTopic, Partition: p})
					}
				}
				done(&txn.MarkerError{Remaining: failed, Err: firstErr})
			default:
				done(nil)
			}
		})
	}
	if len(offsetsParts) == 0 {
		finish(nil)
		return
	}
	store, err := b.committedOffsets()
	if err != nil {
		finish(err)
		return
	}
	store.CompleteTxnTV(offsetsParts, producerID, epoch, ownCoordinatorEpoch, commit, tv, finish)
}
