package partition

// The log cleaner of compacted partitions (cleanup.policy with compact),
// after Kafka's LogCleaner (COMPACTION-REFERENCE.md §1.3–§1.6) on kbroker's
// storage (clean_store.go).
//
// A pass over one partition:
//
//  1. Plan. The dirty range runs from the clean end (the published view's,
//     or the log start) to the uncleanable boundary: the last stable
//     offset, the last batch below the high watermark (never cleaned, so
//     a reader always reaches the end), the first batch younger than
//     min.compaction.lag.ms, and the "active segment" (below). The pass is
//     due when dirty / (clean + dirty) > min.cleanable.dirty.ratio, when
//     the oldest dirty batch is older than max.compaction.lag.ms, or when a
//     delete horizon in the clean store has passed (so tombstones go
//     without new writes).
//  2. Map. The dirty range's keys go into the OffsetMap (latest offset per
//     key), skipping control batches and aborted transactions (an aborted
//     write must not shadow the committed value before it). When the next
//     batch may not fit, the pass ends before it; the next pass goes on
//     from there (several passes when keys exceed the dedupe buffer).
//  3. Rewrite. Every batch from the log start to the map's end (the clean
//     store, then the mapped part of the commit log) is filtered into a
//     new generation: superseded and keyless records go; tombstones stay
//     until their batch's delete horizon (stamped the first time a pass
//     keeps them: now + delete.retention.ms, KIP-534) has passed; aborted
//     batches go at once; a COMMIT or ABORT marker stays while its
//     transaction has data, then gets a horizon, then goes. Empty batches
//     are dropped: producer state lives in the partition checkpoint's
//     producer snapshot, not in the log, so no header-only batch is needed
//     to keep a producer's sequence (Kafka's KAFKA-5490 rule).
//  4. Publish. The data file is fsynced, the manifest renamed over the old
//     one (the commit point), the new view stored with one atomic pointer
//     store, the aborted-index entries of removed ABORT markers dropped,
//     and the old generation's file removed once no fetch holds it. The
//     commit-log files that held only cleaned batches are deleted by the
//     next retention run, which now counts a compacted partition from its
//     clean end.
//
// "Active segment": kbroker has no per-partition segments. The dirty range
// is cut into virtual segments of at most segment.bytes whose batches'
// (running maximum) timestamps span at most segment.ms (capped by
// max.compaction.lag.ms, as Kafka's LogConfig.maxSegmentMs); the last one
// is not cleaned while it is younger than segment.ms and smaller than
// segment.bytes, as Kafka's active segment rolls on those bounds.
//
// Nothing here takes Partition.mu: produce and fetch are never held by a
// pass. Readers switch generations between fetches (read.go).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kbroker/kbroker/consumequeue"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition/batch"
	"github.com/kbroker/kbroker/partition/compact"
)

// CleanerConfig configures the log cleaner (Kafka's log.cleaner.*).
type CleanerConfig struct {
	// Enable runs the cleaner threads (log.cleaner.enable). Store.Clean
	// works either way.
	Enable bool
	// Threads is log.cleaner.threads. Default 1.
	Threads int
	// Backoff is log.cleaner.backoff.ms: a thread's sleep when nothing is
	// due. Default 15 s.
	Backoff time.Duration
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size, shared by the
	// threads. Default 128 MiB.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second, read
	// plus write, shared by the threads; 0 or +Inf is unlimited.
	IOMaxBytesPerSecond float64
}

func (c *CleanerConfig) withDefaults() {
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.Backoff <= 0 {
		c.Backoff = 15 * time.Second
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = 128 << 20
	}
}

// CleanStats describes cleaning work.
type CleanStats struct {
	// Partitions is how many partitions were cleaned.
	Partitions int
	// BytesRead and BytesWritten count batch bytes read (clean store and
	// dirty range) and written (the new generations).
	BytesRead, BytesWritten int64
	// BatchesRead and BatchesWritten count batches.
	BatchesRead, BatchesWritten int
	// RecordsRemoved counts the records dropped.
	RecordsRemoved int
	// Partial is set when a pass ended before its dirty range's end
	// because the dedupe buffer was full.
	Partial bool
	// Took is the time spent.
	Took time.Duration
}

