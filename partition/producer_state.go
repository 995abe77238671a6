package partition

// Idempotent-producer state of one partition: what Kafka keeps in
// ProducerStateManager, ProducerStateEntry and BatchMetadata
// (storage/src/main/java/org/apache/kafka/storage/internals/log/), and the
// validation of ProducerAppendInfo, reduced to plain values so this file does
// not depend on the record-batch codec.
//
// The partition calls it under its own lock: Check before assigning offsets,
// Update after the append; CheckMarker and ApplyMarker for the end-transaction
// markers the transaction coordinator has written. Transactions are tracked
// as Kafka does (STORAGE-REFERENCE.md §2.7, §2.8): the first transactional
// batch of a producer opens a transaction at its offset, a marker closes it
// and yields a CompletedTxn, and the open transactions, ordered by first
// offset, give the partition its first unstable offset.

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// NumBatchesToRetain is how many recent batches are remembered per producer
// for duplicate detection. It is Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// and it matches the client's limit of 5 in-flight requests per connection
// with idempotence enabled: any retry the client can send is among them.
const NumBatchesToRetain = 5

// DefaultProducerIDExpirationMs is Kafka's default producer.id.expiration.ms
// (one day, TransactionLogConfig.PRODUCER_ID_EXPIRATION_MS_DEFAULT): how long
// a producer may stay idle before its state is dropped by Expire.
const DefaultProducerIDExpirationMs int64 = 86_400_000

// Sentinels of Kafka's RecordBatch (NO_PRODUCER_EPOCH, NO_SEQUENCE) used in
// producer views and for a producer without state.
const (
	noProducerEpoch int16 = -1
	noSequence      int32 = -1
)

// ProducerBatch is what the partition knows of an incoming batch's producer
// fields. It is a plain copy of the record-batch header fields so that
// producer state does not import the codec.
type ProducerBatch struct {
	// ProducerID is the batch's producer id; negative (Kafka's NO_PRODUCER_ID,
	// -1) means the producer is not idempotent and nothing is tracked
	// (DefaultRecordBatch.hasProducerId).
	ProducerID int64
	// ProducerEpoch fences older incarnations of the same producer id.
	ProducerEpoch int16
	// BaseSequence is the sequence number of the batch's first record.
	BaseSequence int32
	// LastOffsetDelta is the offset delta of the last record: the batch
	// holds sequences BaseSequence..BaseSequence+LastOffsetDelta, wrapping
	// past math.MaxInt32 to 0 (DefaultRecordBatch.incrementSequence).
	LastOffsetDelta int32
	// MaxTimestamp is the batch's max timestamp, kept as the producer's
	// LastTimestamp for DescribeProducers (ProducerStateEntry.lastTimestamp).
	MaxTimestamp int64
	// Transactional marks a batch of a transaction: the first one of a
	// producer without an open transaction opens one (which keeps the
	// producer from expiring); a non-transactional batch while one is open
	// is INVALID_TXN_STATE.
	Transactional bool
}

// BatchMetadata is what is remembered of one appended batch, Kafka's
// BatchMetadata. Kafka stores (lastSeq, lastOffset, offsetDelta, timestamp)
// and derives the first values; both ends are kept here so duplicate
// detection compares fields without arithmetic.
type BatchMetadata struct {
	FirstSeq     int32
	LastSeq      int32
	FirstOffset  int64
	LastOffset   int64
	MaxTimestamp int64
}

// producerEntry is the state of one producer id, Kafka's ProducerStateEntry.
// The batches live in a fixed array, oldest first; when it is full the
// oldest is shifted out (a ring whose head is kept at index 0). Shifting four
// 32-byte values costs about as much as the index arithmetic of a ring and
// keeps the layout canonical, so Clone, snapshots and reflect.DeepEqual need
// no normalisation. Slots at index >= n are always zero for the same reason.
type producerEntry struct {
	epoch int16
	// coordinatorEpoch is the epoch of the last transaction coordinator that
	// wrote a marker; -1 until then (ProducerStateEntry.empty).
	coordinatorEpoch int32
	// txnFirstOffset is the first offset of the open transaction, -1 if none
	// (ProducerStateEntry.currentTxnFirstOffset).
	txnFirstOffset int64
	// lastTimestamp is the max timestamp of the last batch (Kafka's
	// lastTimestamp), reported by DescribeProducers.
	lastTimestamp int64
	// lastAppendMs is the broker's clock at the last append; expiry uses it.
	lastAppendMs int64
	// lastTxnFirst and lastTxnLast are the first offset and the marker
	// offset of the producer's last completed transaction, -1 if none. Kafka
	// does not keep them: it rebuilds state from an older snapshot when the
	// log is cut. Here TruncateAfter uses them to reopen a transaction whose
	// marker was cut off while its data survived.
	lastTxnFirst int64
	lastTxnLast  int64
	n            uint8
	batches      [NumBatchesToRetain]BatchMetadata
}

