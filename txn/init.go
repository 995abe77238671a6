package txn

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// InitRequest is an InitProducerId with a transactional id.
type InitRequest struct {
	TransactionalID string
	// TimeoutMs is the transaction timeout the producer asks for.
	TimeoutMs int32
	// ProducerID and Epoch are -1/-1, or (KIP-360, InitProducerId v3+)
	// the producer's current id and epoch when it recovers from an
	// abortable error or UNKNOWN_PRODUCER_ID.
	ProducerID int64
	Epoch      int16
}

// InitResult answers an InitRequest: a producer id and epoch, or Err with
// -1/-1.
type InitResult struct {
	ProducerID int64
	Epoch      int16
	Err        error
}

// InitProducerID gives the producer of a transactional id its producer id
// and epoch (TransactionCoordinator.handleInitProducerId):
//
//   - a new transactional id gets a fresh producer id with epoch 0;
//   - a known one gets its epoch bumped, which fences the producer that
//     had the old epoch; when the epoch is exhausted (32766 and up) a
//     fresh producer id with epoch 0 instead;
//   - with an open transaction (Ongoing), the coordinator first aborts it
//     with a bumped epoch (PrepareAbort, markers, CompleteAbort) and
//     answers CONCURRENT_TRANSACTIONS once PrepareAbort is durable; the
//     client retries and gets the next epoch when the abort is complete.
//
// With ProducerID/Epoch set (KIP-360), the producer id must be the
// current one (or the previous one with an exhausted epoch: a retry after
// a rotation) and the epoch the current one (bumped) or the one before
// the last bump (a retry whose answer was lost: the same epoch again);
// anything else is PRODUCER_FENCED, as in Kafka (the handler answers
// INVALID_PRODUCER_EPOCH below InitProducerId v4, see broker/errors.go). An id
// whose epoch is -1 (just created, or expired and recreated) accepts any
// producer id and answers a fresh one.
//
// Errors (Err): INVALID_REQUEST (empty transactional id; only one of
// ProducerID and Epoch set), INVALID_TRANSACTION_TIMEOUT (TimeoutMs ≤ 0
// or above Config.MaxTimeout), CONCURRENT_TRANSACTIONS (a transition in
// flight, a transaction completing, or the abort above), PRODUCER_FENCED,
// the allocation's error (Deps.NextProducerID), and those of a failed
// write or of Close (see EndTxn). done runs once, before InitProducerID
// returns or on another goroutine.
func (c *Coordinator) InitProducerID(req InitRequest, done func(InitResult)) {
	id := req.TransactionalID
	fail := func(err error) { done(InitResult{ProducerID: noProducerID, Epoch: noProducerEpoch, Err: err}) }
	switch {
	case id == "":
		fail(codeError(kerr.InvalidRequest, id, "empty transactional id"))
		return
	case (req.ProducerID == noProducerID) != (req.Epoch == noProducerEpoch):
		fail(codeError(kerr.InvalidRequest, id, "producer id %d with epoch %d", req.ProducerID, req.Epoch))
		return
	case req.TimeoutMs <= 0 || time.Duration(req.TimeoutMs)*time.Millisecond > c.cfg.MaxTimeout:
		fail(codeError(kerr.InvalidTransactionTimeout, id, "timeout %d ms, most %d", req.TimeoutMs, c.cfg.MaxTimeout.Milliseconds()))
		return
	}
	p := c.park(fail)
	if p == nil {
		fail(codeError(kerr.CoordinatorNotAvailable, id, "coordinator closed"))
		return
	}
	answer := func(r InitResult) {
		if c.unpark(p) {
			done(r)
		}
	}
	answerErr := func(err error) { answer(InitResult{ProducerID: noProducerID, Epoch: noProducerEpoch, Err: err}) }

	// A producer id is allocated outside the lock (the allocator may do
	// I/O), then the decision is made again with it in hand.
	fresh := noProducerID
	var step initStep
	for {
		now := c.cfg.Now().UnixMilli()
		c.mu.Lock()
		if c.mu.closed {
			// Close answered the request (NOT_COORDINATOR).
			c.mu.Unlock()
			return
		}
		t := c.mu.txns[id]
		if t == nil && fresh >= 0 {
			t = newMeta(id, fresh, req.TimeoutMs, now)
			c.mu.txns[id] = t
			fresh = noProducerID
		}
		if t != nil {
			step = c.prepareInitLocked(t, req, &fresh, now)
		}
		c.mu.Unlock()
		if t != nil && !step.needID {
			break
		}
		var err error
		if fresh, err = c.allocate(id); err != nil {
			answerErr(err)
			return
		}
	}
	switch {
	case step.err != nil:
		answerErr(step.err)
	case step.fence:
		// Abort first; the client retries until the abort is complete.
		c.write(c.partitionOf(id), []rec{step.rec}, c.afterPrepare(step.rec, true, func(res EndResult) {
			err := res.Err
			if err == nil {
				err = codeError(kerr.ConcurrentTransactions, id, "aborting the open transaction")
			}
			answerErr(err)
		}))
	default:
		r := step.rec
		c.write(c.partitionOf(id), []rec{r}, func(err error) {
			if err != nil {
				c.resetPending(id, Empty)
				answerErr(err)
				return
			}
			answer(InitResult{ProducerID: r.producerID, Epoch: r.epoch})
		})
	}
}