func (s *CleanStats) add(o CleanStats) {
	s.Partitions += o.Partitions
	s.BytesRead += o.BytesRead
	s.BytesWritten += o.BytesWritten
	s.BatchesRead += o.BatchesRead
	s.BatchesWritten += o.BatchesWritten
	s.RecordsRemoved += o.RecordsRemoved
	s.Partial = s.Partial || o.Partial
	s.Took += o.Took
}

// errCleanAborted ends a pass whose partition was deleted meanwhile.
var errCleanAborted = errors.New("partition: cleaning aborted")

// cleanerState is what one cleaning goroutine owns.
type cleanerState struct {
	m  *compact.OffsetMap
	rt batch.Retainer
	// buf holds one batch read from the store; out its rewrite.
	buf, out []byte
	keep     []bool
}

// throttler bounds the cleaners' I/O rate (Kafka's Throttler: checked
// every 300 ms, sleeping off any excess).
type throttler struct {
	rate float64
	mu   sync.Mutex
	from time.Time
	n    float64
}

const throttleWindow = 300 * time.Millisecond

// wait accounts n bytes and sleeps when the rate is exceeded.
func (t *throttler) wait(ctx context.Context, n int64) {
	if t == nil || t.rate <= 0 || math.IsInf(t.rate, 1) || t.rate >= math.MaxFloat64 {
		return
	}
	t.mu.Lock()
	now := time.Now()
	if t.from.IsZero() {
		t.from = now
	}
	t.n += float64(n)
	elapsed := now.Sub(t.from)
	var sleep time.Duration
	if elapsed >= throttleWindow {
		if want := time.Duration(t.n / t.rate * float64(time.Second)); want > elapsed {
			sleep = want - elapsed
		}
		t.from, t.n = now.Add(sleep), 0
	}
	t.mu.Unlock()
	if sleep > 0 {
		tm := time.NewTimer(sleep)
		defer tm.Stop()
		select {
		case <-ctx.Done():
		case <-tm.C:
		}
	}
}

// startCleaner starts the cleaner threads; Close stops them.
func (s *Store) startCleaner() {
	c := &s.cfg.Cleaner
	per := c.DedupeBufferSize / int64(c.Threads)
	ctx, cancel := context.WithCancel(context.Background())
	s.cleanerCancel = cancel
	// Stopping the store stops them too (also when a test abandons it
	// without Close).
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for i := range c.Threads {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			st := &cleanerState{m: compact.NewOffsetMap(per)}
			defer st.rt.Close()
			s.cleanerLoop(ctx, st, i)
		}()
	}
}

// cleanerLoop cleans the filthiest due partition, or sleeps Backoff when
// none is due.
func (s *Store) cleanerLoop(ctx context.Context, st *cleanerState, thread int) {
	lg := s.lg.With(zap.Int("cleaner", thread))
	for ctx.Err() == nil {
		p := s.filthiest(s.cfg.Now().UnixMilli())
		if p == nil {
			tm := time.NewTimer(s.cfg.Cleaner.Backoff)
			select {
			case <-ctx.Done():
				tm.Stop()
				return
			case <-tm.C:
			}
			continue
		}
		stats, err := p.cleanPass(ctx, st, s.throttle, s.cfg.Now().UnixMilli(), false)
		p.cleanMu.Unlock() // taken by filthiest
		st.m.Reset()       // the map's pages go back until the next pass
		switch {
		case errors.Is(err, errCleanAborted) || ctx.Err() != nil:
		case err != nil:
			// Kafka marks the partition uncleanable until a restart; here
			// it is retried after the backoff, and the error logged each
			// time, since a lasting failure needs an operator.
			lg.Error("cleaning failed", zap.String("topic", p.topic), zap.Int32("partition", p.index), zap.Error(err))
			s.noteCleanFailure(p)
		case stats.Partitions > 0:
			lg.Debug("partition cleaned", zap.String("topic", p.topic), zap.Int32("partition", p.index),
				zap.Int64("read", stats.BytesRead), zap.Int64("written", stats.BytesWritten),
				zap.Int("removed", stats.RecordsRemoved), zap.Bool("partial", stats.Partial), zap.Duration("took", stats.Took))
		}
	}
}

