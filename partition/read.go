package partition

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/consumequeue"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition/batch"
)

// Range is a run of record-batch bytes in one commit-log file, ready for
// sendfile(2): File is held, and the reader must call Release once the
// bytes are sent.
type Range struct {
	File   *klog.MappedFile
	Offset int64 // byte offset inside File
	Len    int64
}

// Release lets the file go (retention may delete it afterwards).
func (r Range) Release() { r.File.Release() }

// ReleaseRanges releases every range.
func ReleaseRanges(rs []Range) {
	for _, r := range rs {
		r.Release()
	}
}

// ReadResult is what a fetch learns about a partition besides its data.
type ReadResult struct {
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// Bytes is the total length of the returned ranges.
	Bytes int64
	// NextOffset is the offset after the last returned batch, or the
	// requested offset when nothing was returned: a read_committed fetch
	// reports the aborted transactions of [offset, NextOffset).
	NextOffset int64
}

// Read returns the record batches from offset on, as held file ranges
// appended to dst, up to maxBytes. With firstBatchAlways the first batch is
// returned even when it is larger than maxBytes (KIP-74: the first batch of
// the first non-empty partition of a fetch, so that a consumer can always
// make progress). Only visible data (below the high watermark) is returned:
// this is a read_uncommitted fetch.
//
// An offset below the log start or above the log end offset is
// OFFSET_OUT_OF_RANGE; an offset between the high watermark and the log end
// is an empty read. Read allocates nothing when dst has room.
func (p *Partition) Read(offset int64, maxBytes int64, firstBatchAlways bool, dst []Range) (ReadResult, []Range, error) {
	return p.read(offset, maxBytes, firstBatchAlways, false, dst)
}

// ReadCommitted is Read for a read_committed fetch: it returns only
// batches below the last stable offset (Kafka's FetchIsolation.TXN_COMMITTED),
// so a consumer never sees a transaction that may still abort. An offset
// between the last stable offset and the log end is an empty read. The
// consumer also needs the aborted transactions of the returned range
// (AbortedTransactions) to drop aborted records and markers.
func (p *Partition) ReadCommitted(offset int64, maxBytes int64, firstBatchAlways bool, dst []Range) (ReadResult, []Range, error) {
	return p.read(offset, maxBytes, firstBatchAlways, true, dst)
}

func (p *Partition) read(offset int64, maxBytes int64, firstBatchAlways, committed bool, dst []Range) (ReadResult, []Range, error) {
	// The last stable offset first: it never exceeds the high watermark
	// of its time, and the high watermark only grows.
	lso := p.lastStable.Load()
	res := ReadResult{
		HighWatermark:    p.highWatermark.Load(),
		LastStableOffset: lso,
		LogStartOffset:   p.logStart.Load(),
		NextOffset:       offset,
	}
	end := res.HighWatermark
	if committed {
		end = lso
	}
	if p.deleted.Load() {
		return res, dst, fmt.Errorf("partition: read %s-%d: %w", p.topic, p.index, kerr.UnknownTopicOrPartition)
	}
	if offset < res.LogStartOffset || offset > p.logEnd.Load() {
		return res, dst, fmt.Errorf("partition: read %s-%d at %d (log %d..%d): %w",
			p.topic, p.index, offset, res.LogStartOffset, p.logEnd.Load(), kerr.OffsetOutOfRange)
	}
	var buf [16]consumequeue.Entry
	var cq *consumequeue.Queue
	for offset < end {
		// Below the clean end the clean store serves (clean_store.go).
		if v := p.clean.Load(); v != nil && offset < v.end {
			var stop, again bool
			dst, offset, stop, again = v.read(offset, end, maxBytes, firstBatchAlways, &res, dst)
			if stop {
				return res, dst, nil
			}
			if !again {
				offset = max(offset, v.end) // past the view, into the gap up to its end
			}
			continue
		}
		if cq == nil {
			var err error
			if cq, err = p.queue(); err != nil {
				ReleaseRanges(dst)
				return res, dst[:0], err
			}
		}
		entries := cq.Read(offset, end, len(buf), buf[:0])
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			n := int64(e.Size)
			if res.Bytes+n > maxBytes && !(firstBatchAlways && res.Bytes == 0) {
				return res, dst, nil
			}
			m, err := p.store.clog.Hold(e.Pos)
			if err != nil {
				if v := p.clean.Load(); v != nil && offset < v.end {
					// The cleaner published past this offset and retention
					// deleted the file: read on from the clean store.
					break
				}
				ReleaseRanges(dst)
				return res, dst[:0], storageError(fmt.Sprintf("read %s-%d at position %d", p.topic, p.index, e.Pos), err)
			}
			dst = append(dst, Range{File: m, Offset: e.Pos - m.From(), Len: n})
			res.Bytes += n
			offset = e.NextOffset()
			res.NextOffset = offset
		}
	}
	return res, dst, nil
}

