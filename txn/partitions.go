package txn

import (
	"maps"
	"slices"
	"time"

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
// (Kafka's AddPartitionsToTxnManager with the addPartition operation), and
// AddPartitionsToTxn v4+ adds them for a partition leader. The transaction
// records that it runs under transactions v2. It answers as AddPartitions
// does, except that a request that would get CONCURRENT_TRANSACTIONS may
// be parked for up to wait (see below).
//
// A v2 client starts its next transaction as soon as EndTxn answers,
// while the coordinator still writes the previous one's markers and
// completion record. With wait > 0 such an add (or one that meets any
// other transition in flight) is not refused: it is parked and decided
// again each time a record of the transactional id becomes durable or a
// write of it fails, so that it is answered as soon as the completion is
// durable, and CONCURRENT_TRANSACTIONS only if wait passes first. Kafka's
// partition leader retries the add instead, every 20 ms for up to 100 ms
// (add.partitions.to.txn.retry.backoff.ms and ...max.ms); parking answers
// at the moment the completion is durable, without polling. With wait 0
// CONCURRENT_TRANSACTIONS is answered at once, as Kafka's coordinator does.
func (c *Coordinator) AddPartitionsV2(txnID string, pid int64, epoch int16, tps []TopicPartition, wait time.Duration, done func(error)) {
	answer, ok := c.accept(txnID, done)
	if !ok {
		return
	}
	a := &adder{id: txnID, pid: pid, epoch: epoch, tps: tps, v2: true, answer: answer}
	if wait > 0 {
		a.deadline = time.Now().Add(wait)
	}
	c.tryAdd(a)
}

// adder is an AddPartitions request on its way: decided by tryAdd, and,
// under transactions v2 with a deadline, parked in Coordinator.mu.waiting
// while the transactional id is busy.
type adder struct {
	id     string
	pid    int64
	epoch  int16
	tps    []TopicPartition
	v2     bool
	answer func(error)
	// deadline bounds the parking (zero: never parked).
	deadline time.Time
	// timer answers CONCURRENT_TRANSACTIONS at the deadline; guarded by
	// Coordinator.mu.
	timer *time.Timer
}

func (c *Coordinator) addPartitions(txnID string, pid int64, epoch int16, tps []TopicPartition, v2 bool, done func(error)) {
	answer, ok := c.accept(txnID, done)
	if !ok {
		return
	}
	c.tryAdd(&adder{id: txnID, pid: pid, epoch: epoch, tps: tps, v2: v2, answer: answer})
}

// tryAdd decides an accepted AddPartitions (Kafka's
// handleAddPartitionsToTransaction): answers it, writes the new state, or
// parks it (see AddPartitionsV2).
func (c *Coordinator) tryAdd(a *adder) {
	txnID := a.id
	now := c.cfg.Now().UnixMilli()
	c.mu.Lock()
	if c.mu.closed {
		// Close answered the request (NOT_COORDINATOR).
		c.mu.Unlock()
		return
	}
	t := c.mu.txns[txnID]
	var r rec
	var err error
	switch {
	case t == nil:
		err = codeError(kerr.InvalidProducerIDMapping, txnID, "unknown transactional id")
	case t.producerID != a.pid:
		err = codeError(kerr.InvalidProducerIDMapping, txnID, "producer id %d, not %d", a.pid, t.producerID)
	case t.epoch != a.epoch:
		err = codeError(kerr.ProducerFenced, txnID, "epoch %d, not %d", a.epoch, t.epoch)
	case t.pending != noState || t.state == PrepareCommit || t.state == PrepareAbort:
		if c.parkAddLocked(a) {
			c.mu.Unlock()
			return
		}
		c.stopTimerLocked(a)
		if t.pending != noState {
			err = codeError(kerr.ConcurrentTransactions, txnID, "moving to %s", t.pending)
		} else {
			err = codeError(kerr.ConcurrentTransactions, txnID, "in %s", t.state)
		}
	case len(a.tps) == 0 || (t.state == Ongoing && t.hasAll(a.tps)):
		c.stopTimerLocked(a)
		c.mu.Unlock()
		a.answer(nil)
		return
	case t.state != Ongoing && !t.state.expirable():
		err = codeError(kerr.UnknownServerError, txnID, "unexpected state %s", t.state)
	default:
		// prepareAddPartitions: the union, and a start time if the
		// transaction starts now.
		r = t.transit(Ongoing, now)
		r.v2 = a.v2
		if t.state != Ongoing {
			r.startMs = now
		}
		all := maps.Clone(t.partitions)
		if all == nil {
			all = make(map[TopicPartition]struct{}, len(a.tps))
		}
		for _, tp := range a.tps {
			all[tp] = struct{}{}
		}
		r.partitions = slices.SortedFunc(maps.Keys(all), compareTP)
		t.pending = Ongoing
	}
	c.stopTimerLocked(a)
	c.mu.Unlock()
	if err != nil {
		a.answer(err)
		return
	}
	c.write(c.partitionOf(txnID), []rec{r}, func(err error) {
		if err != nil {
			c.resetPending(txnID, Ongoing)
		}
		a.answer(err)
	})
}

// parkAddLocked parks a while its transactional id is busy, if its
// deadline allows: it is decided again by wakeLocked, or answered
// CONCURRENT_TRANSACTIONS by its timer at the deadline.
func (c *Coordinator) parkAddLocked(a *adder) bool {
	left := time.Until(a.deadline)
	if a.deadline.IsZero() || left <= 0 || c.mu.noParking {
		return false
	}
	c.mu.waiting[a.id] = append(c.mu.waiting[a.id], a)
	if a.timer == nil {
		a.timer = c.afterLocked(left, func() { c.addTimedOut(a) })
	}
	return true
}

// stopTimerLocked stops the deadline timer of an add that is answered
// without parking again.
func (c *Coordinator) stopTimerLocked(a *adder) {
	if a.timer != nil {
		a.timer.Stop()
		delete(c.mu.timers, a.timer)
		a.timer = nil
	}
}

// StopParking answers the adds parked now NOT_COORDINATOR (the client
// retries, and looks for the coordinator again) and parks no more: the
// broker calls it when it begins to shut down, so that no connection
// waits out a request's timeout for a transaction that will not complete
// before the coordinator closes.
func (c *Coordinator) StopParking() {
	c.mu.Lock()
	c.mu.noParking = true
	var parked []*adder
	for id, ws := range c.mu.waiting {
		parked = append(parked, ws...)
		delete(c.mu.waiting, id)
	}
	for _, a := range parked {
		c.stopTimerLocked(a)
	}
	c.mu.Unlock()
	for _, a := range parked {
		a.answer(codeError(kerr.NotCoordinator, a.id, "shutting down"))
	}
}

// addTimedOut answers a parked add whose deadline passed, unless it was
// woken meanwhile (its retry then answers it).
func (c *Coordinator) addTimedOut(a *adder) {
	c.mu.Lock()
	ws := c.mu.waiting[a.id]
	i := slices.Index(ws, a)
	if i >= 0 {
		ws = slices.Delete(ws, i, i+1)
		if len(ws) == 0 {
			delete(c.mu.waiting, a.id)
		} else {
			c.mu.waiting[a.id] = ws
		}
	}
	c.mu.Unlock()
	if i >= 0 {
		a.answer(codeError(kerr.ConcurrentTransactions, a.id, "still busy after waiting"))
	}
}

// wakeLocked decides again, each from a goroutine of its own, the adds
// parked on id: a record of id was applied or a write of it failed. It
// never writes (the caller may hold the log's lock).
func (c *Coordinator) wakeLocked(id string) {
	ws := c.mu.waiting[id]
	if len(ws) == 0 {
		return
	}
	delete(c.mu.waiting, id)
	for _, a := range ws {
		c.afterLocked(0, func() { c.tryAdd(a) })
	}
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