// noteCleanFailure keeps a failing partition out of the next picks until
// a backoff has passed.
func (s *Store) noteCleanFailure(p *Partition) {
	p.cleanFailedAt.Store(s.cfg.Now().UnixMilli())
}

// filthiest returns the due partition with the highest dirty ratio, with
// its cleanMu held, or nil (Kafka's grabFilthiestCompactedLog).
func (s *Store) filthiest(nowMs int64) *Partition {
	var best *Partition
	bestRatio := -1.0
	for _, p := range s.allPartitions() {
		if p.deleted.Load() || !p.cfg.Load().Compact {
			continue
		}
		if f := p.cleanFailedAt.Load(); f != 0 && nowMs-f < s.cfg.Cleaner.Backoff.Milliseconds() {
			continue
		}
		plan, ok := p.planClean(nowMs, false)
		if !ok || plan.ratio <= bestRatio {
			continue
		}
		if !p.cleanMu.TryLock() {
			continue // another thread has it
		}
		if best != nil {
			best.cleanMu.Unlock()
		}
		best, bestRatio = p, plan.ratio
	}
	return best
}

// Clean runs one pass over every compacted partition that is due, or over
// every compacted partition with anything to clean when force is set,
// waiting for passes in progress. Tests and tools use it; the cleaner
// threads do the same work in the background.
func (s *Store) Clean(ctx context.Context, force bool) (CleanStats, error) {
	st := &cleanerState{m: compact.NewOffsetMap(s.cfg.Cleaner.DedupeBufferSize / int64(s.cfg.Cleaner.Threads))}
	defer st.rt.Close()
	var total CleanStats
	for _, p := range s.allPartitions() {
		if p.deleted.Load() || !p.cfg.Load().Compact {
			continue
		}
		p.cleanMu.Lock()
		stats, err := p.cleanPass(ctx, st, s.throttle, s.cfg.Now().UnixMilli(), force)
		p.cleanMu.Unlock()
		if err != nil && !errors.Is(err, errCleanAborted) {
			return total, fmt.Errorf("partition: clean %s-%d: %w", p.topic, p.index, err)
		}
		total.add(stats)
	}
	return total, nil
}

// cleanPlan is a partition's dirty range and whether a pass is due.
type cleanPlan struct {
	view       *cleanView
	logStart   int64
	start      int64 // first dirty offset
	limit      int64 // uncleanable boundary
	dirtyBytes int64
	cleanBytes int64
	ratio      float64
	due        bool
	// evacuate asks the pass to copy everything up to evacuateEnd (the
	// high watermark) into the clean store unchanged, so that the
	// partition stops pinning the oldest commit-log file.
	evacuate    bool
	evacuateEnd int64
}

