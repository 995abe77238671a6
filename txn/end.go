package txn

import (
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// EndTxn commits or aborts the open transaction of txnID
// (TransactionCoordinator.handleEndTransaction, transactions v1: the
// epoch does not change). From Ongoing it writes PrepareCommit or
// PrepareAbort and, once that is durable, answers nil; the markers and
// CompleteCommit or CompleteAbort follow in the background, retried until
// they succeed. done hears:
//
//   - nil: the decision is durable, or the transaction already completed
//     the same way (a retry after a lost answer).
//   - INVALID_REQUEST: an empty transactional id.
//   - INVALID_PRODUCER_ID_MAPPING: unknown id, or another producer id.
//   - PRODUCER_FENCED: another epoch (the handler answers
//     INVALID_PRODUCER_EPOCH below EndTxn v2, see broker/errors.go).
//   - CONCURRENT_TRANSACTIONS: a transition is in flight, or the same
//     decision's markers are still being written (retriable).
//   - INVALID_TXN_STATE: nothing to end (Empty), or the opposite decision
//     was taken (commit after abort and the reverse).
//   - COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, UNKNOWN_SERVER_ERROR:
//     the write failed (see writeError), or Close (NOT_COORDINATOR while
//     parked, COORDINATOR_NOT_AVAILABLE after).
//
// done runs once, before EndTxn returns or on another goroutine.
func (c *Coordinator) EndTxn(txnID string, pid int64, epoch int16, commit bool, done func(error)) {
	answer, ok := c.accept(txnID, done)
	if !ok {
		return
	}
	now := c.cfg.Now().UnixMilli()
	c.mu.Lock()
	r, err := c.prepareEndLocked(txnID, pid, epoch, commit, now)
	c.mu.Unlock()
	if err != nil || r == nil {
		answer(err)
		return
	}
	c.write(c.partitionOf(txnID), []rec{*r}, c.afterPrepare(*r, false, answer))
}

// prepareEndLocked checks an EndTxn from a client and returns the
// Prepare record to write, or nil and the answer.
func (c *Coordinator) prepareEndLocked(id string, pid int64, epoch int16, commit bool, nowMs int64) (*rec, error) {
	t := c.mu.txns[id]
	switch {
	case t == nil:
		return nil, codeError(kerr.InvalidProducerIDMapping, id, "unknown transactional id")
	case t.producerID != pid:
		return nil, codeError(kerr.InvalidProducerIDMapping, id, "producer id %d, not %d", pid, t.producerID)
	case epoch != t.epoch:
		return nil, codeError(kerr.ProducerFenced, id, "epoch %d, not %d", epoch, t.epoch)
	case t.pending != noState:
		return nil, codeError(kerr.ConcurrentTransactions, id, "moving to %s", t.pending)
	}
	same, opposite := CompleteCommit, CompleteAbort
	prepSame, prepOpposite := PrepareCommit, PrepareAbort
	if !commit {
		same, opposite = opposite, same
		prepSame, prepOpposite = prepOpposite, prepSame
	}
	switch t.state {
	case Ongoing:
		r := t.transit(prepSame, nowMs)
		t.pending = prepSame
		return &r, nil
	case same:
		return nil, nil
	case prepSame:
		return nil, codeError(kerr.ConcurrentTransactions, id, "in %s", t.state)
	case opposite, prepOpposite, Empty:
		return nil, codeError(kerr.InvalidTxnState, id, "cannot %s in %s", endWord(commit), t.state)
	}
	return nil, codeError(kerr.UnknownServerError, id, "unexpected state %s", t.state)
}

func endWord(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// fenceLocked aborts t's open transaction with a bumped epoch, so that its
// producer is fenced (Kafka's prepareFenceProducerEpoch followed by
// endTransaction(ABORT) with the bumped epoch, here in one step). As in
// Kafka, the epoch is bumped in memory before PrepareAbort is durable, so
// the old producer is fenced at once; after a fence whose write failed it
// is not bumped again (the bumped epoch never reached a client), nor past
// Short.MaxValue. t must be Ongoing with nothing in flight.
func (c *Coordinator) fenceLocked(t *txnMeta, nowMs int64) rec {
	if !t.failedFence && t.epoch < math.MaxInt16 {
		t.epoch++
	}
	t.lastEpoch = noProducerEpoch
	r := t.transit(PrepareAbort, nowMs)
	t.pending = PrepareAbort
	return r
}

// afterPrepare returns the callback of a Prepare write (Kafka's
// sendTxnMarkersCallback): on success it answers nil and starts the
// markers; on failure it drops the pending transition and answers the
// error. fence marks a coordinator-initiated abort.
func (c *Coordinator) afterPrepare(r rec, fence bool, answer func(error)) func(error) {
	return func(err error) {
		if err != nil {
			c.mu.Lock()
			if t := c.mu.txns[r.id]; t != nil && t.pending == r.state {
				t.pending = noState
				t.failedFence = t.failedFence || fence
			}
			c.mu.Unlock()
			answer(err)
			return
		}
		c.mu.Lock()
		if c.mu.closed {
			// Durable: the next Open completes it.
			c.mu.Unlock()
			answer(codeError(kerr.NotCoordinator, r.id, "coordinator closed"))
			return
		}
		t := c.mu.txns[r.id]
		switch {
		case t == nil:
			err = codeError(kerr.UnknownServerError, r.id, "gone after %s was written", r.state)
		case t.producerID != r.producerID:
			err = codeError(kerr.InvalidProducerIDMapping, r.id, "producer id %d after %s, not %d", t.producerID, r.state, r.producerID)
		case t.epoch != r.epoch:
			err = codeError(kerr.ProducerFenced, r.id, "epoch %d after %s, not %d", t.epoch, r.state, r.epoch)
		case t.pending != noState:
			err = codeError(kerr.ConcurrentTransactions, r.id, "moving to %s", t.pending)
		case t.state != r.state:
			err = codeError(kerr.InvalidTxnState, r.id, "in %s after %s was written", t.state, r.state)
		}
		if err != nil {
			c.mu.Unlock()
			c.lg.Error("txn: state changed under a transition", zap.String("transactional_id", r.id), zap.Error(err))
			answer(err)
			return
		}
		cp := c.prepareCompleteLocked(t, c.cfg.Now().UnixMilli())
		c.mu.Unlock()
		answer(nil)
		c.sendMarkers(cp, 0)
	}
}

// completion is a transaction in PrepareCommit or PrepareAbort on its way
// to CompleteCommit or CompleteAbort: its markers, then its record.
type completion struct {
	commit     bool
	producerID int64
	epoch      int16
	partitions []TopicPartition
	complete   rec
}

// prepareCompleteLocked starts the completion of t, which is in
// PrepareCommit or PrepareAbort (Kafka's prepareComplete).
func (c *Coordinator) prepareCompleteLocked(t *txnMeta, nowMs int64) completion {
	to := CompleteAbort
	if t.state == PrepareCommit {
		to = CompleteCommit
	}
	t.failedFence = false
	r := t.transit(to, nowMs)
	r.partitions = nil
	t.pending = to
	return completion{
		commit: to == CompleteCommit, producerID: t.producerID, epoch: t.epoch,
		partitions: t.sortedPartitions(), complete: r,
	}
}

// Retries of markers and of the completion record back off from
// retryBackoff, doubling up to maxRetryBackoff, forever: a transaction
// left in PrepareCommit or PrepareAbort would block its producer and
// READ_COMMITTED consumers of its partitions (Kafka's marker channel
// retries forever too).
const (
	retryBackoff    = 100 * time.Millisecond
	maxRetryBackoff = 10 * time.Second
)

func backoff(attempt int) time.Duration {
	if attempt >= 7 {
		return maxRetryBackoff
	}
	return min(retryBackoff<<attempt, maxRetryBackoff)
}

// sendMarkers writes cp's markers, then its Complete record (Kafka's
// TransactionMarkerChannelManager, then maybeWriteTxnCompletion).
func (c *Coordinator) sendMarkers(cp completion, attempt int) {
	if c.closed() {
		return
	}
	if len(cp.partitions) == 0 {
		c.writeComplete(cp, 0)
		return
	}
	c.deps.WriteMarkers(cp.producerID, cp.epoch, cp.commit, cp.partitions, func(err error) {
		if err == nil {
			c.writeComplete(cp, 0)
			return
		}
		var me *MarkerError
		if errors.As(err, &me) && len(me.Remaining) > 0 {
			cp.partitions = me.Remaining
		}
		d := backoff(attempt)
		c.lg.Warn("txn: writing markers failed; retrying", zap.String("transactional_id", cp.complete.id),
			zap.Bool("commit", cp.commit), zap.Int("partitions", len(cp.partitions)), zap.Duration("backoff", d), zap.Error(err))
		c.after(d, func() { c.sendMarkers(cp, attempt+1) })
	})
}

// writeComplete writes cp's CompleteCommit or CompleteAbort record,
// retrying until it is durable.
func (c *Coordinator) writeComplete(cp completion, attempt int) {
	c.write(c.partitionOf(cp.complete.id), []rec{cp.complete}, func(err error) {
		if err == nil || c.closed() {
			return
		}
		d := backoff(attempt)
		c.lg.Warn("txn: writing the completion failed; retrying", zap.String("transactional_id", cp.complete.id),
			zap.Stringer("state", cp.complete.state), zap.Duration("backoff", d), zap.Error(err))
		c.after(d, func() { c.writeComplete(cp, attempt+1) })
	})
}

// abortTimedOut aborts, with an epoch bump that fences their producers,
// the transactions open longer than their timeout (Kafka's
// abortTimedOutTransactions). Transactions with a transition in flight
// wait for the next check.
func (c *Coordinator) abortTimedOut() {
	now := c.cfg.Now().UnixMilli()
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	var recs []rec
	for _, t := range c.mu.txns {
		if t.pending == noState && t.state == Ongoing && t.startMs+int64(t.timeoutMs) < now {
			recs = append(recs, c.fenceLocked(t, now))
		}
	}
	c.mu.Unlock()
	for _, r := range recs {
		c.lg.Info("txn: aborting a timed-out transaction", zap.String("transactional_id", r.id),
			zap.Int64("producer_id", r.producerID), zap.Int16("epoch", r.epoch))
		id := r.id
		c.write(c.partitionOf(id), []rec{r}, c.afterPrepare(r, true, func(err error) {
			if err != nil {
				c.lg.Warn("txn: aborting a timed-out transaction failed", zap.String("transactional_id", id), zap.Error(err))
			}
		}))
	}
}
