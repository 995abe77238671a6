package txn

import (
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// EndRequest is an EndTxn.
type EndRequest struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Commit          bool
	// V2 asks for transactions v2 (KIP-890 part 2: EndTxn v5+ while the
	// finalized transaction.version is 2): the epoch is bumped by every
	// commit or abort, and the answer carries the producer id and epoch
	// for the next transaction.
	V2 bool
}

// EndResult answers an EndRequest. ProducerID and Epoch are what the
// producer uses from now on (V2 only; -1/-1 otherwise and on error).
type EndResult struct {
	ProducerID int64
	Epoch      int16
	Err        error
}

// EndTxn commits or aborts the open transaction of txnID with
// transactions v1 semantics (the epoch does not change); it is End
// without V2, for callers that need only the error.
func (c *Coordinator) EndTxn(txnID string, pid int64, epoch int16, commit bool, done func(error)) {
	c.End(EndRequest{TransactionalID: txnID, ProducerID: pid, Epoch: epoch, Commit: commit}, func(r EndResult) { done(r.Err) })
}

// End commits or aborts the open transaction of a transactional id
// (TransactionCoordinator.handleEndTransaction). From Ongoing it writes
// PrepareCommit or PrepareAbort and, once that is durable, answers; the
// markers and CompleteCommit or CompleteAbort follow in the background,
// retried until they succeed.
//
// Transactions v1 (V2 false): the epoch stays. Errors:
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
// Transactions v2 (V2 true): the Prepare record carries the epoch + 1, the
// markers are written with it (so that a late write of the old epoch is
// fenced at every partition), and the answer is the producer id and that
// epoch. When the bumped epoch leaves none to bump to (32767), a fresh
// producer id is allocated now (Kafka's nextProducerId): the answer is it
// with epoch 0, which the transaction moves to once complete. A retry
// (the previous epoch, or the last epoch before such a rotation) of a
// completed transaction is answered nil with the current producer id and
// epoch; an abort from Empty, CompleteCommit or CompleteAbort is allowed
// (a transaction whose produces all failed before joining it) and bumps
// the epoch too. Kafka's table (TransactionCoordinator.endTransaction):
//
//	                 Abort              Commit
//	                 retry   current    retry   current
//	Empty            FENCED  bump       FENCED  INVALID_TXN_STATE
//	CompleteAbort    nil     bump       ITS     INVALID_TXN_STATE
//	CompleteCommit   ITS     bump       nil     INVALID_TXN_STATE
//
// done runs once, before End returns or on another goroutine.
func (c *Coordinator) End(req EndRequest, done func(EndResult)) {
	id := req.TransactionalID
	fail := func(err error) { done(EndResult{ProducerID: noProducerID, Epoch: noProducerEpoch, Err: err}) }
	if id == "" {
		fail(codeError(kerr.InvalidRequest, id, "empty transactional id"))
		return
	}
	p := c.park(fail)
	if p == nil {
		fail(codeError(kerr.CoordinatorNotAvailable, id, "coordinator closed"))
		return
	}
	answer := func(r EndResult) {
		if c.unpark(p) {
			done(r)
		}
	}
	fresh := noProducerID
	var step endStep
	for {
		now := c.cfg.Now().UnixMilli()
		c.mu.Lock()
		if c.mu.closed {
			c.mu.Unlock()
			return // Close answered the request
		}
		if req.V2 {
			step = c.prepareEndV2Locked(req, &fresh, now)
		} else {
			step = c.prepareEndLocked(req, now)
		}
		c.mu.Unlock()
		if !step.needID {
			break
		}
		var err error
		if fresh, err = c.allocate(id); err != nil {
			answer(EndResult{ProducerID: noProducerID, Epoch: noProducerEpoch, Err: err})
			return
		}
	}
	if step.rec == nil {
		answer(step.res)
		return
	}
	c.write(c.partitionOf(id), []rec{*step.rec}, c.afterPrepare(*step.rec, false, answer))
}