// lastSeq returns the last sequence appended in the current epoch, or -1 if
// no batch is remembered (ProducerStateEntry.lastSeq).
func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return noSequence
	}
	return e.batches[e.n-1].LastSeq
}

// ProducerStates holds the state of every idempotent or transactional
// producer that wrote to one partition (Kafka's ProducerStateManager without
// the snapshot files, and without the completed transactions waiting for the
// high watermark, which the partition keeps). It is not safe for concurrent
// use: the partition's mutex guards it. The zero value is not usable; call
// NewProducerStates.
type ProducerStates struct {
	producers map[int64]*producerEntry
	// ongoing lists the open transactions by increasing first offset
	// (Kafka's ongoingTxns). It mirrors the entries' txnFirstOffset and is
	// short: one element per producer with an open transaction on this
	// partition. Its array is kept when it empties, so that a steady
	// stream of transactions allocates nothing.
	ongoing []ongoingTxn
}

// ongoingTxn is an open transaction (Kafka's TxnMetadata).
type ongoingTxn struct {
	producerID  int64
	firstOffset int64
}

// NewProducerStates returns an empty state table.
func NewProducerStates() *ProducerStates {
	return &ProducerStates{producers: make(map[int64]*producerEntry)}
}

// Len returns the number of producers with state (Kafka's producerIdCount).
func (s *ProducerStates) Len() int { return len(s.producers) }

// Check decides what to do with a batch before it is appended, following
// UnifiedLog.analyzeAndValidateProducerState and ProducerAppendInfo (client
// origin) in this order:
//
//   - ProducerID < 0: not idempotent; ok, nothing to check.
//   - BaseSequence < 0 or LastOffsetDelta < 0: kerr.InvalidRecord (the codec
//     already refuses these, as Kafka's LogValidator does; checked again so the
//     sequence arithmetic below never sees them).
//   - same epoch and the same (first, last) sequence as one of the last 5
//     batches: a duplicate (ProducerStateEntry.findDuplicateBatch); dup is true
//     and firstOffset/lastOffset are the original batch's, so the broker
//     answers with them and writes nothing.
//   - epoch below the current one: kerr.InvalidProducerEpoch
//     (ProducerAppendInfo.checkProducerEpoch; since Kafka 2.7 this replaces
//     PRODUCER_FENCED so the client can abort and retry).
//   - epoch differs from the current one (a newer epoch, or a producer
//     without state): the sequence must restart at 0, else
//     kerr.OutOfOrderSequenceNumber, except that a producer without state
//     may start at any sequence. See checkSequence below for why.
//   - same epoch: BaseSequence must be the last sequence + 1, with
//     math.MaxInt32 followed by 0 (ProducerAppendInfo.inSequence), else
//     kerr.OutOfOrderSequenceNumber. A batch older than the last 5 is not
//     found as a duplicate and so also fails here, as in Kafka.
//   - a non-transactional batch from a producer with an open transaction:
//     kerr.InvalidTxnState (ProducerAppendInfo.appendDataBatch, checked after
//     epoch and sequence as there).
//
// Errors wrap the kerr sentinel, so errors.Is(err, kerr.OutOfOrderSequenceNumber)
// works and the broker's error mapping finds the code. When dup is false,
// firstOffset and lastOffset are -1. Check changes nothing; call Update
// after the append. It does not allocate unless it returns an error.
func (s *ProducerStates) Check(b ProducerBatch) (dup bool, firstOffset, lastOffset int64, err error) {
	if b.ProducerID < 0 {
		return false, -1, -1, nil
	}
	if b.BaseSequence < 0 || b.LastOffsetDelta < 0 {
		return false, -1, -1, fmt.Errorf("partition: producer %d: invalid sequence range: base sequence %d, last offset delta %d: %w",
			b.ProducerID, b.BaseSequence, b.LastOffsetDelta, kerr.InvalidRecord)
	}
	e := s.producers[b.ProducerID]
	currentEpoch, currentLastSeq := noProducerEpoch, noSequence
	if e != nil {
		currentEpoch, currentLastSeq = e.epoch, e.lastSeq()
		// Duplicates first, as UnifiedLog.analyzeAndValidateProducerState
		// does before any validation: a retry of an acknowledged-but-lost
		// batch must get its original offsets, not an error.
		if e.epoch == b.ProducerEpoch {
			lastSeq := incrementSequence(b.BaseSequence, b.LastOffsetDelta)
			for i := range int(e.n) {
				m := &e.batches[i]
				if m.FirstSeq == b.BaseSequence && m.LastSeq == lastSeq {
					return true, m.FirstOffset, m.LastOffset, nil
				}
			}
		}
	}
	if b.ProducerEpoch < currentEpoch {
		return false, -1, -1, fmt.Errorf("partition: producer %d: epoch %d is older than the current epoch %d: %w",
			b.ProducerID, b.ProducerEpoch, currentEpoch, kerr.InvalidProducerEpoch)
	}
	if err := checkSequence(b, currentEpoch, currentLastSeq); err != nil {
		return false, -1, -1, err
	}
	if e != nil && e.txnFirstOffset >= 0 && !b.Transactional {
		return false, -1, -1, fmt.Errorf("partition: producer %d: non-transactional batch while the transaction from offset %d is open: %w",
			b.ProducerID, e.txnFirstOffset, kerr.InvalidTxnState)
	}
	return false, -1, -1, nil
}