// planClean computes the dirty range of p. ok reports that a pass is due
// (or, with force, that it would change something).
func (p *Partition) planClean(nowMs int64, force bool) (cleanPlan, bool) {
	cfg := p.cfg.Load()
	v := p.clean.Load()
	pl := cleanPlan{view: v, logStart: p.logStart.Load()}
	pl.start = pl.logStart
	if v != nil {
		pl.start = max(v.deduped, pl.logStart)
		for _, e := range v.entries[v.find(pl.logStart):] {
			if e.BaseOffset >= v.deduped {
				break
			}
			pl.cleanBytes += int64(e.Size)
		}
	}
	hw := p.highWatermark.Load()
	limit := min(p.lastStable.Load(), hw)
	// The batch ending at the high watermark stays: a consumer must
	// always find a batch that takes it to the end.
	if cq, err := p.queue(); err != nil {
		return pl, false // the error is the partition's, logged at its open
	} else if last, ok := cq.Find(hw - 1); ok && last.BaseOffset < limit {
		limit = last.BaseOffset
	}
	segMs := min(cfg.SegmentMs, cfg.MaxCompactionLagMs)
	segBytes := cfg.SegmentBytes
	if segBytes <= 0 {
		segBytes = math.MaxInt64
	}
	var segStart, segFirstTs, segSize, total, beforeSeg int64
	firstTs := int64(-1)
	segStart = pl.start
	p.eachEntry(pl.start, limit, func(e batchRef) bool {
		ts := e.MaxTimestampSoFar
		if cfg.MinCompactionLagMs > 0 && ts > nowMs-cfg.MinCompactionLagMs {
			limit = e.BaseOffset // too young, and so is all that follows
			return false
		}
		if firstTs < 0 {
			firstTs, segFirstTs = ts, ts
		}
		if segSize > 0 && (segSize+int64(e.Size) > segBytes || ts-segFirstTs > segMs) {
			segStart, segFirstTs, segSize, beforeSeg = e.BaseOffset, ts, 0, total
		}
		segSize += int64(e.Size)
		total += int64(e.Size)
		return true
	})
	pl.dirtyBytes = total
	if segSize > 0 && segSize < segBytes && nowMs-segFirstTs < segMs && segStart < limit {
		limit = segStart // the active segment: not yet rolled by size or time
		pl.dirtyBytes = beforeSeg
	}
	pl.limit = max(limit, pl.start)
	if pl.dirtyBytes+pl.cleanBytes > 0 {
		pl.ratio = float64(pl.dirtyBytes) / float64(pl.dirtyBytes+pl.cleanBytes)
	}
	dirty := pl.limit > pl.start && pl.dirtyBytes > 0
	lagDue := dirty && firstTs >= 0 && cfg.MaxCompactionLagMs < math.MaxInt64 && nowMs-firstTs > cfg.MaxCompactionLagMs
	horizonDue := v != nil && v.minHorizon >= 0 && nowMs >= v.minHorizon
	end := int64(0)
	if v != nil {
		end = v.end
	}
	pl.evacuate = p.evacuate.Load() && hw > max(end, pl.logStart)
	pl.evacuateEnd = hw
	pl.due = (dirty && pl.ratio > cfg.MinCleanableRatio) || lagDue || horizonDue || pl.evacuate || (force && dirty)
	return pl, pl.due
}

// abortedSet answers whether a transactional batch belongs to an aborted
// transaction, from a copy of the aborted index.
type abortedSet map[int64][]abortedEntry // by producer, in marker order

func (p *Partition) abortedSnapshot() abortedSet {
	p.aborted.RLock()
	defer p.aborted.RUnlock()
	out := abortedSet{}
	for _, e := range p.aborted.entries {
		out[e.producerID] = append(out[e.producerID], e)
	}
	return out
}

func (a abortedSet) aborted(pid, offset int64) bool {
	es := a[pid]
	i := sort.Search(len(es), func(i int) bool { return es[i].last >= offset })
	return i < len(es) && es[i].first <= offset
}