// endStep is what End does next: answer res, allocate a producer id
// (needID) and decide again, or write rec (a Prepare record).
type endStep struct {
	res    EndResult
	needID bool
	rec    *rec
}

func endError(err error) endStep {
	return endStep{res: EndResult{ProducerID: noProducerID, Epoch: noProducerEpoch, Err: err}}
}

// prepareEndLocked checks an EndTxn of transactions v1 and returns the
// Prepare record to write, or the answer.
func (c *Coordinator) prepareEndLocked(req EndRequest, nowMs int64) endStep {
	id, pid, epoch, commit := req.TransactionalID, req.ProducerID, req.Epoch, req.Commit
	t := c.mu.txns[id]
	switch {
	case t == nil:
		return endError(codeError(kerr.InvalidProducerIDMapping, id, "unknown transactional id"))
	case t.producerID != pid:
		return endError(codeError(kerr.InvalidProducerIDMapping, id, "producer id %d, not %d", pid, t.producerID))
	case epoch != t.epoch:
		return endError(codeError(kerr.ProducerFenced, id, "epoch %d, not %d", epoch, t.epoch))
	case t.pending != noState:
		return endError(codeError(kerr.ConcurrentTransactions, id, "moving to %s", t.pending))
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
		r.v2, r.nextProducerID = false, noProducerID
		t.pending = prepSame
		return endStep{rec: &r}
	case same:
		return endError(nil)
	case prepSame:
		return endError(codeError(kerr.ConcurrentTransactions, id, "in %s", t.state))
	case opposite, prepOpposite, Empty:
		return endError(codeError(kerr.InvalidTxnState, id, "cannot %s in %s", endWord(commit), t.state))
	}
	return endError(codeError(kerr.UnknownServerError, id, "unexpected state %s", t.state))
}

// prepareEndV2Locked checks an EndTxn of transactions v2 (the v2 branch
// of Kafka's endTransaction) and returns the Prepare record to write, the
// answer, or needID when the bump needs a fresh producer id that *fresh
// does not hold yet.
func (c *Coordinator) prepareEndV2Locked(req EndRequest, fresh *int64, nowMs int64) endStep {
	id, pid, epoch, commit := req.TransactionalID, req.ProducerID, req.Epoch, req.Commit
	t := c.mu.txns[id]
	if t == nil {
		return endError(codeError(kerr.InvalidProducerIDMapping, id, "unknown transactional id"))
	}
	// A retry of an EndTxn whose answer was lost: the epoch it bumped
	// from, or the last epoch before the producer id rotation it caused.
	retryOverflow := t.prevProducerID == pid && epoch == math.MaxInt16-1 && t.epoch == 0
	retryBump := int32(t.epoch) == int32(epoch)+1
	var validEpoch bool
	switch t.state {
	case PrepareCommit, PrepareAbort:
		validEpoch = retryBump
	case CompleteCommit, CompleteAbort:
		validEpoch = retryBump || retryOverflow || epoch == t.epoch
	default:
		validEpoch = epoch == t.epoch
	}
	retry := retryBump || retryOverflow
	switch {
	case t.producerID != pid && !retryOverflow:
		return endError(codeError(kerr.InvalidProducerIDMapping, id, "producer id %d, not %d", pid, t.producerID))
	case !validEpoch:
		return endError(codeError(kerr.ProducerFenced, id, "epoch %d in %s, current %d", epoch, t.state, t.epoch))
	case t.pending != noState:
		return endError(codeError(kerr.ConcurrentTransactions, id, "moving to %s", t.pending))
	}
	invalid := func() endStep {
		return endError(codeError(kerr.InvalidTxnState, id, "cannot %s in %s (epoch %d, current %d)", endWord(commit), t.state, epoch, t.epoch))
	}
	current := endStep{res: EndResult{ProducerID: t.producerID, Epoch: t.epoch}}
	switch t.state {
	case Ongoing:
		if commit {
			return c.prepareEndBumpLocked(t, PrepareCommit, false, fresh, nowMs)
		}
		return c.prepareEndBumpLocked(t, PrepareAbort, false, fresh, nowMs)
	case CompleteCommit:
		switch {
		case commit && retry:
			return current
		case commit || retry:
			return invalid()
		}
		return c.prepareEndBumpLocked(t, PrepareAbort, true, fresh, nowMs)
	case CompleteAbort:
		switch {
		case !commit && retry:
			return current
		case commit:
			return invalid()
		}
		return c.prepareEndBumpLocked(t, PrepareAbort, true, fresh, nowMs)
	case Empty:
		if commit {
			return invalid()
		}
		return c.prepareEndBumpLocked(t, PrepareAbort, true, fresh, nowMs)
	case PrepareCommit, PrepareAbort:
		if (t.state == PrepareCommit) == commit {
			return endError(codeError(kerr.ConcurrentTransactions, id, "in %s", t.state))
		}
		return invalid()
	}
	return endError(codeError(kerr.UnknownServerError, id, "unexpected state %s", t.state))
}

