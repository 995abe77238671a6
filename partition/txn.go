package partition

// Transactions on a partition (KIP-98; STORAGE-REFERENCE.md §2.8, §3.9):
// end-transaction markers, the last stable offset, and the index of aborted
// transactions that read_committed fetches report.
//
// Producer state (producer_state.go, under Partition.mu) knows which
// transactions are open. Two things are kept beside it:
//
//   - Partition.stable: the first offset of the oldest open transaction
//     (mirrored from producer state) and the completed transactions whose
//     marker is not yet below the high watermark (Kafka's unreplicatedTxns;
//     here "not yet visible": in sync mode a marker counts once it is
//     flushed). The last stable offset is recomputed from them whenever the
//     high watermark moves, which happens without Partition.mu (the flush
//     hooks), so they have their own leaf lock; readers load an atomic.
//   - Partition.aborted: every aborted transaction whose marker is at or
//     after the log start offset, in marker order, with Kafka's txnindex
//     fields (producer id, first offset, marker offset, last stable offset at
//     the marker). It lives in memory (32 bytes an entry), is saved in the
//     partition checkpoint beside the producer snapshot, taken under the same
//     lock so both cover the same offsets, and recovery re-adds the aborts it
//     replays after the checkpoint. Entries go when the log start offset
//     passes their marker (retention, DeleteRecords), as Kafka deletes a
//     txnindex with its segment, so the index is bounded by the aborts still
//     in the log.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition/batch"
)

// AbortedTxn is one aborted transaction of a read_committed fetch response
// (FetchResponse AbortedTransactions): the consumer drops the producer's
// transactional records from FirstOffset on until it reads the producer's
// ABORT marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// abortedEntry is an aborted transaction in the partition's index (Kafka's
// AbortedTxn, a txnindex entry).
type abortedEntry struct {
	producerID int64
	first      int64
	// last is the offset of the ABORT marker.
	last int64
	// lso is CompletedTxn.LastStableOffset: every entry after this one has
	// its first offset at or after it.
	lso int64
}

// decidedTxn is a completed transaction whose marker is not yet visible.
type decidedTxn struct {
	first, last int64
}

// LastStableOffset is the offset below which every transaction is decided
// and its marker visible: the end of what read_committed consumers may read
// (Kafka's UnifiedLog.lastStableOffset). It is the first offset of the oldest
// open transaction, or of the oldest completed one whose marker is not yet
// below the high watermark, else the high watermark; never below the log
// start offset (Kafka's maybeIncrementFirstUnstableOffset clamps it there).
func (p *Partition) LastStableOffset() int64 { return p.lastStable.Load() }

// WaitStable returns a channel that is closed when the last stable offset
// moves past lso, or at once if it already has; read_committed fetches park
// on it. The channel is shared with Wait, so it may also close for a move of
// the high watermark alone: check LastStableOffset again and wait anew.
func (p *Partition) WaitStable(lso int64) <-chan struct{} { return p.waitPast(&p.lastStable, lso) }

// wake closes the channel that Wait and WaitStable hand out.
func (p *Partition) wake() {
	p.changes.Add(1)
	p.vis.Lock()
	if p.vis.wait != nil {
		close(p.vis.wait)
		p.vis.wait = nil
	}
	p.vis.Unlock()
	p.signalWatchers()
}

// refreshStableLocked recomputes the last stable offset, dropping completed
// transactions whose marker is now below the high watermark (Kafka's
// onHighWatermarkUpdated). It reports whether the offset changed. The caller
// holds p.stable. The high watermark is loaded here, under the lock, so that
// concurrent callers store values in the order of the state they saw.
func (p *Partition) refreshStableLocked() bool {
	hw := p.highWatermark.Load()
	lso := hw
	if f := p.stable.firstOpen; f >= 0 && f < lso {
		lso = f
	}
	kept := p.stable.decided[:0]
	for _, d := range p.stable.decided {
		if d.last >= hw {
			kept = append(kept, d)
			lso = min(lso, d.first)
		}
	}
	clear(p.stable.decided[len(kept):])
	p.stable.decided = kept
	lso = max(lso, p.logStart.Load())
	return p.lastStable.Swap(lso) != lso
}

// refreshStable is refreshStableLocked with the lock taken; it wakes parked
// fetches when the last stable offset moved.
func (p *Partition) refreshStable() {
	p.stable.Lock()
	changed := p.refreshStableLocked()
	p.stable.Unlock()
	if changed {
		p.wake()
	}
}

