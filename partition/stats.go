package partition

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/internal/metric"
)

// Traffic counts a partition's data in and out since the store opened,
// for the broker's metrics (Kafka's BrokerTopicMetrics BytesInPerSec,
// MessagesInPerSec, BytesOutPerSec). The counters are plain atomics on the
// partition, so the produce and fetch paths pay one add each and no
// lookup; the admin listener sums them per topic at scrape time.
type Traffic struct {
	// BytesIn and RecordsIn count appended batches, the coordinators'
	// (committed offsets, transaction state) included; duplicates of an
	// idempotent producer and transaction markers are not counted.
	BytesIn, RecordsIn atomic.Int64
	// BytesOut counts record-batch bytes sent to consumers, counted by
	// the broker's fetch handler.
	BytesOut atomic.Int64
}

// Traffic is the partition's traffic counters.
func (p *Partition) Traffic() *Traffic { return &p.traffic }

// partitionSize caches a partition's size so that a metrics scrape or a
// status page costs O(batches appended since the last call) rather than
// O(batches stored).
type partitionSize struct {
	sync.Mutex
	// from and to are the offsets whose batches bytes sums, [from, to).
	from, to int64
	bytes    int64
	// view is the clean store generation the sum was taken with: a
	// cleaning pass shrinks the partition without moving its log start.
	view *cleanView
}

// Size is the bytes of the partition's record batches from the log start
// offset to the log end (Kafka's kafka.log:type=Log,name=Size counts
// segment files; here batches in the shared commit log). It adds what was
// appended since the last call and sums the queue again only when the log
// start offset moved (retention, DeleteRecords) or the cleaner published a
// new generation of a compacted partition, which is rare. A compacted
// partition counts its clean store below the clean end.
func (p *Partition) Size() int64 {
	if s := p.closedSummary(); s != nil {
		return s.Bytes // the queue stays closed (summary.go)
	}
	p.size.Lock()
	defer p.size.Unlock()
	start, end, v := p.logStart.Load(), p.logEnd.Load(), p.clean.Load()
	if start != p.size.from || end < p.size.to || v != p.size.view {
		p.size.from, p.size.to, p.size.bytes, p.size.view = start, start, 0, v
	}
	p.advanceSizeLocked(end)
	return p.size.bytes
}

// advanceSizeLocked adds the batches from the cache's end up to end.
func (p *Partition) advanceSizeLocked(end int64) {
	p.eachEntry(p.size.to, end, func(e batchRef) bool {
		p.size.bytes += int64(e.Size)
		p.size.to = e.NextOffset()
		return true
	})
}

// sizeUpTo is the bytes of the batches from the one holding start up to
// end, through the cache: the checkpoint's summary (summary.go) of a
// partition that appends have moved past end meanwhile. ok is false when
// the log start offset is no longer start, or a clean store counts.
func (p *Partition) sizeUpTo(start, end int64) (int64, bool) {
	p.size.Lock()
	defer p.size.Unlock()
	v := p.clean.Load()
	if v != nil || start != p.logStart.Load() {
		return 0, false
	}
	if start != p.size.from || v != p.size.view {
		p.size.from, p.size.to, p.size.bytes, p.size.view = start, start, 0, v
	}
	if p.size.to < end {
		p.advanceSizeLocked(end)
		if p.size.to < end {
			return 0, false // the queue lacks batches below end
		}
	}
	bytes := p.size.bytes
	if p.size.to > end {
		p.eachEntry(end, p.size.to, func(e batchRef) bool {
			bytes -= int64(e.Size)
			return true
		})
	}
	return bytes, true
}

// FlushStats describes the store's flushes since it opened. In sync mode
// Batch shows how many produce requests each group commit served (the
// point of group commit); in the async modes every flush serves none.
type FlushStats struct {
	// Latency is the duration of each flush (msync/fdatasync) that made
	// bytes durable, in seconds.
	Latency *metric.Histogram
	// Batch is the number of waiting requests each flush completed.
	Batch *metric.Histogram
}

// FlushStats is the store's flush histograms.
func (s *Store) FlushStats() FlushStats { return s.flushStats }

// observeFlush is the flush services' round hook (flush.WithOnRound).
func (s *Store) observeFlush(served int, took time.Duration) {
	s.flushStats.Latency.ObserveDuration(took)
	s.flushStats.Batch.Observe(float64(served))
}

// DeletedFiles is the number of commit-log files retention deleted since
// the store opened.
func (s *Store) DeletedFiles() int64 { return s.deletedFiles.Load() }

// Each calls fn for every partition of every topic, in a stable order
// (topic id, then partition), for metrics and status pages.
func (s *Store) Each(fn func(*Partition)) {
	for _, p := range s.allPartitions() {
		fn(p)
	}
}