// prepareEndBumpLocked returns the Prepare record of a transactions v2
// EndTxn (Kafka's prepareAbortOrCommit with an epoch bump): epoch + 1,
// the last epoch the current one, and a fresh producer id to move to
// when the current epoch is exhausted. noPartitions marks an abort with
// no transaction open, whose start time is now.
func (c *Coordinator) prepareEndBumpLocked(t *txnMeta, to State, noPartitions bool, fresh *int64, nowMs int64) endStep {
	next := noProducerID
	if epochExhausted(t.epoch) {
		if *fresh < 0 {
			return endStep{needID: true}
		}
		next, *fresh = *fresh, noProducerID
	}
	r := t.transit(to, nowMs)
	r.v2, r.nextProducerID = true, next
	r.epoch, r.lastEpoch = t.epoch, t.epoch
	if t.epoch < math.MaxInt16 {
		// 32767 is reached only by a fence; an abort from there
		// keeps it rather than overflow (and moves to next).
		r.epoch++
	}
	if noPartitions {
		r.partitions, r.startMs = nil, nowMs
	}
	t.pending = to
	return endStep{rec: &r}
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
// Short.MaxValue. The abort does not bump it once more under transactions
// v2 either (Kafka 4.4 ends a timed-out v2 transaction one epoch up, as
// TestDiffKafka and the integration tests against it show), but when the
// fence's epoch is exhausted a v2 transaction moves to a fresh producer id
// once complete, as a v2 EndTxn does: with *fresh -1 that returns needID,
// and the caller allocates one and calls again. t must be Ongoing with
// nothing in flight.
func (c *Coordinator) fenceLocked(t *txnMeta, fresh *int64, nowMs int64) (r rec, needID bool) {
	fenced := t.epoch
	if !t.failedFence && fenced < math.MaxInt16 {
		fenced++
	}
	v2 := c.v2()
	next := noProducerID
	if v2 && epochExhausted(fenced) {
		if *fresh < 0 {
			return rec{}, true
		}
		next, *fresh = *fresh, noProducerID
	}
	// Under transactions v2 Kafka ends the fence with
	// prepareAbortOrCommit's bump from the fenced producer's epoch, which
	// it keeps as the last epoch: that producer's InitProducerId v3+
	// (KIP-360) with it then passes for a retry and gets the current
	// epoch, where v1 answers PRODUCER_FENCED. After a failed fence the
	// last epoch is already the fenced producer's.
	if !v2 {
		t.lastEpoch = noProducerEpoch
	} else if !t.failedFence {
		t.lastEpoch = t.epoch
	}
	t.epoch = fenced
	r = t.transit(PrepareAbort, nowMs)
	r.v2, r.nextProducerID = v2, next
	t.pending = PrepareAbort
	return r, false
}

// afterPrepare returns the callback of a Prepare write (Kafka's
// sendTxnMarkersCallback): on success it answers nil (under transactions
// v2 with the producer id and epoch to go on with) and starts the
// markers; on failure it drops the pending transition and answers the
// error. fence marks a coordinator-initiated abort.
func (c *Coordinator) afterPrepare(r rec, fence bool, answerResult func(EndResult)) func(error) {
	answer := func(err error) {
		res := EndResult{ProducerID: noProducerID, Epoch: noProducerEpoch, Err: err}
		if err == nil && r.v2 {
			res.ProducerID, res.Epoch = r.producerID, r.epoch
			if r.nextProducerID >= 0 {
				res.ProducerID, res.Epoch = r.nextProducerID, 0
			}
		}
		answerResult(res)
	}
	return func(err error) {
		if err != nil {
			c.mu.Lock()
			if t := c.mu.txns[r.id]; t != nil && t.pending == r.state {
				t.pending = noState
				t.failedFence = t.failedFence || fence
				c.wakeLocked(r.id)
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
	commit bool
	// v2 is a transaction of transactions v2: its markers have
	// transaction version 2.
	v2         bool
	producerID int64
	epoch      int16
	partitions []TopicPartition
	complete   rec
}

// prepareCompleteLocked starts the completion of t, which is in
// PrepareCommit or PrepareAbort (Kafka's prepareComplete). The markers
// carry t's producer id and epoch (under transactions v2, the bumped
// one); a v2 transaction that had to rotate its producer id completes
// with the next one and epoch 0, keeping the last epoch the client saw.
func (c *Coordinator) prepareCompleteLocked(t *txnMeta, nowMs int64) completion {
	to := CompleteAbort
	if t.state == PrepareCommit {
		to = CompleteCommit
	}
	t.failedFence = false
	r := t.transit(to, nowMs)
	r.partitions = nil
	if t.v2 && t.nextProducerID >= 0 {
		r.producerID, r.epoch = t.nextProducerID, 0
	}
	r.nextProducerID = noProducerID
	t.pending = to
	return completion{
		commit: to == CompleteCommit, v2: t.v2, producerID: t.producerID, epoch: t.epoch,
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
	var tv int8
	if cp.v2 {
		tv = transactionVersion2
	}
	c.deps.WriteMarkers(cp.producerID, cp.epoch, cp.commit, tv, cp.partitions, func(err error) {
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
// wait for the next check. A fence that needs a fresh producer id (see
// fenceLocked) gets one allocated outside the lock, then is decided again.
func (c *Coordinator) abortTimedOut() {
	now := c.cfg.Now().UnixMilli()
	timedOut := func(t *txnMeta) bool {
		return t.pending == noState && t.state == Ongoing && t.startMs+int64(t.timeoutMs) < now
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	var recs []rec
	var needID []string
	for _, t := range c.mu.txns {
		if !timedOut(t) {
			continue
		}
		none := noProducerID
		if r, need := c.fenceLocked(t, &none, now); need {
			needID = append(needID, t.id)
		} else {
			recs = append(recs, r)
		}
	}
	c.mu.Unlock()
	for _, id := range needID {
		fresh, err := c.allocate(id)
		if err != nil {
			c.lg.Warn("txn: aborting a timed-out transaction: no producer id", zap.String("transactional_id", id), zap.Error(err))
			continue
		}
		c.mu.Lock()
		if t := c.mu.txns[id]; t != nil && !c.mu.closed && timedOut(t) {
			if r, need := c.fenceLocked(t, &fresh, now); !need {
				recs = append(recs, r)
			}
		}
		c.mu.Unlock()
	}
	for _, r := range recs {
		c.lg.Info("txn: aborting a timed-out transaction", zap.String("transactional_id", r.id),
			zap.Int64("producer_id", r.producerID), zap.Int16("epoch", r.epoch))
		id := r.id
		c.write(c.partitionOf(id), []rec{r}, c.afterPrepare(r, true, func(res EndResult) {
			if res.Err != nil {
				c.lg.Warn("txn: aborting a timed-out transaction failed", zap.String("transactional_id", id), zap.Error(res.Err))
			}
		}))
	}
}