// read appends the view's batches from offset on (below end and maxBytes)
// as held ranges. stop reports that maxBytes was reached; again that the
// view's file was replaced meanwhile, so the caller must read from the
// newer view from offset on.
func (v *cleanView) read(offset, end, maxBytes int64, firstBatchAlways bool, res *ReadResult, dst []Range) ([]Range, int64, bool, bool) {
	for i := v.find(offset); i < len(v.entries); i++ {
		e := &v.entries[i]
		if e.BaseOffset >= end {
			return dst, offset, true, false
		}
		n := int64(e.Size)
		if res.Bytes+n > maxBytes && !(firstBatchAlways && res.Bytes == 0) {
			return dst, offset, true, false
		}
		if !v.file.Hold() {
			return dst, offset, false, true
		}
		dst = append(dst, Range{File: v.file, Offset: e.Pos, Len: n})
		res.Bytes += n
		offset = e.NextOffset()
		res.NextOffset = offset
	}
	return dst, offset, false, false
}

// firstOffset is the lowest log start offset the data allows: for a
// compacted partition the log start its clean store was written at (the
// batches cleaned away below its first one still count: compaction never
// moves the log start), else the consume queue's first offset.
func (p *Partition) firstOffset() (int64, bool) {
	if v := p.clean.Load(); v != nil {
		return v.start, true
	}
	if cq := p.cq.Load(); cq != nil && cq.Len() > 0 {
		return cq.FirstOffset(), true
	}
	return 0, false
}

// Special timestamps of ListOffsets (Kafka's ListOffsetsRequest).
const (
	LatestTimestamp        = -1 // the high watermark (or LSO for read_committed)
	EarliestTimestamp      = -2 // the log start offset
	MaxTimestamp           = -3 // the record with the largest timestamp (KIP-734)
	EarliestLocalTimestamp = -4 // without tiered storage, the log start offset
	LatestTieredTimestamp  = -5 // without tiered storage, -1 (KIP-1005)
)

// OffsetForTime answers ListOffsets for one partition: the offset and
// timestamp of the first record with timestamp ≥ ts, or the special
// timestamps above. It returns -1, -1 when no such record is visible
// (below the high watermark: read_uncommitted).
func (p *Partition) OffsetForTime(ts int64) (offset, timestamp int64, err error) {
	return p.offsetForTime(ts, p.highWatermark.Load())
}

// OffsetForTimeCommitted is OffsetForTime for a read_committed ListOffsets:
// only records below the last stable offset count, and LatestTimestamp is
// the last stable offset (Kafka's Partition.fetchOffsetForTimestamp with
// IsolationLevel.READ_COMMITTED).
func (p *Partition) OffsetForTimeCommitted(ts int64) (offset, timestamp int64, err error) {
	return p.offsetForTime(ts, p.lastStable.Load())
}