// checkSequence is ProducerAppendInfo.checkSequence for a client append.
//
// A producer without state here has epoch NO_PRODUCER_EPOCH (-1) and no last
// sequence. Up to Kafka 2.4 a first batch with sequence != 0 from such a
// producer got UNKNOWN_PRODUCER_ID (kafka.log.ProducerAppendInfo.checkSequence
// threw UnknownProducerIdException in the "new epoch" branch when the current
// epoch was NO_PRODUCER_EPOCH). KIP-360 (Kafka 2.5, with KAFKA-7190 keeping
// producer state after its records are deleted) removed that: the current
// ProducerAppendInfo.checkSequence throws OutOfOrderSequenceException in that
// branch only when `updatedEntry.producerEpoch() != RecordBatch.NO_PRODUCER_EPOCH`,
// and in the same-epoch branch accepts any sequence when
// `currentEntry.producerEpoch() == RecordBatch.NO_PRODUCER_EPOCH` ("possibly
// because all producer records have been deleted due to retention or the
// DeleteRecords API"). So a 3.x/4.x leader accepts any first sequence from a
// producer it has no state for, and so does this. The one exception in Kafka,
// a transactions-v2 producer whose partition is being verified
// (verificationStateEntry.supportsEpochBump()), must start at 0; that belongs
// to transactions and is not done here.
func checkSequence(b ProducerBatch, currentEpoch int16, currentLastSeq int32) error {
	if b.ProducerEpoch != currentEpoch {
		if b.BaseSequence != 0 && currentEpoch != noProducerEpoch {
			return fmt.Errorf("partition: producer %d: new epoch %d (current %d) must start at sequence 0, got %d: %w",
				b.ProducerID, b.ProducerEpoch, currentEpoch, b.BaseSequence, kerr.OutOfOrderSequenceNumber)
		}
		return nil
	}
	if currentEpoch == noProducerEpoch {
		return nil
	}
	// With the epoch known and no batch remembered (only possible once
	// markers bump epochs) currentLastSeq is -1 and the batch must start at 0.
	if !inSequence(currentLastSeq, b.BaseSequence) {
		return fmt.Errorf("partition: producer %d epoch %d: out of order sequence %d, last sequence %d: %w",
			b.ProducerID, b.ProducerEpoch, b.BaseSequence, currentLastSeq, kerr.OutOfOrderSequenceNumber)
	}
	return nil
}

// inSequence reports whether next follows last (ProducerAppendInfo.inSequence).
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// incrementSequence adds inc to a sequence, wrapping past math.MaxInt32 to 0
// (DefaultRecordBatch.incrementSequence). Both arguments are non-negative.
func incrementSequence(seq, inc int32) int32 {
	return int32((int64(seq) + int64(inc)) % (math.MaxInt32 + 1))
}