// syncOpenLocked copies the oldest open transaction from producer state
// after a transactional batch (which may have opened one) and, when the
// marker at hand completed one, queues it until its marker is visible. The
// caller holds p.mu, before the batch is published: a transaction opens at
// or after the high watermark, so the last stable offset never goes back.
func (p *Partition) syncOpenLocked(done *CompletedTxn) {
	p.stable.Lock()
	p.stable.firstOpen = -1
	if f, ok := p.mu.producers.FirstOpenOffset(); ok {
		p.stable.firstOpen = f
	}
	if done != nil {
		p.stable.decided = append(p.stable.decided, decidedTxn{first: done.FirstOffset, last: done.LastOffset})
	}
	changed := p.refreshStableLocked()
	p.stable.Unlock()
	if changed {
		p.wake()
	}
}

// OwnCoordinatorEpoch, as the coordinator epoch of AppendMarker, stands for
// this broker's own transaction coordinator. Kafka's coordinator epoch is
// the leader epoch of the coordinator's __transaction_state partition, so
// that a coordinator that lost the partition cannot write markers after
// its successor; one node has one coordinator, which nothing can succeed,
// so its markers carry 0, or the epoch of the producer's last marker when
// an admin wrote one with a higher epoch (WriteTxnMarkers, e.g. Kafka's
// kafka-transactions.sh abort) — which must not fence the coordinator's
// later markers for that producer.
const OwnCoordinatorEpoch int32 = math.MinInt32

// AppendMarker writes an end-transaction marker for producerID (Kafka's
// WriteTxnMarkers on the partition leader, appended with the coordinator's
// origin): a control batch with the producer's id and epoch whose record
// says COMMIT or ABORT and carries the coordinator epoch. It is appended
// like any batch (offset, commit log, consume queue, high watermark), so in
// sync mode it is durable once Store.AwaitDurable(res.End) returns.
//
// The producer's open transaction here, if any, is closed; an ABORT adds it
// to the aborted-transaction index. A marker for a producer without an open
// transaction is still written, as Kafka does, and completes nothing. Its
// epoch becomes the producer's when higher (a new epoch forgets the
// producer's remembered batches). Errors wrap Kafka codes:
// INVALID_PRODUCER_EPOCH for an epoch below the producer's,
// TRANSACTION_COORDINATOR_FENCED for a coordinator epoch below the last
// marker's, and the storage errors of Append; nothing is written then.
// coordinatorEpoch OwnCoordinatorEpoch writes the marker of this broker's
// own transaction coordinator.
func (p *Partition) AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, nowMs int64) (AppendResult, error) {
	return p.AppendMarkerTV(producerID, epoch, commit, coordinatorEpoch, 0, nowMs)
}

// AppendMarkerTV is AppendMarker for a marker of the given transaction
// version (Marker.TransactionVersion): at 2 and up (transactions v2) its
// epoch must be above the producer's, unless it is a retry.
func (p *Partition) AppendMarkerTV(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, transactionVersion int8, nowMs int64) (AppendResult, error) {
	cfg := p.cfg.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.writableLocked("append marker"); err != nil {
		return AppendResult{}, err
	}
	if coordinatorEpoch == OwnCoordinatorEpoch {
		coordinatorEpoch = p.mu.producers.ownCoordinatorEpoch(producerID)
	}
	m := Marker{ProducerID: producerID, ProducerEpoch: epoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit, Timestamp: nowMs,
		TransactionVersion: transactionVersion}
	var buf [batch.HeaderSize + 32]byte
	b := batch.AppendEndTxnMarker(buf[:0], nowMs, producerID, epoch, batch.EndTxnMarker{Commit: commit, CoordinatorEpoch: coordinatorEpoch})
	if err := p.mu.producers.CheckMarker(m); err != nil {
		return AppendResult{}, fmt.Errorf("partition: append marker %s-%d: %w", p.topic, p.index, err)
	}
	w, err := p.writeLocked(b, 0, batch.AttrTransactional|batch.AttrControl, nowMs, cfg.LogAppendTime, nowMs)
	if err != nil {
		return AppendResult{}, err
	}
	if txn, ok := p.mu.producers.ApplyMarker(m, w.base, nowMs); ok {
		if txn.Aborted {
			p.addAborted(txn)
		}
		p.syncOpenLocked(&txn)
	}
	return p.publishLocked(w), nil
}