// clean runs one pass over p if it is due (or forced). The caller holds
// p.cleanMu.
func (p *Partition) cleanPass(ctx context.Context, st *cleanerState, th *throttler, nowMs int64, force bool) (CleanStats, error) {
	var stats CleanStats
	began := time.Now()
	pl, ok := p.planClean(nowMs, force)
	if !ok || p.deleted.Load() {
		return stats, nil
	}
	cfg := p.cfg.Load()
	s := p.store
	aborted := p.abortedSnapshot()

	// Map the dirty range (evacuated batches in the store, then the
	// commit log).
	st.m.Reset()
	mapEnd := pl.start
	var rd batch.Reader
	var mapErr error
	p.eachEntry(pl.start, pl.limit, func(e batchRef) bool {
		b, err := p.readBatch(st, e)
		if err != nil {
			mapErr = err
			return false
		}
		stats.BytesRead += int64(e.Size)
		th.wait(ctx, int64(e.Size))
		h, err := batch.ParseHeader(b)
		if err != nil {
			mapErr = fmt.Errorf("map batch at offset %d: %w", e.BaseOffset, err)
			return false
		}
		if h.IsControl() || (h.IsTransactional() && aborted.aborted(h.ProducerID, h.BaseOffset)) {
			mapEnd = e.NextOffset()
			return true
		}
		if int(h.NumRecords) > st.m.Room() {
			if mapEnd == pl.start {
				mapErr = fmt.Errorf("a batch of %d records at offset %d does not fit the dedupe buffer of %d keys (log.cleaner.dedupe.buffer.size)",
					h.NumRecords, h.BaseOffset, st.m.Capacity())
			}
			stats.Partial = true
			return false
		}
		err = rd.Records(b, func(r batch.Record) bool {
			if r.Key != nil {
				st.m.Put(r.Key, h.BaseOffset+int64(r.OffsetDelta))
			}
			return true
		})
		if err != nil {
			mapErr = fmt.Errorf("map batch at offset %d: %w", e.BaseOffset, err)
			return false
		}
		mapEnd = e.NextOffset()
		return ctx.Err() == nil
	})
	if mapErr == nil {
		mapErr = ctx.Err()
	}
	if mapErr != nil {
		return stats, mapErr
	}

	// Rewrite the clean store and the mapped range into a new generation.
	gen := uint64(1)
	if pl.view != nil {
		gen = pl.view.gen + 1
	}
	cw, err := newCleanWriter(p.cleanDir, gen)
	if err != nil {
		return stats, err
	}
	f := filterState{p: p, st: st, cfg: cfg, nowMs: nowMs, mapEnd: mapEnd, aborted: aborted,
		txnData: map[int64]bool{}, cw: cw, minHorizon: -1}
	if v := pl.view; v != nil {
		for _, e := range v.entries[v.find(pl.logStart):] {
			var cerr error
			held, err := v.file.View(func(b []byte) {
				st.buf = append(st.buf[:0], b[e.Pos:e.Pos+int64(e.Size)]...)
			})
			if err == nil && !held {
				err = errors.New("the clean store file is gone")
			}
			if err == nil {
				cerr = f.filter(st.buf, &stats)
			}
			if err = errors.Join(err, cerr); err != nil {
				cw.abort()
				return stats, fmt.Errorf("rewrite clean batch at offset %d: %w", e.BaseOffset, err)
			}
			stats.BytesRead += int64(e.Size)
			th.wait(ctx, int64(e.Size))
			if ctx.Err() != nil || p.deleted.Load() {
				cw.abort()
				return stats, errors.Join(errCleanAborted, ctx.Err())
			}
		}
	}
	// Then the commit log: the mapped range, and with evacuation the rest
	// up to the high watermark, unchanged.
	from, to := pl.start, mapEnd
	if pl.view != nil {
		from = max(from, pl.view.end)
	}
	if pl.evacuate {
		to = max(to, pl.evacuateEnd)
	}
	cq, err := p.queue()
	if err != nil {
		cw.abort()
		return stats, err
	}
	var buf [64]consumequeue.Entry
	for off := from; off < to; {
		es := cq.Read(off, to, len(buf), buf[:0])
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			b, err := p.readCommitLog(st, e)
			if err == nil {
				err = f.filter(b, &stats)
			}
			if err != nil {
				cw.abort()
				return stats, fmt.Errorf("rewrite batch at offset %d: %w", e.BaseOffset, err)
			}
			stats.BytesRead += int64(e.Size)
			th.wait(ctx, int64(e.Size))
		}
		off = es[len(es)-1].NextOffset()
		if ctx.Err() != nil || p.deleted.Load() {
			cw.abort()
			return stats, errors.Join(errCleanAborted, ctx.Err())
		}
	}
	end := max(mapEnd, pl.start)
	if pl.view != nil {
		end = max(end, pl.view.end)
	}
	if pl.evacuate {
		end = max(end, to)
	}
	stats.BytesWritten = cw.pos
	stats.BatchesWritten = len(cw.entries)

	// Publish.
	nv, err := cw.publish(pl.logStart, max(mapEnd, pl.start), end)
	if err != nil {
		return stats, err
	}
	nv.minHorizon = f.minHorizon
	old := pl.view
	p.clean.Store(nv)
	if pl.evacuate {
		p.evacuate.Store(false)
	}
	p.dropAborted(f.removedAborts)
	if old != nil && old.file != nil {
		s.destroyLater(old.file)
	}
	stats.Partitions = 1
	stats.Took = time.Since(began)
	return stats, nil
}