// decrementSequence is the inverse of incrementSequence
// (DefaultRecordBatch.decrementSequence).
func decrementSequence(seq, dec int32) int32 {
	const m = math.MaxInt32 + 1
	return int32(((int64(seq)-int64(dec))%m + m) % m)
}

// CheckCoordinator decides whether a batch that a coordinator of this
// broker built may be appended (Kafka's AppendOrigin.COORDINATOR, e.g. the
// transactional offsets of TxnOffsetCommit): such a batch has no sequence,
// so only the epoch (kerr.InvalidProducerEpoch) and the transaction state
// (kerr.InvalidTxnState) are checked, and there are no duplicates
// (UnifiedLog checks duplicates for client appends only). It does not
// allocate unless it returns an error.
func (s *ProducerStates) CheckCoordinator(b ProducerBatch) error {
	if b.ProducerID < 0 {
		return nil
	}
	e := s.producers[b.ProducerID]
	if e == nil {
		return nil
	}
	if b.ProducerEpoch < e.epoch {
		return fmt.Errorf("partition: producer %d: epoch %d is older than the current epoch %d: %w",
			b.ProducerID, b.ProducerEpoch, e.epoch, kerr.InvalidProducerEpoch)
	}
	if e.txnFirstOffset >= 0 && !b.Transactional {
		return fmt.Errorf("partition: producer %d: non-transactional batch while the transaction from offset %d is open: %w",
			b.ProducerID, e.txnFirstOffset, kerr.InvalidTxnState)
	}
	return nil
}

// Update records a batch appended at baseOffset, after Check (or, for a
// coordinator's batch, CheckCoordinator) said ok and not a duplicate; nowMs
// is the broker's clock at the append, used by Expire.
// Recovery calls it for each batch header it replays, without Check, as
// Kafka rebuilds state with AppendOrigin.REPLICATION semantics.
//
// As ProducerStateEntry.addBatch: a different epoch replaces the epoch and
// forgets the old epoch's batches (maybeUpdateProducerEpoch); the oldest of 5
// batches makes room for the new one. The first transactional batch of a
// producer without an open transaction opens one at baseOffset
// (ProducerAppendInfo.appendDataBatch). A batch without a sequence
// (BaseSequence < 0: a coordinator's) updates the epoch, timestamps and
// transaction but is not remembered for duplicate detection. Batches with a
// negative producer id or delta are ignored, and so must control batches be
// (the caller's duty): markers go through ApplyMarker. Update does not
// allocate for a producer that already has state, except when it opens the
// partition's first concurrent transactions.
func (s *ProducerStates) Update(b ProducerBatch, baseOffset int64, nowMs int64) {
	if b.ProducerID < 0 || b.LastOffsetDelta < 0 {
		return
	}
	e := s.producers[b.ProducerID]
	switch {
	case e == nil:
		e = newProducerEntry(b.ProducerEpoch)
		s.producers[b.ProducerID] = e
	case e.epoch != b.ProducerEpoch:
		e.epoch = b.ProducerEpoch
		e.n = 0
		e.batches = [NumBatchesToRetain]BatchMetadata{}
	}
	if b.BaseSequence >= 0 {
		if e.n == NumBatchesToRetain {
			copy(e.batches[:], e.batches[1:])
			e.n--
		}
		e.batches[e.n] = BatchMetadata{
			FirstSeq:     b.BaseSequence,
			LastSeq:      incrementSequence(b.BaseSequence, b.LastOffsetDelta),
			FirstOffset:  baseOffset,
			LastOffset:   baseOffset + int64(b.LastOffsetDelta),
			MaxTimestamp: b.MaxTimestamp,
		}
		e.n++
	}
	e.lastTimestamp = b.MaxTimestamp
	e.lastAppendMs = nowMs
	if b.Transactional && e.txnFirstOffset < 0 {
		e.txnFirstOffset = baseOffset
		s.addOngoing(b.ProducerID, baseOffset)
	}
}

// newProducerEntry is a producer without batches or transactions
// (ProducerStateEntry.empty with the epoch set).
func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, coordinatorEpoch: -1, txnFirstOffset: -1, lastTxnFirst: -1, lastTxnLast: -1}
}