// offsetForTime answers ListOffsets among the records below hw, the end of
// what the request's isolation level may read.
func (p *Partition) offsetForTime(ts, hw int64) (offset, timestamp int64, err error) {
	offset, timestamp = -1, -1
	switch ts {
	case LatestTimestamp:
		return hw, -1, nil
	case EarliestTimestamp, EarliestLocalTimestamp:
		return p.logStart.Load(), -1, nil
	case LatestTieredTimestamp:
		return -1, -1, nil
	case MaxTimestamp:
		return p.maxTimestampOffset(hw)
	}
	if ts < 0 {
		return -1, -1, fmt.Errorf("partition: list offsets for timestamp %d: %w", ts, kerr.InvalidRequest)
	}
	// The running maximum finds the first batch that can hold such a
	// record; batches after it may hold one too when the found batch lies
	// below the log start offset.
	e, ok := p.findTimestamp(ts)
	if !ok {
		return -1, -1, nil
	}
	from := max(e.BaseOffset, p.logStart.Load())
	found := false
	err = p.eachBatch(from, hw, func(b []byte) bool {
		offset, timestamp, found = firstRecordAtOrAfter(b, p.logStart.Load(), ts)
		return !found
	})
	if err != nil || !found {
		return -1, -1, err
	}
	return offset, timestamp, nil
}

// maxTimestampOffset finds the first record carrying the largest timestamp
// among the visible records at or after the log start offset (KIP-734).
func (p *Partition) maxTimestampOffset(hw int64) (int64, int64, error) {
	start := p.logStart.Load()
	best, bestBase := int64(-1), int64(-1)
	var hdr [batch.HeaderSize]byte
	var err error
	p.eachEntry(start, hw, func(e batchRef) bool {
		var batchMax int64
		if batchMax, err = p.batchMaxTimestamp(e, start, hdr[:]); err != nil {
			return false
		}
		if batchMax > best {
			best, bestBase = batchMax, e.BaseOffset
		}
		return true
	})
	if err != nil {
		return -1, -1, err
	}
	if bestBase < 0 {
		return -1, -1, nil
	}
	var offset, timestamp int64 = -1, -1
	err = p.eachBatch(max(bestBase, start), hw, func(b []byte) bool {
		var found bool
		offset, timestamp, found = firstRecordAtOrAfter(b, start, best)
		return !found
	})
	return offset, timestamp, err
}

// batchMaxTimestamp is the largest timestamp of e's records at or after
// offset start: the header's MaxTimestamp, unless DeleteRecords cut the
// batch, whose records must then be read.
func (p *Partition) batchMaxTimestamp(e batchRef, start int64, hdr []byte) (int64, error) {
	if e.BaseOffset >= start {
		if err := p.copyBatch(hdr, e); err != nil {
			return -1, storageError(fmt.Sprintf("list offsets %s-%d", p.topic, p.index), err)
		}
		h, err := batch.ParseHeader(hdr)
		if err != nil {
			return -1, storageError(fmt.Sprintf("list offsets %s-%d", p.topic, p.index), err)
		}
		return h.MaxTimestamp, nil
	}
	best := int64(-1)
	err := p.eachBatch(e.BaseOffset, e.NextOffset(), func(b []byte) bool {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return false
		}
		_ = batch.Records(b, func(r batch.Record) bool {
			if h.BaseOffset+int64(r.OffsetDelta) >= start {
				best = max(best, r.Timestamp)
			}
			return true
		})
		return false
	})
	return best, err
}

// batchRef is a batch of the partition and where its bytes are: the
// clean store of view (Pos is then an offset in its file), or the commit
// log when view is nil.
type batchRef struct {
	consumequeue.Entry
	view *cleanView
}

// copyBatch copies the first len(dst) bytes of the batch out of the store.
func (p *Partition) copyBatch(dst []byte, e batchRef) error {
	if e.view == nil {
		return p.store.clog.CopyAt(dst, e.Pos)
	}
	held, err := e.view.file.View(func(b []byte) { copy(dst, b[e.Pos:e.Pos+int64(len(dst))]) })
	if err == nil && !held {
		err = fmt.Errorf("partition: %s-%d: the clean store was replaced during the read: %w", p.topic, p.index, kerr.NotLeaderForPartition)
	}
	return err
}

