package txn

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is a transactional id as DescribeTransactions shows it.
type Description struct {
	TransactionalID string
	// Err is TRANSACTIONAL_ID_NOT_FOUND, INVALID_REQUEST (an empty id)
	// or COORDINATOR_NOT_AVAILABLE (after Close); the other fields are
	// then zero.
	Err        error
	State      State
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	// StartTimeMs is when the current (or last) transaction started, -1
	// when none did since the last InitProducerId.
	StartTimeMs int64
	// Partitions are the transaction's partitions, sorted by topic and
	// partition (the handler groups them by topic).
	Partitions []TopicPartition
}

// Describe describes each of ids, in order
// (TransactionCoordinator.handleDescribeTransactions). A transition in
// flight is not shown: the state is the last durable one.
func (c *Coordinator) Describe(ids []string) []Description {
	out := make([]Description, len(ids))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range ids {
		d := &out[i]
		d.TransactionalID = id
		t := c.mu.txns[id]
		switch {
		case c.mu.closed:
			d.Err = codeError(kerr.CoordinatorNotAvailable, id, "coordinator closed")
		case id == "":
			d.Err = codeError(kerr.InvalidRequest, id, "empty transactional id")
		case t == nil || t.state == Dead:
			d.Err = codeError(kerr.TransactionalIDNotFound, id, "unknown transactional id")
		default:
			d.State, d.ProducerID, d.Epoch = t.state, t.producerID, t.epoch
			d.TimeoutMs, d.StartTimeMs = t.timeoutMs, t.startMs
			d.Partitions = t.sortedPartitions()
		}
	}
	return out
}

// Listing is a transactional id as ListTransactions shows it.
type Listing struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// ListResult answers ListTransactions.
type ListResult struct {
	// Transactions are the matching ids, sorted.
	Transactions []Listing
	// UnknownStates are the state filters that name no state (Kafka's
	// UnknownStateFilters).
	UnknownStates []string
	// Err is COORDINATOR_NOT_AVAILABLE after Close.
	Err error
}

// List lists the transactional ids (TransactionStateManager
// .listTransactionStates). Filters that are empty match everything:
// states by Kafka's names, exactly (unknown names are reported and match
// nothing); producer ids; and minDurationMs (ListTransactions v1,
// KIP-994), when ≥ 0, keeps the ids whose transaction started more than
// that long ago. As in Kafka, the duration is measured from the start
// time as stored, so an id with no transaction since its InitProducerId
// (start time -1) passes it.
func (c *Coordinator) List(states []string, pids []int64, minDurationMs int64) ListResult {
	var res ListResult
	var want []State
	for _, s := range states {
		if st, ok := ParseState(s); ok {
			want = append(want, st)
		} else {
			res.UnknownStates = append(res.UnknownStates, s)
		}
	}
	now := c.cfg.Now().UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		res.Err = codeError(kerr.CoordinatorNotAvailable, "", "coordinator closed")
		return res
	}
	for id, t := range c.mu.txns {
		switch {
		case t.state == Dead:
		case len(pids) > 0 && !slices.Contains(pids, t.producerID):
		case len(states) > 0 && !slices.Contains(want, t.state):
		case minDurationMs >= 0 && now-t.startMs <= minDurationMs:
		default:
			res.Transactions = append(res.Transactions, Listing{TransactionalID: id, ProducerID: t.producerID, State: t.state})
		}
	}
	slices.SortFunc(res.Transactions, func(a, b Listing) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	return res
}