// addOngoing records an open transaction, keeping ongoing sorted by first
// offset (a new transaction starts at the log end, so this is an append in
// practice).
func (s *ProducerStates) addOngoing(producerID, first int64) {
	t := ongoingTxn{producerID: producerID, firstOffset: first}
	i, _ := slices.BinarySearchFunc(s.ongoing, t, compareOngoing)
	s.ongoing = slices.Insert(s.ongoing, i, t)
}

// compareOngoing orders open transactions by first offset, then producer
// id (only a damaged snapshot can hold two at one offset).
func compareOngoing(a, b ongoingTxn) int {
	if c := cmp.Compare(a.firstOffset, b.firstOffset); c != 0 {
		return c
	}
	return cmp.Compare(a.producerID, b.producerID)
}

// removeOngoing forgets the open transaction of producerID, if any.
func (s *ProducerStates) removeOngoing(producerID int64) {
	for i, t := range s.ongoing {
		if t.producerID == producerID {
			s.ongoing = slices.Delete(s.ongoing, i, i+1)
			return
		}
	}
}

// FirstOpenOffset returns the first offset of the oldest open transaction
// (Kafka's firstUndecidedOffset), and false when none is open.
func (s *ProducerStates) FirstOpenOffset() (int64, bool) {
	if len(s.ongoing) == 0 {
		return -1, false
	}
	return s.ongoing[0].firstOffset, true
}

// OpenTransactions returns how many transactions are open.
func (s *ProducerStates) OpenTransactions() int { return len(s.ongoing) }

// Marker is an end-transaction marker as producer state sees it: the
// producer fields of its control batch and its control record.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the transaction version of the marker
	// (WriteTxnMarkers v2, KIP-890 part 2): from 2 on, its epoch is the
	// one transactions v2 bumped at the end of the transaction and must
	// be above the producer's (ProducerAppendInfo.checkProducerEpoch).
	// It is not stored; recovery replays markers unchecked.
	TransactionVersion int8
	// Timestamp is the marker's timestamp, which becomes the producer's
	// LastTimestamp (ProducerStateEntry.update).
	Timestamp int64
}

// CompletedTxn is a transaction that a marker ended (Kafka's CompletedTxn),
// with the last stable offset Kafka records in the transaction index for
// it.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	// LastOffset is the marker's offset.
	LastOffset int64
	// LastStableOffset is the first offset of the oldest transaction of
	// another producer still open when the marker was written, else
	// LastOffset + 1 (ProducerStateManager.lastStableOffset(CompletedTxn)):
	// every transaction that completes later starts at or after it, which
	// lets a search of aborted transactions stop early.
	LastStableOffset int64
	Aborted          bool
}

// CheckMarker decides whether a marker may be written, as
// ProducerAppendInfo.appendEndTxnMarker does for a marker from the
// coordinator:
//
//   - a producer epoch below the current one: kerr.InvalidProducerEpoch
//     (checkProducerEpoch with the rules of transaction versions 0 and 1,
//     where markers carry the transaction's epoch; the stricter version-2
//     rule, marker epoch above the current one, is the coordinator's to
//     keep: this broker's coordinator is in the same process and never
//     sends a stale marker);
//   - a coordinator epoch below the last one seen for the producer:
//     kerr.TransactionCoordinatorFenced (checkCoordinatorEpoch).
//
// A producer without state, or without an open transaction, passes: Kafka
// writes such a marker too, and it completes nothing. CheckMarker changes
// nothing and does not allocate unless it returns an error.
func (s *ProducerStates) CheckMarker(m Marker) error {
	if m.ProducerID < 0 {
		return fmt.Errorf("partition: marker without a producer id: %w", kerr.InvalidProducerIDMapping)
	}
	e := s.producers[m.ProducerID]
	if e == nil {
		return nil
	}
	if m.ProducerEpoch < e.epoch {
		return fmt.Errorf("partition: producer %d: marker epoch %d is older than the current epoch %d: %w",
			m.ProducerID, m.ProducerEpoch, e.epoch, kerr.InvalidProducerEpoch)
	}
	// Transactions v2: the marker's epoch must be above the epoch of the
	// transaction's data. The same epoch is a retried marker of a
	// transaction already ended here (no transaction open), or one at
	// 32767, which a fence cannot bump; Kafka writes it again.
	if m.TransactionVersion >= 2 && m.ProducerEpoch == e.epoch && e.txnFirstOffset >= 0 && m.ProducerEpoch != math.MaxInt16 {
		return fmt.Errorf("partition: producer %d: transactions v2 marker epoch %d is not above the epoch %d of its open transaction: %w",
			m.ProducerID, m.ProducerEpoch, e.epoch, kerr.InvalidProducerEpoch)
	}
	if m.CoordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("partition: producer %d: marker from coordinator epoch %d, older than %d: %w",
			m.ProducerID, m.CoordinatorEpoch, e.coordinatorEpoch, kerr.TransactionCoordinatorFenced)
	}
	return nil
}