// destroyLater removes a replaced clean-store file once no fetch holds it
// (fetches that loaded the old view finish on it). At shutdown it gives up;
// the next Open removes the file, which no manifest lists any more.
func (s *Store) destroyLater(m *klog.MappedFile) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := m.Destroy(ctx); err != nil && ctx.Err() == nil {
			s.lg.Warn("remove a replaced clean-store file", zap.String("path", m.Path()), zap.Error(err))
		}
		if ctx.Err() != nil {
			m.Close()
		}
	}()
}

// readBatch copies a batch of the clean store or the commit log into
// st.buf.
func (p *Partition) readBatch(st *cleanerState, e batchRef) ([]byte, error) {
	st.buf = slices.Grow(st.buf[:0], int(e.Size))[:e.Size]
	if err := p.copyBatch(st.buf, e); err != nil {
		return nil, storageError(fmt.Sprintf("clean %s-%d at offset %d", p.topic, p.index, e.BaseOffset), err)
	}
	return st.buf, nil
}

// readCommitLog copies the batch of a consume-queue entry out of the
// commit log into st.buf.
func (p *Partition) readCommitLog(st *cleanerState, e consumequeue.Entry) ([]byte, error) {
	st.buf = slices.Grow(st.buf[:0], int(e.Size))[:e.Size]
	if err := p.store.clog.CopyAt(st.buf, e.Pos); err != nil {
		return nil, storageError(fmt.Sprintf("clean %s-%d at position %d", p.topic, p.index, e.Pos), err)
	}
	return st.buf, nil
}

// filterState carries one pass's rewrite.
type filterState struct {
	p       *Partition
	st      *cleanerState
	cfg     *TopicConfig
	nowMs   int64
	mapEnd  int64
	aborted abortedSet
	// txnData records, per producer, whether a batch of its current
	// transaction was kept since its last marker (Kafka's
	// CleanedTransactionMetadata).
	txnData       map[int64]bool
	removedAborts []int64
	cw            *cleanWriter
	// minHorizon is the earliest delete horizon among the kept batches
	// that may still lose records to it, or -1.
	minHorizon int64
}

