package txn

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
)

// TopicPartition names a partition that takes part in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// State is a transaction's state, with Kafka's ids (the value stored in
// __transaction_state records) and names (what DescribeTransactions and
// ListTransactions report).
type State int8

// The states of a transactional id (Kafka's TransactionState). See the
// package comment for the transitions.
const (
	// Empty: a producer id and epoch are assigned, no transaction is
	// open.
	Empty State = iota
	// Ongoing: partitions have been added; the transaction is open.
	Ongoing
	// PrepareCommit: EndTxn(commit) is durable; commit markers are being
	// written to the transaction's partitions.
	PrepareCommit
	// PrepareAbort: an abort is durable (EndTxn(abort), a timeout or a
	// fencing InitProducerId); abort markers are being written.
	PrepareAbort
	// CompleteCommit: every commit marker is written.
	CompleteCommit
	// CompleteAbort: every abort marker is written.
	CompleteAbort
	// Dead: the transactional id expired and is being removed (its
	// tombstone is being written). Never listed or described.
	Dead
	// PrepareEpochFence: Kafka's transient state between deciding to
	// fence a producer and writing PrepareAbort. Here both happen in one
	// step, so no transaction is ever seen in it; it exists for its id
	// and name.
	PrepareEpochFence
)

// noState marks "no transition in flight" in txnMeta.pending.
const noState State = -1

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name of the state, as DescribeTransactions
// reports it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// ParseState returns the state named name (Kafka's TransactionState
// .fromName: exact, case-sensitive names).
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// expirable reports whether a transactional id in this state may expire
// (Kafka's isExpirationAllowed): no transaction is open or completing.
func (s State) expirable() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// Producer id and epoch values, as in Kafka's RecordBatch.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted reports whether a producer id has run out of epochs
// (Kafka's TransactionMetadata.isEpochExhausted): Short.MaxValue is kept
// back so that the coordinator can always fence the current producer by
// one more bump.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txnMeta is one transactional id's state (Kafka's TransactionMetadata).
// Guarded by Coordinator.mu. Every field but pending and failedFence is
// what the last applied record said (see rec), except that a fence bumps
// epoch before its PrepareAbort is durable, as Kafka does.
type txnMeta struct {
	id         string
	producerID int64
	// prevProducerID is the producer id before the last transition; it
	// tells a retried InitProducerId after a producer id rotation from a
	// fenced producer (KIP-360).
	prevProducerID int64
	// nextProducerID is the producer id that a transactions v2
	// transaction moves to once complete, because its epoch bump
	// exhausted the epochs (Kafka's nextProducerId); -1 otherwise.
	nextProducerID int64
	epoch          int16
	// v2 is whether the last transition was made under transactions v2
	// (Kafka's clientTransactionVersion ≥ 2): then the completion of a
	// PrepareCommit or PrepareAbort moves to nextProducerID.
	v2 bool
	// lastEpoch is the epoch before the last bump that a client asked
	// for (KIP-360), so that a retry of that InitProducerId gets the same
	// answer; -1 after a fence, and after a restart (Kafka does not store
	// it either).
	lastEpoch  int16
	timeoutMs  int32
	state      State
	partitions map[TopicPartition]struct{}
	// startMs is when the transaction started (its first partition), -1
	// in Empty; updateMs is the last transition (for id expiry).
	startMs, updateMs int64

	// pending is the state that a write in flight moves to (Kafka's
	// pendingState), noState when none: while set, other requests get
	// CONCURRENT_TRANSACTIONS.
	pending State
	// failedFence is set when the PrepareAbort of a fence failed: the
	// epoch was bumped in memory but never returned to a client, so the
	// next fence does not bump it again (hasFailedEpochFence).
	failedFence bool
	// written is whether a record of this id was applied; an id created
	// by InitProducerId whose first write has not (yet) succeeded is
	// left out of snapshots, as it is absent from the log.
	written bool
}

func newMeta(id string, producerID int64, timeoutMs int32, nowMs int64) *txnMeta {
	return &txnMeta{
		id: id, producerID: producerID, prevProducerID: noProducerID, nextProducerID: noProducerID,
		epoch: noProducerEpoch, lastEpoch: noProducerEpoch,
		timeoutMs: timeoutMs, state: Empty, startMs: -1, updateMs: nowMs,
		pending: noState,
	}
}

// sortedPartitions returns the partitions in (topic, partition) order.
func (t *txnMeta) sortedPartitions() []TopicPartition {
	return slices.SortedFunc(maps.Keys(t.partitions), compareTP)
}

// transit returns the record of a transition from t's current state
// (Kafka's prepareTransitionTo): the fields of t with the new state and
// time, and prevProducerID set to t's producer id. The caller changes
// what else the transition changes, then sets t.pending.
func (t *txnMeta) transit(to State, nowMs int64) rec {
	return rec{
		id: t.id, producerID: t.producerID, prevProducerID: t.producerID, nextProducerID: t.nextProducerID,
		v2: t.v2, epoch: t.epoch, lastEpoch: t.lastEpoch, timeoutMs: t.timeoutMs,
		state: to, partitions: t.sortedPartitions(), startMs: t.startMs, updateMs: nowMs,
	}
}

// record returns t's current state as a record (for snapshots).
func (t *txnMeta) record() rec {
	r := t.transit(t.state, t.updateMs)
	r.prevProducerID = t.prevProducerID
	return r
}

// apply makes t what r says (Kafka's completeTransitionTo, and loading a
// record at start-up).
func (t *txnMeta) apply(r *rec) {
	t.producerID, t.prevProducerID, t.nextProducerID = r.producerID, r.prevProducerID, r.nextProducerID
	t.v2 = r.v2
	t.epoch, t.lastEpoch = r.epoch, r.lastEpoch
	t.timeoutMs, t.state = r.timeoutMs, r.state
	t.startMs, t.updateMs = r.startMs, r.updateMs
	clear(t.partitions)
	if len(r.partitions) > 0 && t.partitions == nil {
		t.partitions = make(map[TopicPartition]struct{}, len(r.partitions))
	}
	for _, tp := range r.partitions {
		t.partitions[tp] = struct{}{}
	}
	t.pending = noState
	t.written = true
}

// hasAll reports whether every one of tps is in the transaction.
func (t *txnMeta) hasAll(tps []TopicPartition) bool {
	for _, tp := range tps {
		if _, ok := t.partitions[tp]; !ok {
			return false
		}
	}
	return true
}
