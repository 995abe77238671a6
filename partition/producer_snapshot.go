package partition

// The producer snapshot: the encoding of ProducerStates that the partition
// checkpoint stores, so that a restart replays only the batches after it
// (Kafka's <offset>.snapshot files, ProducerStateManager.writeSnapshot and
// readSnapshot). Split from producer_state.go: the state machine there
// never looks at bytes, and this file never changes state.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// ErrCorruptProducerSnapshot is returned (wrapped with the reason) by
// LoadProducerSnapshot for bytes that are not a valid snapshot. Kafka's
// counterpart is CorruptSnapshotException; like Kafka, the caller should
// drop that snapshot and rebuild from an older one or from the log.
var ErrCorruptProducerSnapshot = errors.New("partition: corrupt producer snapshot")

// Snapshot format, version 2, big-endian like Kafka's (see
// ProducerStateManager.writeSnapshot, which stores only the newest batch of
// each producer; all remembered batches are kept here so that duplicates
// are still recognised after a restart). Version 1 lacks the two
// lastTxn fields and is still read (as no completed transaction):
//
//	header   version   int16   = 2
//	         length    uint32  number of bytes after the crc
//	         crc       uint32  CRC-32C (Castagnoli) of those bytes
//	body     count     uint32  number of producers
//	         count × producer, in increasing producer id order:
//	           producerId        int64
//	           epoch             int16
//	           coordinatorEpoch  int32
//	           txnFirstOffset    int64   -1: no open transaction
//	           lastTimestamp     int64
//	           lastAppendMs      int64
//	           lastTxnFirst      int64   last completed transaction, -1: none
//	           lastTxnLast       int64   its marker's offset, -1: none
//	           numBatches        uint8   0..5
//	           numBatches × batch, oldest first (Kafka's BatchMetadata):
//	             lastSeq         int32
//	             lastOffset      int64
//	             offsetDelta     int32   first offset = lastOffset - offsetDelta,
//	                                     first seq = lastSeq - offsetDelta (wrapping)
//	             maxTimestamp    int64
const (
	producerSnapshotVersion     = 2
	producerSnapshotHeaderSize  = 2 + 4 + 4
	producerSnapshotEntrySize   = 8 + 2 + 4 + 8 + 8 + 8 + 8 + 8 + 1
	producerSnapshotEntrySizeV1 = producerSnapshotEntrySize - 16
	producerSnapshotBatchSize   = 4 + 8 + 4 + 8
)

// AppendSnapshot appends an encoding of every producer's state to dst and
// returns the extended slice (format above). The same state always encodes
// to the same bytes. The caller writes it to a file named after the
// partition's next offset, as Kafka's <offset>.snapshot, so recovery replays
// only later batches.
func (s *ProducerStates) AppendSnapshot(dst []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, producerSnapshotVersion)
	dst = binary.BigEndian.AppendUint32(dst, 0) // length, filled below
	dst = binary.BigEndian.AppendUint32(dst, 0) // crc, filled below
	body := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s.producers)))
	for _, id := range s.sortedIDs() {
		e := s.producers[id]
		dst = binary.BigEndian.AppendUint64(dst, uint64(id))
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.epoch))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.coordinatorEpoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.txnFirstOffset))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.lastTimestamp))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.lastAppendMs))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.lastTxnFirst))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.lastTxnLast))
		dst = append(dst, e.n)
		for i := range int(e.n) {
			m := &e.batches[i]
			dst = binary.BigEndian.AppendUint32(dst, uint32(m.LastSeq))
			dst = binary.BigEndian.AppendUint64(dst, uint64(m.LastOffset))
			dst = binary.BigEndian.AppendUint32(dst, uint32(m.LastOffset-m.FirstOffset))
			dst = binary.BigEndian.AppendUint64(dst, uint64(m.MaxTimestamp))
		}
	}
	binary.BigEndian.PutUint32(dst[start+2:], uint32(len(dst)-body))
	binary.BigEndian.PutUint32(dst[start+6:], crc32.Checksum(dst[body:], castagnoli))
	return dst
}

// snapshotReader decodes big-endian fields; callers check remaining() first.
type snapshotReader struct {
	b   []byte
	off int
}

func (r *snapshotReader) remaining() int { return len(r.b) - r.off }

func (r *snapshotReader) u8() uint8 {
	v := r.b[r.off]
	r.off++
	return v
}

func (r *snapshotReader) u16() uint16 {
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *snapshotReader) u32() uint32 {
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *snapshotReader) u64() uint64 {
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func corruptSnapshot(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorruptProducerSnapshot}, args...)...)
}

