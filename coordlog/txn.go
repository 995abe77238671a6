package coordlog

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TxnState is implemented by owners whose records may be written inside a
// transaction: the offsets of TxnOffsetCommit go to __consumer_offsets as a
// transactional batch and take effect only when the transaction's commit
// marker reaches that partition, as in Kafka.
type TxnState[R any] interface {
	// ApplyTxn holds a durable record of producerID's open transaction.
	ApplyTxn(producerID int64, r *R)
	// ApplyMarker ends producerID's transaction: its held records take
	// effect (commit) or are dropped (abort).
	ApplyMarker(producerID int64, commit bool)
}

// WriteTxn appends recs as a transactional batch of the producer (as the
// coordinator writes it: no sequence number) and holds them once durable
// until the producer's marker (State must implement TxnState); done as for
// Write.
func (l *Log[R]) WriteTxn(part int, producerID int64, epoch int16, recs []R, done func(error)) {
	l.write(part, recs, producerID, epoch, done)
}

// WriteMarker appends the end-transaction marker of the producer to
// partition part and, once durable, applies it (TxnState.ApplyMarker) in
// log order; done as for Write. coordinatorEpoch is the epoch of the
// transaction coordinator that decided the transaction
// (partition.OwnCoordinatorEpoch for this broker's own; a WriteTxnMarkers
// request carries the sender's), which the partition checks against the
// last marker's (TRANSACTION_COORDINATOR_FENCED).
func (l *Log[R]) WriteMarker(part int, producerID int64, epoch int16, coordinatorEpoch int32, commit bool, done func(error)) {
	l.WriteMarkerTV(part, producerID, epoch, coordinatorEpoch, commit, 0, done)
}

// WriteMarkerTV is WriteMarker for a marker of the given transaction
// version (partition.Marker.TransactionVersion).
func (l *Log[R]) WriteMarkerTV(part int, producerID int64, epoch int16, coordinatorEpoch int32, commit bool, transactionVersion int8, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	p := l.parts[part]
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		done(kerr.CoordinatorNotAvailable)
		return
	}
	res, err := p.AppendMarkerTV(producerID, epoch, commit, coordinatorEpoch, transactionVersion, time.Now().UnixMilli())
	if err != nil {
		l.mu.Unlock()
		done(fmt.Errorf("%s: write marker to %s-%d: %w", l.cfg.Name, p.Topic(), p.Index(), err))
		return
	}
	w := &write[R]{part: part, next: res.BaseOffset + 1, end: res.End, done: done, txn: producerID, marker: true, commit: commit}
	l.mu.pending[part] = append(l.mu.pending[part], w)
	l.mu.Unlock()
	l.ps.SubmitDurable(res.End, func(err error) { l.finish(w, err) })
}
