package offsets

import (
	"errors"
	"sync"

	"github.com/kbroker/kbroker/coordlog"
)

// CommitTxn stores offsets of group inside producerID's transaction
// (TxnOffsetCommit): they are written now, as a transactional batch of the
// producer, and become visible to Fetch only when the transaction's
// commit marker reaches the group's partition (CompleteTxn); an abort
// drops them. done as for Commit.
func (s *Store) CommitTxn(group string, producerID int64, epoch int16, cs []Commit, done func(error)) {
	s.log.WriteTxn(coordlog.PartitionFor(group, s.log.Partitions()), producerID, epoch, s.commitRecs(group, cs), done)
}

// CompleteTxn writes the producer's end-transaction marker into the given
// partitions of __consumer_offsets and, once each is durable, makes the
// transaction's offsets there visible (commit) or drops them (abort). done
// hears nil when every marker is durable, else the first error.
// coordinatorEpoch is as for coordlog.Log.WriteMarker.
func (s *Store) CompleteTxn(parts []int32, producerID int64, epoch int16, coordinatorEpoch int32, commit bool, done func(error)) {
	s.CompleteTxnTV(parts, producerID, epoch, coordinatorEpoch, commit, 0, done)
}

// CompleteTxnTV is CompleteTxn with markers of the given transaction
// version (partition.Marker.TransactionVersion).
func (s *Store) CompleteTxnTV(parts []int32, producerID int64, epoch int16, coordinatorEpoch int32, commit bool, transactionVersion int8, done func(error)) {
	var valid []int
	for _, p := range parts {
		if p >= 0 && int(p) < s.log.Partitions() {
			valid = append(valid, int(p))
		}
	}
	if len(valid) == 0 {
		done(nil)
		return
	}
	var mu sync.Mutex
	left := len(valid)
	var errs []error
	for _, p := range valid {
		s.log.WriteMarkerTV(p, producerID, epoch, coordinatorEpoch, commit, transactionVersion, func(err error) {
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			}
			left--
			last := left == 0
			mu.Unlock()
			if last {
				done(errors.Join(errs...))
			}
		})
	}
}

// PendingTxn reports whether group has offsets in an open transaction for
// tp, what OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT
// for.
func (s *Store) PendingTxn(group string, tp TopicPartition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, recs := range s.mu.txn {
		for _, r := range recs {
			if r.group == group && r.tp == tp {
				return true
			}
		}
	}
	return false
}

// ApplyTxn holds a durable record of an open transaction.
func (st *state) ApplyTxn(producerID int64, r *rec) {
	s := (*Store)(st)
	s.mu.Lock()
	s.mu.txn[producerID] = append(s.mu.txn[producerID], *r)
	s.mu.Unlock()
}

// ApplyMarker ends a transaction: its offsets take effect in the order
// they were committed, or are dropped.
func (st *state) ApplyMarker(producerID int64, commit bool) {
	s := (*Store)(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.mu.txn[producerID]
	delete(s.mu.txn, producerID)
	if !commit {
		return
	}
	for i := range recs {
		s.applyLocked(&recs[i])
	}
}