// LoadProducerSnapshot decodes a snapshot written by AppendSnapshot. Any
// defect (short or trailing bytes, unknown version, CRC mismatch, counts the
// bytes cannot hold, impossible values) is an error wrapping
// ErrCorruptProducerSnapshot, never a panic; no count is trusted before the
// bytes to back it are known to be there. Expired producers are kept: call
// Expire after loading, as Kafka's loadFromSnapshot filters them.
func LoadProducerSnapshot(b []byte) (*ProducerStates, error) {
	if len(b) < producerSnapshotHeaderSize {
		return nil, corruptSnapshot("%d bytes, shorter than the %d-byte header", len(b), producerSnapshotHeaderSize)
	}
	r := snapshotReader{b: b}
	version := int16(r.u16())
	entrySize := producerSnapshotEntrySize
	switch version {
	case producerSnapshotVersion:
	case 1:
		entrySize = producerSnapshotEntrySizeV1
	default:
		return nil, corruptSnapshot("unknown version %d", version)
	}
	length, crc := r.u32(), r.u32()
	if uint64(length) != uint64(r.remaining()) {
		return nil, corruptSnapshot("length %d, but %d bytes follow the header", length, r.remaining())
	}
	if got := crc32.Checksum(b[r.off:], castagnoli); got != crc {
		return nil, corruptSnapshot("crc %#08x, computed %#08x", crc, got)
	}
	if r.remaining() < 4 {
		return nil, corruptSnapshot("no producer count")
	}
	count := r.u32()
	if uint64(count) > uint64(r.remaining()/entrySize) {
		return nil, corruptSnapshot("%d producers cannot fit in %d bytes", count, r.remaining())
	}
	s := &ProducerStates{producers: make(map[int64]*producerEntry, count)}
	for i := range count {
		if r.remaining() < entrySize {
			return nil, corruptSnapshot("producer %d truncated", i)
		}
		id := int64(r.u64())
		e := &producerEntry{
			epoch:            int16(r.u16()),
			coordinatorEpoch: int32(r.u32()),
			txnFirstOffset:   int64(r.u64()),
			lastTimestamp:    int64(r.u64()),
			lastAppendMs:     int64(r.u64()),
			lastTxnFirst:     -1,
			lastTxnLast:      -1,
		}
		if version >= 2 {
			e.lastTxnFirst, e.lastTxnLast = int64(r.u64()), int64(r.u64())
		}
		e.n = r.u8()
		if id < 0 {
			return nil, corruptSnapshot("negative producer id %d", id)
		}
		if _, ok := s.producers[id]; ok {
			return nil, corruptSnapshot("producer %d listed twice", id)
		}
		if e.txnFirstOffset < -1 {
			return nil, corruptSnapshot("producer %d: transaction first offset %d", id, e.txnFirstOffset)
		}
		if e.lastTxnFirst < -1 || (e.lastTxnFirst < 0) != (e.lastTxnLast < 0) || (e.lastTxnFirst >= 0 && e.lastTxnLast <= e.lastTxnFirst) ||
			(e.txnFirstOffset >= 0 && e.lastTxnLast >= e.txnFirstOffset) {
			return nil, corruptSnapshot("producer %d: last transaction %d..%d, open transaction from %d",
				id, e.lastTxnFirst, e.lastTxnLast, e.txnFirstOffset)
		}
		if e.n > NumBatchesToRetain {
			return nil, corruptSnapshot("producer %d: %d batches, at most %d", id, e.n, NumBatchesToRetain)
		}
		if r.remaining() < int(e.n)*producerSnapshotBatchSize {
			return nil, corruptSnapshot("producer %d: %d batches truncated", id, e.n)
		}
		for j := range int(e.n) {
			lastSeq := int32(r.u32())
			lastOffset := int64(r.u64())
			delta := int32(r.u32())
			ts := int64(r.u64())
			if lastSeq < 0 || delta < 0 || lastOffset < int64(delta) {
				return nil, corruptSnapshot("producer %d batch %d: last sequence %d, last offset %d, delta %d",
					id, j, lastSeq, lastOffset, delta)
			}
			m := BatchMetadata{
				FirstSeq:     decrementSequence(lastSeq, delta),
				LastSeq:      lastSeq,
				FirstOffset:  lastOffset - int64(delta),
				LastOffset:   lastOffset,
				MaxTimestamp: ts,
			}
			if j > 0 && m.FirstOffset <= e.batches[j-1].LastOffset {
				return nil, corruptSnapshot("producer %d batch %d: first offset %d not after %d",
					id, j, m.FirstOffset, e.batches[j-1].LastOffset)
			}
			e.batches[j] = m
		}
		s.producers[id] = e
		if e.txnFirstOffset >= 0 {
			s.ongoing = append(s.ongoing, ongoingTxn{producerID: id, firstOffset: e.txnFirstOffset})
		}
	}
	if r.remaining() != 0 {
		return nil, corruptSnapshot("%d bytes after the last producer", r.remaining())
	}
	slices.SortFunc(s.ongoing, compareOngoing)
	return s, nil
}
