package partition

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DeleteRecords moves the log start offset to offset (Kafka's DeleteRecords;
// -1 means the high watermark) and returns the new log start offset (the
// "low watermark"). An offset past the high watermark is
// OFFSET_OUT_OF_RANGE. The change is checkpointed before it returns; the
// data goes when retention next deletes files.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	hw := p.highWatermark.Load()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return p.logStart.Load(), fmt.Errorf("partition: delete records of %s-%d below %d (high watermark %d): %w",
			p.topic, p.index, offset, hw, kerr.OffsetOutOfRange)
	}
	p.advanceLogStart(offset)
	if err := p.store.Checkpoint(); err != nil {
		return p.logStart.Load(), storageError(fmt.Sprintf("delete records of %s-%d", p.topic, p.index), err)
	}
	return p.logStart.Load(), nil
}

// advanceLogStart moves the log start offset forward, never back, then
// drops aborted transactions below it and keeps the last stable offset at
// or above it.
func (p *Partition) advanceLogStart(offset int64) {
	for {
		old := p.logStart.Load()
		if offset <= old {
			return
		}
		if p.logStart.CompareAndSwap(old, offset) {
			break
		}
	}
	p.changes.Add(1)
	p.onLogStartMoved()
	p.signalWatchers()
}

// retentionStart computes where retention.ms and retention.bytes move the
// log start offset, at batch granularity: a batch goes when its (and every
// earlier batch's) max timestamp is older than retention.ms, and batches go
// from the start while what remains is still at least retention.bytes
// (Kafka's rules, applied per batch instead of per segment). Never past the
// high watermark.
func (p *Partition) retentionStart(nowMs int64) int64 {
	cfg := p.cfg.Load()
	start, hw := p.logStart.Load(), p.highWatermark.Load()
	if start >= hw {
		return start
	}
	if s := p.closedSummary(); s != nil && s.keeps(cfg, nowMs) {
		return start // without opening the queue (summary.go)
	}
	cand := start
	if cfg.RetentionMs >= 0 {
		if e, ok := p.findTimestamp(nowMs - cfg.RetentionMs); ok {
			cand = max(cand, min(e.BaseOffset, hw))
		} else {
			cand = hw // every batch is older
		}
	}
	if cfg.RetentionBytes >= 0 {
		cand = max(cand, p.bytesStart(start, hw, cfg.RetentionBytes))
	}
	return min(cand, hw)
}

// bytesStart returns the first offset to keep under retention.bytes:
// batches are dropped from the start while the bytes that remain after the
// drop are still at least limit (Kafka's rule, per batch).
func (p *Partition) bytesStart(start, hw, limit int64) int64 {
	var total int64
	p.eachEntry(start, hw, func(e batchRef) bool {
		total += int64(e.Size)
		return true
	})
	keep := start
	p.eachEntry(start, hw, func(e batchRef) bool {
		if total-int64(e.Size) < limit {
			return false
		}
		total -= int64(e.Size)
		keep = e.NextOffset()
		return true
	})
	return keep
}

// EnforceRetention applies every topic's retention, checkpoints the new log
// start offsets, then deletes consume-queue files and the commit-log files
// that no partition needs any more (STORAGE-REFERENCE.md §3.8). A file that
// a reader holds is waited for until ctx ends. It returns the number of
// commit-log files deleted.
func (s *Store) EnforceRetention(ctx context.Context) (int, error) {
	now := s.cfg.Now().UnixMilli()
	// Every entry appended from here on lies past this position.
	wrote := s.clog.WrotePosition()
	ps := s.allPartitions()
	for _, p := range ps {
		if !p.deleted.Load() {
			p.advanceLogStart(p.retentionStart(now))
		}
	}
	// Persist the new log start offsets before any data goes.
	if err := s.Checkpoint(); err != nil {
		return 0, err
	}
	minLive := wrote
	var blocker *Partition
	for _, p := range ps {
		if p.deleted.Load() {
			continue
		}
		if sum := p.closedSummary(); sum != nil {
			// Its queue stays closed (summary.go): nothing moved its log
			// start since the summary, so its first batch is still there.
			if sum.Pos >= 0 {
				if pos := sum.Pos - int64(s.clog.HeaderSize()); pos < minLive {
					minLive, blocker = pos, p
				}
			}
			continue
		}
		// A compacted partition needs the commit log only from its clean
		// end on: the clean store holds what the cleaner kept below it.
		start := p.logStart.Load()
		if v := p.clean.Load(); v != nil {
			start = max(start, v.end)
		}
		cq, err := p.queue()
		if err != nil {
			return 0, fmt.Errorf("partition: retention of %s-%d: %w", p.topic, p.index, err)
		}
		if _, err := cq.DeleteBefore(start); err != nil {
			return 0, fmt.Errorf("partition: retention of %s-%d: %w", p.topic, p.index, err)
		}
		if e, ok := cq.Find(start); ok {
			if pos := e.Pos - int64(s.clog.HeaderSize()); pos < minLive {
				minLive, blocker = pos, p
			}
		}
	}
	// A compacted partition that keeps an older commit-log file than the
	// current one alive has its uncleanable tail (the last batch, the
	// active segment, an open transaction) copied into its clean store by
	// the next pass: otherwise an idle compacted partition would pin the
	// shared log forever (COMPACTION-REFERENCE.md §4.4, evacuation).
	if fs := s.clog.FileSize(); blocker != nil && blocker.cfg.Load().Compact && fs > 0 && minLive/fs < wrote/fs {
		blocker.evacuate.Store(true)
	}
	n, err := s.clog.DeleteBefore(ctx, minLive)
	s.deletedFiles.Add(int64(n))
	return n, err
}
