package txn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record versions in __transaction_state (Kafka's TransactionLogKey and
// TransactionLogValue). The value is written at version 1 (flexible, what
// Kafka writes once transaction.version ≥ 1) because its tagged field
// PreviousProducerId is what lets a retried InitProducerId recognise a
// producer id rotation after a restart; NextProducerId and
// ClientTransactionVersion (0, or 2 for a transition of transactions v2)
// carry what a transactions v2 completion needs across a restart. Both
// value versions are read.
const (
	keyVersion   = 0
	valueVersion = 1
)

// transactionVersion2 is the transaction.version level of transactions v2
// (KIP-890 part 2), as stored in ClientTransactionVersion.
const transactionVersion2 = 2

// rec is one record of __transaction_state: a transactional id's whole
// state after a transition (Kafka's TxnTransitMetadata), or its tombstone.
// The run-time writers build recs and encode them; replay decodes them;
// both apply them the same way (txnMeta.apply).
type rec struct {
	id        string
	tombstone bool

	producerID     int64
	prevProducerID int64
	// nextProducerID is NextProducerId: the producer id a transactions
	// v2 completion moves to (-1: none).
	nextProducerID int64
	// v2 is ClientTransactionVersion ≥ 2.
	v2    bool
	epoch int16
	// lastEpoch is not stored (Kafka has no field for it): a decoded
	// record has -1.
	lastEpoch  int16
	timeoutMs  int32
	state      State
	partitions []TopicPartition // sorted
	startMs    int64
	updateMs   int64
}

// appendKey appends the record key.
func (r *rec) appendKey(dst []byte) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: r.id}
	return k.AppendTo(dst)
}

// appendValue appends the record value (not for a tombstone, whose value
// is null). Partitions are grouped by topic in sorted order; Empty has a
// null partition list, as Kafka writes it.
func (r *rec) appendValue(dst []byte) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID = r.producerID
	v.ProducerEpoch = r.epoch
	v.TimeoutMillis = r.timeoutMs
	v.State = kmsg.TransactionState(r.state)
	v.LastUpdateTimestamp = r.updateMs
	v.StartTimestamp = r.startMs
	v.PreviousProducerID = r.prevProducerID
	v.NextProducerID = r.nextProducerID
	if r.v2 {
		v.ClientTransactionVersion = transactionVersion2
	}
	if r.state != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range r.partitions {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
	}
	return v.AppendTo(dst)
}

var errRecord = errors.New("txn: bad record")

// decodeRec decodes a stored record. ok is false for a key version this
// coordinator does not know (Kafka's UnknownKey, skipped); err is for a
// record of a known key that does not decode, or whose state cannot be
// stored (Dead and PrepareEpochFence are never written; a Dead value is
// taken as the tombstone it stands for).
func decodeRec(key, value []byte) (r rec, ok bool, err error) {
	if len(key) < 2 {
		return rec{}, false, fmt.Errorf("%w: key of %d bytes", errRecord, len(key))
	}
	if version := int16(key[0])<<8 | int16(key[1]); version != keyVersion {
		return rec{}, false, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return rec{}, false, fmt.Errorf("%w: key: %w", errRecord, err)
	}
	r = rec{id: k.TransactionalID}
	if value == nil {
		r.tombstone = true
		return r, true, nil
	}
	// Tagged fields absent from the bytes keep Kafka's defaults (-1).
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(value); err != nil {
		return rec{}, false, fmt.Errorf("%w: value of %q: %w", errRecord, k.TransactionalID, err)
	}
	if v.Version > valueVersion {
		return rec{}, false, fmt.Errorf("%w: value of %q has version %d", errRecord, k.TransactionalID, v.Version)
	}
	switch s := State(v.State); {
	case s == Dead:
		r.tombstone = true
		return r, true, nil
	case s < Empty || s > CompleteAbort:
		return rec{}, false, fmt.Errorf("%w: value of %q has state %d", errRecord, k.TransactionalID, v.State)
	}
	r.producerID, r.prevProducerID, r.nextProducerID = v.ProducerID, v.PreviousProducerID, v.NextProducerID
	r.v2 = v.ClientTransactionVersion >= transactionVersion2
	r.epoch, r.lastEpoch = v.ProducerEpoch, noProducerEpoch
	r.timeoutMs, r.state = v.TimeoutMillis, State(v.State)
	r.startMs, r.updateMs = v.StartTimestamp, v.LastUpdateTimestamp
	if r.state != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				r.partitions = append(r.partitions, TopicPartition{t.Topic, p})
			}
		}
		slices.SortFunc(r.partitions, compareTP)
		r.partitions = slices.Compact(r.partitions)
	}
	return r, true, nil
}

// state is the Coordinator as coordlog sees it. Apply and Live run with
// the log's lock held and take Coordinator.mu (lock order: the log's,
// then Coordinator.mu).
type state Coordinator

func (st *state) AppendKey(dst []byte, r *rec) []byte { return r.appendKey(dst) }

func (st *state) AppendValue(dst []byte, r *rec) ([]byte, bool) {
	if r.tombstone {
		return dst, false
	}
	return r.appendValue(dst), true
}

func (st *state) Decode(key, value []byte) (rec, bool, error) { return decodeRec(key, value) }

func (st *state) Apply(r *rec) {
	c := (*Coordinator)(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	// Adds parked on the id decide again (after this record, from their
	// own goroutines: the log's lock is held here).
	defer c.wakeLocked(r.id)
	if r.tombstone {
		delete(c.mu.txns, r.id)
		return
	}
	t := c.mu.txns[r.id]
	if t == nil {
		t = &txnMeta{id: r.id}
		c.mu.txns[r.id] = t
	}
	t.apply(r)
}

func (st *state) Live(yield func(*rec)) {
	c := (*Coordinator)(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.mu.txns {
		if t.written {
			r := t.record()
			yield(&r)
		}
	}
}