// ownCoordinatorEpoch is the coordinator epoch of a marker of this broker's
// own coordinator for producerID (see OwnCoordinatorEpoch): the epoch of
// its last marker, 0 before any.
func (s *ProducerStates) ownCoordinatorEpoch(producerID int64) int32 {
	if e := s.producers[producerID]; e != nil {
		return max(0, e.coordinatorEpoch)
	}
	return 0
}

// ApplyMarker records a marker written at offset, after CheckMarker said ok
// (recovery calls it without the check, as Kafka replays with replication
// semantics). If the producer had an open transaction it is closed and
// returned with ok true (Kafka emits a CompletedTxn only for a transaction
// with data). The producer's epoch becomes the marker's (a different epoch
// forgets the remembered batches), its coordinator epoch the marker's, and
// its last timestamp the marker's timestamp (ProducerStateEntry.update); a
// producer without state gets an entry with no batches. nowMs is the expiry
// clock.
func (s *ProducerStates) ApplyMarker(m Marker, offset, nowMs int64) (txn CompletedTxn, ok bool) {
	if m.ProducerID < 0 {
		return CompletedTxn{}, false
	}
	e := s.producers[m.ProducerID]
	if e == nil {
		e = newProducerEntry(m.ProducerEpoch)
		s.producers[m.ProducerID] = e
	}
	if e.txnFirstOffset >= 0 {
		txn = CompletedTxn{
			ProducerID:       m.ProducerID,
			FirstOffset:      e.txnFirstOffset,
			LastOffset:       offset,
			LastStableOffset: offset + 1,
			Aborted:          !m.Commit,
		}
		for _, o := range s.ongoing {
			if o.producerID != m.ProducerID {
				txn.LastStableOffset = o.firstOffset
				break
			}
		}
		ok = true
		s.removeOngoing(m.ProducerID)
		e.lastTxnFirst, e.lastTxnLast = e.txnFirstOffset, offset
		e.txnFirstOffset = -1
	}
	if e.epoch != m.ProducerEpoch {
		e.epoch = m.ProducerEpoch
		e.n = 0
		e.batches = [NumBatchesToRetain]BatchMetadata{}
	}
	e.coordinatorEpoch = m.CoordinatorEpoch
	e.lastTimestamp = m.Timestamp
	e.lastAppendMs = nowMs
	return txn, ok
}

// Expire removes producers that appended nothing for expirationMs
// (producer.id.expiration.ms, DefaultProducerIDExpirationMs) and have no open
// transaction, and returns how many it removed. The rule is Kafka's
// ProducerStateManager.isProducerExpired (expired when now - last >=
// expiration) with one difference: Kafka measures from the last batch's max
// timestamp, which is the producer's clock under CreateTime; this measures
// from the broker's append time passed to Update, so a skewed client clock
// can neither keep state forever nor lose it early.
func (s *ProducerStates) Expire(nowMs, expirationMs int64) int {
	removed := 0
	for id, e := range s.producers {
		if e.txnFirstOffset < 0 && nowMs-e.lastAppendMs >= expirationMs {
			delete(s.producers, id)
			removed++
		}
	}
	return removed
}