// initStep is what InitProducerId does next: answer err, allocate a
// producer id (needID) and decide again, write rec, or fence (abort the
// open transaction with rec, a PrepareAbort).
type initStep struct {
	err    error
	needID bool
	fence  bool
	rec    rec
}

// prepareInitLocked decides an InitProducerId for an existing id
// (prepareInitProducerIdTransit). fresh is a producer id allocated for
// this request, or -1; a step that uses it sets it to -1.
func (c *Coordinator) prepareInitLocked(t *txnMeta, req InitRequest, fresh *int64, nowMs int64) initStep {
	id := t.id
	expected := req.ProducerID != noProducerID
	if t.pending != noState {
		return initStep{err: codeError(kerr.ConcurrentTransactions, id, "moving to %s", t.pending)}
	}
	// KIP-360: a producer that names its id must be the current one;
	// the previous one with an exhausted epoch is a retry after a
	// producer id rotation whose answer was lost. A new id (epoch -1)
	// takes anyone: the producer recovers from UNKNOWN_PRODUCER_ID.
	if expected && t.epoch != noProducerEpoch && req.ProducerID != t.producerID &&
		(req.ProducerID != t.prevProducerID || !epochExhausted(req.Epoch)) {
		return initStep{err: codeError(kerr.ProducerFenced, id, "producer id %d, not %d", req.ProducerID, t.producerID)}
	}
	switch t.state {
	case PrepareCommit, PrepareAbort:
		return initStep{err: codeError(kerr.ConcurrentTransactions, id, "in %s", t.state)}
	case Ongoing:
		// The bumped epoch is never returned: the client gets
		// CONCURRENT_TRANSACTIONS and retries, which bumps again (and
		// rotates the producer id if this bump exhausted the epochs).
		r, need := c.fenceLocked(t, fresh, nowMs)
		if need {
			return initStep{needID: true}
		}
		return initStep{fence: true, rec: r}
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return initStep{err: codeError(kerr.UnknownServerError, id, "unexpected state %s", t.state)}
	}
	r := t.transit(Empty, nowMs)
	r.timeoutMs = req.TimeoutMs
	r.partitions, r.startMs = nil, -1
	switch {
	case epochExhausted(t.epoch) && (!expected || req.Epoch == t.epoch):
		// prepareProducerIdRotation: a fresh producer id, epoch 0.
		if *fresh < 0 {
			return initStep{needID: true}
		}
		r.producerID, *fresh = *fresh, noProducerID
		r.epoch, r.lastEpoch = 0, noProducerEpoch
		if expected {
			r.lastEpoch = t.epoch
		}
	case !expected:
		// A new producer instance: bump, and forget the last epoch so
		// that the fenced one cannot pass for a retry.
		r.epoch, r.lastEpoch = t.epoch+1, noProducerEpoch
	case t.epoch == noProducerEpoch || req.Epoch == t.epoch:
		// The current producer recovers: bump, remembering the epoch.
		r.epoch, r.lastEpoch = t.epoch+1, t.epoch
	case req.Epoch == t.lastEpoch:
		// A retry of the last bump: the same answer.
		r.epoch, r.lastEpoch = t.epoch, t.lastEpoch
	default:
		return initStep{err: codeError(kerr.ProducerFenced, id, "epoch %d, not %d", req.Epoch, t.epoch)}
	}
	t.pending = Empty
	return initStep{rec: r}
}

// allocate returns a fresh producer id (Deps.NextProducerID). An error
// without a Kafka code becomes COORDINATOR_NOT_AVAILABLE, which clients
// retry.
func (c *Coordinator) allocate(id string) (int64, error) {
	pid, err := c.deps.NextProducerID()
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return noProducerID, fmt.Errorf("txn: %q: allocate a producer id: %w", id, err)
		}
		return noProducerID, fmt.Errorf("txn: %q: allocate a producer id: %v: %w", id, err, kerr.CoordinatorNotAvailable)
	}
	if pid < 0 {
		return noProducerID, codeError(kerr.UnknownServerError, id, "allocated producer id %d", pid)
	}
	return pid, nil
}

// resetPending drops the transition to `to` in flight for id after its
// write failed (appendTransactionToLog's error path).
func (c *Coordinator) resetPending(id string, to State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.mu.txns[id]; t != nil && t.pending == to {
		t.pending = noState
		c.wakeLocked(id)
	}
}
