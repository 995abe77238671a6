package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition/batch"
)

// Produce is one partition's batch in a Batch: the caller sets P and
// Records; AppendMany sets Result or Err, as Partition.Append would.
type Produce struct {
	P       *Partition
	Records []byte
	Result  AppendResult
	Err     error

	prep prepared
	w    written
	// entry is the batch's index in the batch's commit-log run, -1 if
	// it has none (refused, or a duplicate).
	entry int
}

// Batch appends the batches of one produce request to their partitions
// together. A request to many partitions otherwise costs a commit-log
// append (a pwritev(2) under the log's put lock) per partition; here the
// partitions are locked together, in one order, and their batches go
// into the commit log with one AppendMany, then each gets its
// consume-queue entry and is published, before any lock is let go. A
// connection keeps one Batch and reuses its buffers, so that appending
// allocates nothing per request.
//
// The result of each batch is what Partition.Append would give it,
// except that a failed commit-log write fails every batch of the request
// that it did not store.
type Batch struct {
	// Items are the request's batches, in request order.
	Items []Produce

	order   []int
	pending []klog.Pending
}

// decompressBudgetRatio is how many times its own size the batches of one
// Produce request may expand to, together, when they are decompressed.
// Real data rarely compresses past 10:1 (kgo, librdkafka and the Java
// client compress batches of at most a few MiB); a decompression bomb
// reaches 1000:1 with gzip and far more with zstd.
const decompressBudgetRatio = 64

// requestDecompressBudget is what the batches of one Produce request may
// decompress together: decompressBudgetRatio times their compressed size,
// and at least batch.DefaultMaxDecompressedBytes, the bound of one batch
// (which a topic's larger max.message.bytes may raise; the budget then
// bounds that batch when it comes with little else). It bounds the work
// one request can cost: many bombs in one request, each within the
// per-batch bound, would otherwise cost one bound each.
func requestDecompressBudget(items []Produce) int64 {
	n := int64(0)
	for i := range items {
		n += int64(len(items[i].Records))
	}
	return max(n*decompressBudgetRatio, batch.DefaultMaxDecompressedBytes)
}

// Reset empties the batch for the next request, keeping its buffers.
func (bt *Batch) Reset() {
	clear(bt.Items) // no records or partitions kept alive
	bt.Items = bt.Items[:0]
}

// Add queues records for p.
func (bt *Batch) Add(p *Partition, records []byte) {
	bt.Items = append(bt.Items, Produce{P: p, Records: records, entry: -1})
}

// AppendMany validates and appends every item of bt (produceVersion is the
// Produce request version, nowMs the broker's time). A batch for a
// partition named twice in the request makes it append the items one by
// one with Partition.Append instead, as the locks could not be taken
// together.
func (bt *Batch) AppendMany(s *Store, produceVersion int16, nowMs int64) {
	bt.order = bt.order[:0]
	budget := requestDecompressBudget(bt.Items)
	for i := range bt.Items {
		it := &bt.Items[i]
		it.entry = -1
		if it.prep, it.Err = it.P.prepare(it.Records, produceVersion, nowMs, &budget); it.Err == nil {
			bt.order = append(bt.order, i)
		}
	}
	if len(bt.order) == 0 {
		return
	}
	// One lock order for every request (the partitions' commit-log keys),
	// so that two requests never wait for each other's locks.
	slices.SortFunc(bt.order, func(a, b int) int {
		return bytes.Compare(bt.Items[a].P.key[:], bt.Items[b].P.key[:])
	})
	for k := 1; k < len(bt.order); k++ {
		if bt.Items[bt.order[k]].P == bt.Items[bt.order[k-1]].P {
			bt.oneByOne(nowMs)
			return
		}
	}
	for _, i := range bt.order {
		bt.Items[i].P.mu.Lock()
	}
	defer func() {
		for _, i := range bt.order {
			bt.Items[i].P.mu.Unlock()
		}
	}()
	bt.pending = bt.pending[:0]
	for _, i := range bt.order {
		it := &bt.Items[i]
		p := it.P
		dup, r, err := p.checkLocked(&it.prep)
		switch {
		case err != nil:
			it.Err = err
			continue
		case dup:
			it.Result = r
			continue
		}
		if it.w, it.Err = p.stageLocked(it.prep.b, it.prep.logAppendTime, nowMs); it.Err != nil {
			continue
		}
		it.entry = len(bt.pending)
		// The batch's CRC (stageLocked's stamp keeps it true) covers it
		// from the attributes on: the commit log derives its entry
		// checksum from it rather than reading the batch again.
		bt.pending = append(bt.pending, klog.Pending{Key: p.key[:], Payload: it.prep.b,
			TailCRC: binary.BigEndian.Uint32(it.prep.b[batch.CRCOffset:]), TailFrom: batch.AttributesOffset})
	}
	if len(bt.pending) == 0 {
		return
	}
	stored, err := s.clog.AppendMany(bt.pending)
	for _, i := range bt.order {
		it := &bt.Items[i]
		if it.entry < 0 {
			continue
		}
		p := it.P
		if it.entry >= stored {
			it.Err = storageError(fmt.Sprintf("append %s-%d", p.topic, p.index), err)
			continue
		}
		pb := it.prep.pb
		w, err := p.indexLocked(it.w, bt.pending[it.entry].Result, len(it.prep.b), pb.LastOffsetDelta, it.prep.attributes, pb.MaxTimestamp)
		if err != nil {
			it.Err = err
			continue
		}
		it.Result = p.finishLocked(w, pb, len(it.prep.b), it.prep.logAppendTime, nowMs)
	}
	clear(bt.pending) // no records kept alive
}

// oneByOne appends the validated items one at a time, in request order
// (two batches of one producer to one partition must go in the order
// sent).
func (bt *Batch) oneByOne(nowMs int64) {
	for i := range bt.Items {
		it := &bt.Items[i]
		if it.Err != nil {
			continue
		}
		p := it.P
		p.mu.Lock()
		if dup, r, err := p.checkLocked(&it.prep); err != nil || dup {
			it.Result, it.Err = r, err
		} else {
			it.Result, it.Err = p.appendCheckedLocked(it.prep.b, it.prep.pb, it.prep.attributes, it.prep.logAppendTime, nowMs)
		}
		p.mu.Unlock()
	}
}