// AppendCoordinator appends a batch that a coordinator of this broker built
// with batch.AppendBuild, such as the transactional offset commits that
// TxnOffsetCommit writes to __consumer_offsets (Kafka's
// AppendOrigin.COORDINATOR). Such a batch carries a producer id and epoch
// but no sequence, so unlike Append it is checked for its producer's epoch
// (INVALID_PRODUCER_EPOCH) and transaction state (INVALID_TXN_STATE) only,
// never as a duplicate; a transactional one opens its producer's
// transaction here like a produced one, and AppendMarker ends it. The bytes
// must be exactly one intact batch (batch.Verify), not a control batch, and
// within max.message.bytes; they are stamped in place like Append's.
func (p *Partition) AppendCoordinator(records []byte, nowMs int64) (AppendResult, error) {
	cfg := p.cfg.Load()
	h, err := batch.Verify(records)
	if err != nil {
		return AppendResult{}, fmt.Errorf("partition: append %s-%d: %w", p.topic, p.index, err)
	}
	if h.IsControl() {
		return AppendResult{}, fmt.Errorf("partition: append %s-%d: a control batch goes through AppendMarker: %w", p.topic, p.index, kerr.InvalidRecord)
	}
	if h.Size() > cfg.MaxMessageBytes {
		return AppendResult{}, fmt.Errorf("partition: append %s-%d: batch of %d bytes exceeds max.message.bytes %d: %w",
			p.topic, p.index, h.Size(), cfg.MaxMessageBytes, kerr.MessageTooLarge)
	}
	pb := ProducerBatch{
		ProducerID:      h.ProducerID,
		ProducerEpoch:   h.ProducerEpoch,
		BaseSequence:    batch.NoSequence,
		LastOffsetDelta: h.LastOffsetDelta,
		MaxTimestamp:    h.MaxTimestamp,
		Transactional:   h.IsTransactional(),
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.writableLocked("append"); err != nil {
		return AppendResult{}, err
	}
	if err := p.mu.producers.CheckCoordinator(pb); err != nil {
		return AppendResult{}, fmt.Errorf("partition: append %s-%d: %w", p.topic, p.index, err)
	}
	return p.appendCheckedLocked(records, pb, h.Attributes, cfg.LogAppendTime, nowMs)
}

// replayMarkerLocked applies a marker found by recovery to producer state
// and the aborted index (not to p.stable: recovery sets the high watermark
// to the log end, which makes every replayed marker visible). A control
// batch that does not hold a readable marker passed the entry checksum, so
// it is what was written; it is skipped with a warning, as Kafka skips an
// empty control batch.
func (p *Partition) replayMarkerLocked(payload []byte, h batch.Header, nowMs int64) {
	em, err := batch.ParseEndTxnMarker(payload)
	if err != nil {
		p.store.lg.Warn("recovery skips an unreadable transaction marker", zap.String("topic", p.topic),
			zap.Int32("partition", p.index), zap.Int64("offset", h.BaseOffset), zap.Error(err))
		return
	}
	m := Marker{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, CoordinatorEpoch: em.CoordinatorEpoch,
		Commit: em.Commit, Timestamp: h.MaxTimestamp}
	if txn, ok := p.mu.producers.ApplyMarker(m, h.BaseOffset, nowMs); ok && txn.Aborted {
		p.addAborted(txn)
	}
}

// addAborted appends an aborted transaction to the index. Markers are
// appended in offset order, so the index stays sorted by marker offset.
func (p *Partition) addAborted(txn CompletedTxn) {
	p.aborted.Lock()
	p.aborted.entries = append(p.aborted.entries, abortedEntry{
		producerID: txn.ProducerID, first: txn.FirstOffset, last: txn.LastOffset, lso: txn.LastStableOffset,
	})
	p.aborted.Unlock()
}

// AbortedTransactions appends to dst the aborted transactions that overlap
// the offsets [from, to): those whose ABORT marker is at or after from and
// whose first offset is below to (Kafka's UnifiedLog.collectAbortedTransactions
// and TransactionIndex.collectAbortedTxns, including their early stop at an
// entry whose recorded last stable offset reaches to). A read_committed
// fetch passes its fetch offset and ReadResult.NextOffset. The entries come
// in marker order, as Kafka sends them. It allocates nothing when dst has
// room.
func (p *Partition) AbortedTransactions(from, to int64, dst []AbortedTxn) []AbortedTxn {
	p.aborted.RLock()
	defer p.aborted.RUnlock()
	es := p.aborted.entries
	i, _ := slices.BinarySearchFunc(es, from, func(e abortedEntry, from int64) int {
		if e.last < from {
			return -1
		}
		return 1
	})
	for ; i < len(es); i++ {
		e := &es[i]
		if e.first < to {
			dst = append(dst, AbortedTxn{ProducerID: e.producerID, FirstOffset: e.first})
		}
		if e.lso >= to {
			break
		}
	}
	return dst
}

// pruneAborted drops the aborted transactions whose marker is below the log
// start offset: no fetch can reach them. A backing array much larger than
// what remains is given back.
func (p *Partition) pruneAborted(logStart int64) {
	p.aborted.Lock()
	defer p.aborted.Unlock()
	es := p.aborted.entries
	k := 0
	for k < len(es) && es[k].last < logStart {
		k++
	}
	if k == 0 {
		return
	}
	es = slices.Delete(es, 0, k)
	if cap(es) > 64 && 4*len(es) < cap(es) {
		es = slices.Clone(es)
	}
	if len(es) == 0 {
		es = nil
	}
	p.aborted.entries = es
}

// truncateAborted drops the aborted transactions whose marker is at or
// after offset (recovery cut the log there).
func (p *Partition) truncateAborted(offset int64) {
	p.aborted.Lock()
	defer p.aborted.Unlock()
	es := p.aborted.entries
	n := len(es)
	for n > 0 && es[n-1].last >= offset {
		n--
	}
	clear(es[n:])
	p.aborted.entries = es[:n]
	if n == 0 {
		p.aborted.entries = nil
	}
}

// onLogStartMoved prunes the aborted index and recomputes the last stable
// offset, which may not stay below the log start offset.
func (p *Partition) onLogStartMoved() {
	p.pruneAborted(p.logStart.Load())
	p.refreshStable()
}

// Aborted-index snapshot in the partition checkpoint, big-endian (the
// checkpoint file carries its own checksum):
//
//	version   uint16  = 1
//	count × entry, by increasing marker offset:
//	  producerId        int64
//	  firstOffset       int64
//	  lastOffset        int64   the ABORT marker
//	  lastStableOffset  int64
const (
	abortedSnapshotVersion   = 1
	abortedSnapshotEntrySize = 32
)

// errCorruptAborted is returned by loadAbortedSnapshot.
var errCorruptAborted = errors.New("partition: corrupt aborted-transaction snapshot")

// appendAbortedSnapshot encodes the aborted index to dst; with no entries
// it appends nothing, so a checkpoint without transactions is unchanged.
func (p *Partition) appendAbortedSnapshot(dst []byte) []byte {
	p.aborted.RLock()
	defer p.aborted.RUnlock()
	return appendAbortedEntries(dst, p.aborted.entries)
}

// appendAbortedEntries encodes es (format above); nothing when es is empty.
func appendAbortedEntries(dst []byte, es []abortedEntry) []byte {
	if len(es) == 0 {
		return dst
	}
	dst = binary.BigEndian.AppendUint16(dst, abortedSnapshotVersion)
	for _, e := range es {
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.producerID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.first))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.last))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.lso))
	}
	return dst
}