// filter decides what of batch b survives and writes it to the new
// generation (COMPACTION-REFERENCE.md §1.5, §1.6).
func (f *filterState) filter(b []byte, stats *CleanStats) error {
	st := f.st
	h, err := batch.Verify(b)
	if err != nil {
		return err
	}
	stats.BatchesRead++
	horizon := int64(batch.NoHorizon)
	if h.BaseOffset >= f.mapEnd {
		// Not cleaned in this pass (evacuated, or an earlier pass's
		// evacuation beyond this one's map): kept unchanged.
		if h.IsControl() {
			delete(f.txnData, h.ProducerID)
		} else if h.IsTransactional() {
			f.txnData[h.ProducerID] = true
		}
		return f.write(b, batch.NoHorizon, func(batch.Record) bool { return true }, stats)
	}
	if h.IsControl() {
		hasData := f.txnData[h.ProducerID]
		delete(f.txnData, h.ProducerID)
		if !hasData {
			switch {
			case h.HasDeleteHorizon() && f.nowMs >= h.BaseTimestamp:
				if em, err := batch.ParseEndTxnMarker(b); err == nil && !em.Commit {
					f.removedAborts = append(f.removedAborts, h.BaseOffset)
				}
				stats.RecordsRemoved += int(h.NumRecords)
				return nil
			case !h.HasDeleteHorizon():
				horizon = f.nowMs + f.cfg.DeleteRetentionMs
			}
			f.noteHorizon(h, horizon)
		}
		return f.write(b, horizon, func(batch.Record) bool { return true }, stats)
	}
	if h.IsTransactional() && f.aborted.aborted(h.ProducerID, h.BaseOffset) {
		stats.RecordsRemoved += int(h.NumRecords)
		return nil
	}
	// Decide per record, then rewrite with the decisions.
	st.keep = st.keep[:0]
	tombstone := false
	expired := h.HasDeleteHorizon() && f.nowMs >= h.BaseTimestamp
	err = batch.Records(b, func(r batch.Record) bool {
		off := h.BaseOffset + int64(r.OffsetDelta)
		keep := r.Key != nil
		if keep && off < f.mapEnd {
			if latest, ok := st.m.Get(r.Key); ok && latest > off {
				keep = false
			}
		}
		if keep && r.Value == nil {
			if expired {
				keep = false
			} else {
				tombstone = true
			}
		}
		st.keep = append(st.keep, keep)
		return true
	})
	if err != nil {
		return err
	}
	if tombstone && !h.HasDeleteHorizon() {
		horizon = f.nowMs + f.cfg.DeleteRetentionMs
	}
	if tombstone {
		f.noteHorizon(h, horizon)
	}
	i := 0
	return f.write(b, horizon, func(batch.Record) bool { k := st.keep[i]; i++; return k }, stats)
}

// noteHorizon tracks the earliest horizon a later pass must act on.
func (f *filterState) noteHorizon(h batch.Header, stamped int64) {
	hz := stamped
	if h.HasDeleteHorizon() {
		hz = h.BaseTimestamp
	}
	if hz >= 0 && (f.minHorizon < 0 || hz < f.minHorizon) {
		f.minHorizon = hz
	}
}

// write rewrites b with keep and appends the result, if any, to the new
// generation.
func (f *filterState) write(b []byte, horizon int64, keep func(batch.Record) bool, stats *CleanStats) error {
	h, _ := batch.ParseHeader(b)
	out, kept, err := f.st.rt.Retain(f.st.out[:0], b, horizon, keep)
	f.st.out = out[:0]
	if err != nil {
		return err
	}
	stats.RecordsRemoved += int(h.NumRecords) - kept
	if kept == 0 {
		return nil
	}
	if h.IsTransactional() && !h.IsControl() {
		f.txnData[h.ProducerID] = true
	}
	return f.cw.add(out)
}

// dropAborted removes the aborted-index entries whose ABORT markers a pass
// removed: an entry without its marker would make a read_committed
// consumer drop that producer's later committed records.
func (p *Partition) dropAborted(markers []int64) {
	if len(markers) == 0 {
		return
	}
	p.aborted.Lock()
	defer p.aborted.Unlock()
	p.aborted.entries = slices.DeleteFunc(p.aborted.entries, func(e abortedEntry) bool {
		_, found := slices.BinarySearch(markers, e.last)
		return found
	})
}

// pruneAbortedToView drops the aborted-index entries whose marker lies
// below the clean end but is not in the clean store: recovery may have
// re-added them from a checkpoint older than the pass that removed the
// marker.
func (p *Partition) pruneAbortedToView(v *cleanView) {
	if v == nil {
		return
	}
	p.aborted.Lock()
	defer p.aborted.Unlock()
	p.aborted.entries = slices.DeleteFunc(p.aborted.entries, func(e abortedEntry) bool {
		if e.last >= v.end {
			return false
		}
		i := v.find(e.last)
		return i >= len(v.entries) || v.entries[i].BaseOffset != e.last || v.entries[i].Attributes&batch.AttrControl == 0
	})
}