// findTimestamp is FindTimestamp over the clean store and the consume
// queue: the first batch whose running maximum timestamp reaches ts.
func (p *Partition) findTimestamp(ts int64) (batchRef, bool) {
	v := p.clean.Load()
	if v != nil {
		if i := v.findTimestamp(ts); i < len(v.entries) {
			return batchRef{v.entries[i], v}, true
		}
	}
	cq, err := p.queue()
	if err != nil {
		return batchRef{}, false // Read reports the failure
	}
	e, ok := cq.FindTimestamp(ts)
	if ok && v != nil && e.BaseOffset < v.end {
		// Found among consume-queue entries the clean store replaced;
		// what remains of them is the view, all older than ts, so the
		// first batch that counts is the first one the queue serves.
		e, ok = cq.Find(v.end)
	}
	return batchRef{Entry: e}, ok
}

// eachEntry calls fn for each batch from the one holding offset up to end
// (exclusive), clean store first, then consume queue, until fn returns
// false. It serves the rare paths (ListOffsets, retention); Read has its
// own allocation-free loop.
func (p *Partition) eachEntry(offset, end int64, fn func(batchRef) bool) {
	if v := p.clean.Load(); v != nil && offset < v.end {
		for i := v.find(offset); i < len(v.entries) && v.entries[i].BaseOffset < end; i++ {
			if !fn(batchRef{v.entries[i], v}) {
				return
			}
		}
		offset = v.end
	}
	if offset >= end {
		return
	}
	cq, err := p.queue()
	if err != nil {
		return // Read reports the failure
	}
	var buf [64]consumequeue.Entry
	for offset < end {
		es := cq.Read(offset, end, len(buf), buf[:0])
		if len(es) == 0 {
			return
		}
		for _, e := range es {
			if !fn(batchRef{Entry: e}) {
				return
			}
		}
		offset = es[len(es)-1].NextOffset()
	}
}

// eachBatch copies each visible batch from offset on out of the store and
// calls fn until it returns false. It serves ListOffsets, which is rare
// and may allocate.
func (p *Partition) eachBatch(offset, hw int64, fn func(b []byte) bool) error {
	var err error
	p.eachEntry(offset, hw, func(e batchRef) bool {
		b := make([]byte, e.Size)
		if err = p.copyBatch(b, e); err != nil {
			err = storageError(fmt.Sprintf("list offsets %s-%d", p.topic, p.index), err)
			return false
		}
		return fn(b)
	})
	return err
}

// firstRecordAtOrAfter returns the batch's first record at or after
// offset start with timestamp ≥ ts. A batch that cannot be decoded counts
// as holding none (it passed validation on append, so this means damage,
// which the consumer will also see).
func firstRecordAtOrAfter(b []byte, start, ts int64) (int64, int64, bool) {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return -1, -1, false
	}
	off, stamp, found := int64(-1), int64(-1), false
	_ = batch.Records(b, func(r batch.Record) bool {
		o := h.BaseOffset + int64(r.OffsetDelta)
		if o >= start && r.Timestamp >= ts {
			off, stamp, found = o, r.Timestamp, true
			return false
		}
		return true
	})
	return off, stamp, found
}

// EachBatch calls fn with each visible batch (below the high watermark)
// from the one holding offset from on, in offset order, until fn returns
// false. It serves the broker's own state topics (committed offsets), which
// replay their records at start-up: b is copied out of the commit log into
// a buffer that the next call reuses, so fn must not keep it.
func (p *Partition) EachBatch(from int64, fn func(b []byte) bool) error {
	var buf []byte
	var err error
	p.eachEntry(max(from, p.logStart.Load()), p.highWatermark.Load(), func(e batchRef) bool {
		if cap(buf) < int(e.Size) {
			buf = make([]byte, e.Size)
		}
		b := buf[:e.Size]
		if err = p.copyBatch(b, e); err != nil {
			err = storageError(fmt.Sprintf("read %s-%d at position %d", p.topic, p.index, e.Pos), err)
			return false
		}
		return fn(b)
	})
	return err
}