// loadAbortedSnapshot decodes appendAbortedSnapshot's bytes (empty: no
// entries). Entries must be sorted by marker offset and self-consistent.
func loadAbortedSnapshot(b []byte) ([]abortedEntry, error) {
	if len(b) == 0 {
		return nil, nil
	}
	// The encoding of no entries is no bytes, never a bare version.
	if len(b) < 2+abortedSnapshotEntrySize || binary.BigEndian.Uint16(b) != abortedSnapshotVersion || (len(b)-2)%abortedSnapshotEntrySize != 0 {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptAborted, len(b))
	}
	b = b[2:]
	es := make([]abortedEntry, 0, len(b)/abortedSnapshotEntrySize)
	for ; len(b) > 0; b = b[abortedSnapshotEntrySize:] {
		e := abortedEntry{
			producerID: int64(binary.BigEndian.Uint64(b)),
			first:      int64(binary.BigEndian.Uint64(b[8:])),
			last:       int64(binary.BigEndian.Uint64(b[16:])),
			lso:        int64(binary.BigEndian.Uint64(b[24:])),
		}
		if e.producerID < 0 || e.first < 0 || e.last <= e.first || e.lso > e.last+1 ||
			(len(es) > 0 && e.last <= es[len(es)-1].last) {
			return nil, fmt.Errorf("%w: entry %d: %+v", errCorruptAborted, len(es), e)
		}
		es = append(es, e)
	}
	return es, nil
}

// Producers returns the state of every producer of the partition, in
// increasing producer id order (DescribeProducers).
func (p *Partition) Producers() []ProducerView {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ProducerView
	for v := range p.mu.producers.All() {
		out = append(out, v)
	}
	return out
}