// TruncateAfter forgets every batch whose LastOffset >= offset, an open
// transaction that started at or after offset, and producers whose remaining
// batches were all removed by this call. Recovery uses it when it cut the
// partition's tail, so that a producer retrying a lost batch is in sequence
// again. Kafka instead reloads the newest snapshot below the cut and replays
// (ProducerStateManager.truncateAndReload); trimming in place gives the same
// batches for everything within the last 5, but cannot bring back an older
// epoch's batches, so a producer whose whole current epoch was cut becomes
// unknown, and is then accepted at any sequence. A producer that had no batch
// before the call (state from a snapshot of a marker-only entry) is kept.
//
// A transaction whose marker was cut off but whose first offset survived is
// open again, as it was before the marker: the coordinator sends the marker
// again after a restart, and until then its data must stay unstable. A
// producer with such a reopened transaction is kept even without batches.
func (s *ProducerStates) TruncateAfter(offset int64) {
	for id, e := range s.producers {
		had := e.n
		for e.n > 0 && e.batches[e.n-1].LastOffset >= offset {
			e.n--
			e.batches[e.n] = BatchMetadata{}
		}
		if e.txnFirstOffset >= offset {
			e.txnFirstOffset = -1
			s.removeOngoing(id)
		}
		if e.lastTxnLast >= offset {
			if e.txnFirstOffset < 0 && e.lastTxnFirst < offset {
				e.txnFirstOffset = e.lastTxnFirst
				s.addOngoing(id, e.txnFirstOffset)
			}
			e.lastTxnFirst, e.lastTxnLast = -1, -1
		}
		switch {
		case had > 0 && e.n == 0 && e.txnFirstOffset < 0:
			delete(s.producers, id)
		case e.n < had && e.n > 0:
			e.lastTimestamp = e.batches[e.n-1].MaxTimestamp
		}
	}
}

// Clone returns a deep copy, for tests and model checks.
func (s *ProducerStates) Clone() *ProducerStates {
	c := &ProducerStates{producers: make(map[int64]*producerEntry, len(s.producers)), ongoing: slices.Clone(s.ongoing)}
	for id, e := range s.producers {
		cp := *e
		c.producers[id] = &cp
	}
	return c
}

// ProducerView is a read-only copy of one producer's state, with the fields
// DescribeProducers reports (DescribeProducersResponse.ProducerState) and the
// remembered batches, oldest first, so a caller that found a duplicate can
// also read its timestamp (UnifiedLog answers a duplicate with its
// timestamp as LogAppendTime).
type ProducerView struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is the last sequence of the newest batch, -1 if none.
	LastSequence int32
	// LastOffset is the last offset of the newest batch, -1 if none.
	LastOffset int64
	// LastTimestamp is the max timestamp of the newest batch.
	LastTimestamp int64
	// LastAppendMs is the broker time of the newest append (expiry clock).
	LastAppendMs int64
	// CoordinatorEpoch is the epoch of the coordinator that wrote the
	// producer's last marker, -1 before any.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of the open transaction, -1 if none.
	CurrentTxnStartOffset int64
	// NumBatches is how many entries of Batches are valid.
	NumBatches int
	// Batches are the last NumBatches appended batches, oldest first.
	Batches [NumBatchesToRetain]BatchMetadata
}

func (e *producerEntry) view(id int64) ProducerView {
	v := ProducerView{
		ProducerID:            id,
		ProducerEpoch:         e.epoch,
		LastSequence:          e.lastSeq(),
		LastOffset:            -1,
		LastTimestamp:         e.lastTimestamp,
		LastAppendMs:          e.lastAppendMs,
		CoordinatorEpoch:      e.coordinatorEpoch,
		CurrentTxnStartOffset: e.txnFirstOffset,
		NumBatches:            int(e.n),
		Batches:               e.batches,
	}
	if e.n > 0 {
		v.LastOffset = e.batches[e.n-1].LastOffset
	}
	return v
}

// Get returns the state of one producer, and false if it has none.
func (s *ProducerStates) Get(producerID int64) (ProducerView, bool) {
	e := s.producers[producerID]
	if e == nil {
		return ProducerView{}, false
	}
	return e.view(producerID), true
}

// All yields every producer's state in increasing producer id order, for
// DescribeProducers (Kafka's ProducerStateManager.activeProducers). The
// table must not be modified during the iteration.
func (s *ProducerStates) All() iter.Seq[ProducerView] {
	return func(yield func(ProducerView) bool) {
		for _, id := range s.sortedIDs() {
			if !yield(s.producers[id].view(id)) {
				return
			}
		}
	}
}

func (s *ProducerStates) sortedIDs() []int64 {
	ids := make([]int64, 0, len(s.producers))
	for id := range s.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
