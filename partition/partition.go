package partition

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/consumequeue"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/partition/batch"
)

// TopicConfig is what a partition applies of its topic's configuration.
// The broker translates the topic registry's configs into it.
type TopicConfig struct {
	// MaxMessageBytes is max.message.bytes: the largest batch accepted.
	MaxMessageBytes int
	// LogAppendTime is message.timestamp.type=LogAppendTime: the broker
	// stamps its own time into every batch.
	LogAppendTime bool
	// RetentionMs and RetentionBytes are retention.ms and retention.bytes;
	// -1 keeps data forever.
	RetentionMs    int64
	RetentionBytes int64
	// TimestampBeforeMaxMs and TimestampAfterMaxMs are
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms
	// (CreateTime topics). Values ≥ 1<<62 mean no limit.
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
	// Compact is cleanup.policy with compact: the log cleaner keeps only
	// the latest record of each key, and records without a key are refused
	// with INVALID_RECORD (LogValidator.validateKey, KIP-467), since they
	// could never be compacted.
	Compact bool
	// MinCleanableRatio is min.cleanable.dirty.ratio: the share of dirty
	// bytes above which the cleaner takes the partition.
	MinCleanableRatio float64
	// DeleteRetentionMs is delete.retention.ms: how long tombstones and
	// emptied transaction markers stay after the cleaner first kept them.
	DeleteRetentionMs int64
	// MinCompactionLagMs and MaxCompactionLagMs are min.compaction.lag.ms
	// (a younger batch is never cleaned) and max.compaction.lag.ms (an
	// older dirty batch makes the partition due whatever its ratio).
	MinCompactionLagMs int64
	MaxCompactionLagMs int64
	// SegmentMs and SegmentBytes are segment.ms and segment.bytes: the
	// newest data up to these bounds is the "active segment", never
	// cleaned (README, Compacted topics).
	SegmentMs    int64
	SegmentBytes int64
}

// DefaultTopicConfig is Kafka's default topic configuration.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		MaxMessageBytes:      batch.DefaultMaxMessageBytes,
		RetentionMs:          7 * 24 * 3600 * 1000,
		RetentionBytes:       -1,
		TimestampBeforeMaxMs: 1<<63 - 1,
		TimestampAfterMaxMs:  3600 * 1000,
		MinCleanableRatio:    0.5,
		DeleteRetentionMs:    86400000,
		MaxCompactionLagMs:   1<<63 - 1,
		SegmentMs:            604800000,
		SegmentBytes:         1 << 30,
	}
}

// Partition is one Kafka partition: its consume queue of batch entries in
// the shared commit log, its offsets and its producers.
//
// Appends are serialised by mu (RocketMQ's per-queue lock): validation,
// duplicate detection, offset assignment, the commit-log append and the
// consume-queue entry all happen under it, so offsets strictly increase and
// consume-queue entries are written in offset order. Readers take no lock:
// offsets are atomics and the consume queue supports concurrent readers.
type Partition struct {
	store *Store
	topic string
	id    TopicID
	index int32
	key   [KeySize]byte
	dir   string
	// cq is the consume queue, nil until it is first needed (lazy.go);
	// use queue(). Set once, under openMu.
	cq atomic.Pointer[consumequeue.Queue]
	// openMu serialises opening the queue; lazy is what opening it
	// needs, guarded by openMu.
	openMu sync.Mutex
	lazy   struct {
		// want is the checkpoint's next offset: the queue is cut to it
		// and must reach it (else it is indexed again).
		want int64
		// err is a failed open, or why the queue may not open (store
		// closed, topic deleted).
		err error
	}

	// summary describes the batches for retention and the size metric
	// while the queue is closed (summary.go); use closedSummary().
	summary atomic.Pointer[queueSummary]

	cfg atomic.Pointer[TopicConfig]

	// clean is the published generation of the partition's clean store
	// (clean_store.go), nil if it was never compacted. Readers load it
	// without a lock; only the cleaner, holding cleanMu, stores it.
	clean atomic.Pointer[cleanView]
	// cleanDir is the clean store's directory.
	cleanDir string
	// cleanMu is held by a cleaning pass and by topic deletion, so that a
	// pass never writes into a directory being removed.
	cleanMu sync.Mutex
	// evacuate is set by retention when this compacted partition is what
	// keeps the oldest commit-log file alive: the next pass copies its
	// uncleanable tail into the clean store (cleaner.go).
	evacuate atomic.Bool
	// cleanFailedAt is when the last pass failed (ms), 0 if none: the
	// cleaner threads leave the partition alone for a backoff after it.
	cleanFailedAt atomic.Int64

	mu struct {
		sync.Mutex
		// next is the offset the next batch gets (the log end offset).
		next int64
		// producers is the idempotent and transactional producers' state.
		producers *ProducerStates
		// err is a sticky failure of this partition's consume queue.
		err error
		// lastEnd is the commit-log position just past the partition's
		// last batch (an upper bound after truncation), checkpointed so
		// that recovery knows whether the log kept every batch the
		// checkpoint counts.
		lastEnd int64
		// leaderEpoch is stamped into every batch written; 0 unless a
		// simulated leader move bumped it (SetLeaderEpoch).
		leaderEpoch int32
	}

	// deleted is set when the topic was deleted.
	deleted atomic.Bool

	// changes counts the moves of the high watermark, the last stable
	// offset and the log start offset, the leader epoch changes and the
	// deletion (watch.go).
	changes atomic.Uint64
	// watchers are signalled after each move of the high watermark or
	// the last stable offset (watch.go).
	watchers struct {
		sync.Mutex
		list []Watcher
	}
	// watching mirrors len(watchers.list), so that signalling nobody
	// takes no lock.
	watching atomic.Int32

	// traffic counts bytes and records in and out (stats.go).
	traffic Traffic
	// size caches the partition's size (stats.go); a leaf lock.
	size partitionSize

	// logEnd mirrors mu.next for readers.
	logEnd atomic.Int64
	// highWatermark is the offset up to which data is visible to consumers:
	// durable in sync mode, committed in pool mode, appended in async mode.
	highWatermark atomic.Int64
	// logStart is the log start offset: retention and DeleteRecords move it.
	logStart atomic.Int64
	// lastStable is the last stable offset (txn.go), recomputed under
	// stable whenever the high watermark, the log start offset or the open
	// transactions change.
	lastStable atomic.Int64

	// stable holds what the last stable offset depends on besides the high
	// watermark and the log start offset. A leaf lock: taken under mu or on
	// its own, never together with vis or aborted.
	stable struct {
		sync.Mutex
		// firstOpen mirrors the first offset of producer state's oldest open
		// transaction, -1 if none; written under mu too.
		firstOpen int64
		// decided are completed transactions whose marker is not yet below
		// the high watermark (Kafka's unreplicatedTxns), in marker order.
		decided []decidedTxn
	}

	// aborted is the aborted-transaction index (txn.go), sorted by marker
	// offset. Appends hold mu too; fetches only read-lock it.
	aborted struct {
		sync.RWMutex
		entries []abortedEntry
	}

	// vis holds appended batches that are not yet visible (sync and pool
	// modes), oldest first, and the channel that parked fetches wait on.
	vis struct {
		sync.Mutex
		pending []pendingBatch
		head    int
		// wait is closed when the high watermark moves; nil while nobody
		// waits, so that appends do not allocate a channel each.
		wait chan struct{}
	}
}

// pendingBatch is a batch waiting for the flush (or commit) that makes it
// visible.
type pendingBatch struct {
	end  int64 // commit-log position just past the entry
	next int64 // the high watermark once it is visible
}

// Topic is the partition's topic name.
func (p *Partition) Topic() string { return p.topic }

// TopicID is the partition's topic id.
func (p *Partition) TopicID() TopicID { return p.id }

// Index is the partition number.
func (p *Partition) Index() int32 { return p.index }

// HighWatermark is the offset below which records are visible to consumers.
func (p *Partition) HighWatermark() int64 { return p.highWatermark.Load() }

// LogEndOffset is the offset the next appended record gets.
func (p *Partition) LogEndOffset() int64 { return p.logEnd.Load() }

// SetLeaderEpoch makes epoch the leader epoch stamped into the batches
// written from now on, as a new leader does (the broker's simulated
// leader moves, broker/nodes.go), and returns the log end offset at the
// change: the start offset of the epoch, which OffsetForLeaderEpoch
// answers with. A new epoch counts as a change for the partition's
// watchers (watch.go): a fetch session that skips idle partitions must
// answer a leader move (NOT_LEADER_OR_FOLLOWER on the old leader) as a
// full fetch would.
func (p *Partition) SetLeaderEpoch(epoch int32) int64 {
	p.mu.Lock()
	changed := p.mu.leaderEpoch != epoch
	p.mu.leaderEpoch = epoch
	next := p.mu.next
	p.mu.Unlock()
	if changed {
		p.changes.Add(1)
		p.signalWatchers()
	}
	return next
}

// LogStartOffset is the first offset still stored.
func (p *Partition) LogStartOffset() int64 { return p.logStart.Load() }

// Config is the partition's current topic configuration.
func (p *Partition) Config() TopicConfig { return *p.cfg.Load() }

// SetConfig replaces the topic configuration (AlterConfigs).
func (p *Partition) SetConfig(c TopicConfig) { p.cfg.Store(&c) }

// writableLocked refuses a write (what names it in the error) to a
// deleted partition (UNKNOWN_TOPIC_OR_PARTITION) or one whose earlier write
// failed (its sticky error).
func (p *Partition) writableLocked(what string) error {
	if p.deleted.Load() {
		return fmt.Errorf("partition: %s %s-%d: %w", what, p.topic, p.index, kerr.UnknownTopicOrPartition)
	}
	return p.mu.err
}

// AppendResult describes an accepted batch.
type AppendResult struct {
	// BaseOffset is the offset of the batch's first record.
	BaseOffset int64
	// LogAppendTime is the broker time stamped into the batch, or -1 for
	// CreateTime topics.
	LogAppendTime int64
	// LogStartOffset is the partition's log start offset after the append.
	LogStartOffset int64
	// End is the commit-log position just past the batch's entry: in sync
	// mode the produce response waits until the flushed position reaches it
	// (Store.AwaitDurable).
	End int64
	// Duplicate is true when the batch was a retry of one already stored
	// (idempotent producer): nothing was written, and BaseOffset is the
	// original's.
	Duplicate bool
}

// Append validates a produced batch (records is one partition's Records
// field of a Produce request) and appends it. The bytes are rewritten in
// place (base offset, leader epoch, LogAppendTime) and then copied into the
// commit log. produceVersion is the Produce request version; nowMs the
// broker's time. Errors wrap Kafka error codes (kerr); a rejected batch
// writes nothing.
//
// A transactional batch is accepted like an idempotent one (the broker
// checks beforehand that its transaction includes this partition); the
// first one of a producer opens a transaction here, which holds the last
// stable offset at its offset until AppendMarker ends it. A
// non-transactional batch from a producer with an open transaction is
// INVALID_TXN_STATE, an epoch below the producer's INVALID_PRODUCER_EPOCH
// (Kafka 2.7+ answers that, not PRODUCER_FENCED, so that a transactional
// client can abort and go on).
func (p *Partition) Append(records []byte, produceVersion int16, nowMs int64) (AppendResult, error) {
	pr, err := p.prepare(records, produceVersion, nowMs, nil)
	if err != nil {
		return AppendResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if dup, r, err := p.checkLocked(&pr); err != nil || dup {
		return r, err
	}
	return p.appendCheckedLocked(pr.b, pr.pb, pr.attributes, pr.logAppendTime, nowMs)
}

// prepared is a produced batch that passed validation, ready for the
// partition lock.
type prepared struct {
	b             []byte
	pb            ProducerBatch
	attributes    int16
	logAppendTime bool
}

// prepare does what Append does before the partition lock: it validates
// records against the topic's configuration and fixes the header's max
// timestamp as Kafka's LogValidator does.
func (p *Partition) prepare(records []byte, produceVersion int16, nowMs int64, budget *int64) (prepared, error) {
	cfg := p.cfg.Load()
	opts := batch.ValidateOptions{
		MaxMessageBytes:  cfg.MaxMessageBytes,
		ProduceVersion:   produceVersion,
		FullValidation:   p.store.cfg.FullValidation,
		RequireKeys:      cfg.Compact,
		DecompressBudget: budget,
		Stop:             p.store.stopping,
	}
	if !cfg.LogAppendTime && (cfg.TimestampBeforeMaxMs < 1<<62 || cfg.TimestampAfterMaxMs < 1<<62) {
		opts.CheckTimestamps = true
		opts.Now = nowMs
		opts.TimestampBeforeMaxMs = cfg.TimestampBeforeMaxMs
		opts.TimestampAfterMaxMs = cfg.TimestampAfterMaxMs
	}
	info, err := batch.Validate(records, opts)
	if err != nil {
		return prepared{}, err
	}
	b := records[:info.Size()]
	if !cfg.LogAppendTime && info.Walked && info.MaxRecordTimestamp != info.MaxTimestamp {
		// Kafka's LogValidator rewrites a wrong header MaxTimestamp.
		if err := batch.SetMaxTimestamp(b, info.MaxRecordTimestamp); err != nil {
			return prepared{}, err
		}
		info.MaxTimestamp = info.MaxRecordTimestamp
	}
	return prepared{
		b: b,
		pb: ProducerBatch{
			ProducerID:      info.ProducerID,
			ProducerEpoch:   info.ProducerEpoch,
			BaseSequence:    info.BaseSequence,
			LastOffsetDelta: info.LastOffsetDelta,
			MaxTimestamp:    info.MaxTimestamp,
			Transactional:   info.IsTransactional(),
		},
		attributes:    info.Attributes,
		logAppendTime: cfg.LogAppendTime,
	}, nil
}

// checkLocked is the first step under the partition lock: the partition
// must be writable and the batch acceptable to its producer's state. A
// retry of a stored batch is answered (dup, with the original's result)
// and not written.
func (p *Partition) checkLocked(pr *prepared) (dup bool, r AppendResult, err error) {
	if err := p.writableLocked("append"); err != nil {
		return false, AppendResult{}, err
	}
	dup, first, _, err := p.mu.producers.Check(pr.pb)
	if err != nil {
		return false, AppendResult{}, fmt.Errorf("partition: append %s-%d: %w", p.topic, p.index, err)
	}
	if dup {
		return true, p.duplicateLocked(pr.pb.ProducerID, first, pr.logAppendTime), nil
	}
	return false, AppendResult{}, nil
}

// appendCheckedLocked ends Append and AppendCoordinator once the batch b
// of pb passed their checks: it writes b, records it in its producer's
// state and publishes it.
func (p *Partition) appendCheckedLocked(b []byte, pb ProducerBatch, attributes int16, logAppendTime bool, nowMs int64) (AppendResult, error) {
	w, err := p.writeLocked(b, pb.LastOffsetDelta, attributes, pb.MaxTimestamp, logAppendTime, nowMs)
	if err != nil {
		return AppendResult{}, err
	}
	return p.finishLocked(w, pb, len(b), logAppendTime, nowMs), nil
}

// finishLocked ends the append of a written data batch of size bytes:
// producer state, traffic counters, and its publication.
func (p *Partition) finishLocked(w written, pb ProducerBatch, size int, logAppendTime bool, nowMs int64) AppendResult {
	if logAppendTime {
		// Producer state remembers the stamped time: a retry of this batch
		// is answered with it (Kafka's BatchMetadata.timestamp).
		pb.MaxTimestamp = w.appendTime
	}
	p.updateProducerLocked(pb, w.base, nowMs)
	p.traffic.BytesIn.Add(int64(size))
	p.traffic.RecordsIn.Add(int64(pb.LastOffsetDelta) + 1) // validated equal to NumRecords
	return p.publishLocked(w)
}

// written is where writeLocked put a batch.
type written struct {
	base, next int64
	// end is the commit-log position just past the entry.
	end int64
	// appendTime is the LogAppendTime stamped into the batch, or -1.
	appendTime int64
}

// writeLocked stamps the batch b at the log end (base offset, leader
// epoch, and the broker's time on LogAppendTime topics), appends it to the
// commit log and its consume-queue entry to the queue, and advances the
// log end. The caller then updates producer state and calls publishLocked,
// in that order, so that a transaction the batch opens holds the last
// stable offset before the batch can become visible. The caller holds mu.
func (p *Partition) writeLocked(b []byte, lastOffsetDelta int32, attributes int16, maxTimestamp int64, logAppendTime bool, nowMs int64) (written, error) {
	w, err := p.stageLocked(b, logAppendTime, nowMs)
	if err != nil {
		return written{}, err
	}
	res, err := p.store.clog.Append(p.key[:], b)
	if err != nil {
		return written{}, storageError(fmt.Sprintf("append %s-%d", p.topic, p.index), err)
	}
	return p.indexLocked(w, res, len(b), lastOffsetDelta, attributes, maxTimestamp)
}

// stageLocked readies the batch b for the commit log at the log end: it
// stamps it (base offset, leader epoch, the broker's time on
// LogAppendTime topics) and makes sure its consume-queue entry has a
// file, so that a full disk refuses the batch before it is in the commit
// log, not once it is there unindexed. The caller holds mu.
func (p *Partition) stageLocked(b []byte, logAppendTime bool, nowMs int64) (written, error) {
	w := written{base: p.mu.next, appendTime: -1}
	if logAppendTime {
		w.appendTime = nowMs
	}
	if err := batch.Stamp(b, w.base, p.mu.leaderEpoch, w.appendTime); err != nil {
		return written{}, err
	}
	cq, err := p.queue()
	if err != nil {
		return written{}, err
	}
	if err := cq.Reserve(w.base); err != nil {
		return written{}, storageError(fmt.Sprintf("index %s-%d", p.topic, p.index), err)
	}
	return w, nil
}

// indexLocked ends the write of a staged batch of size bytes that the
// commit log stored at res: its consume-queue entry, and the log end. The
// caller holds mu.
func (p *Partition) indexLocked(w written, res klog.AppendResult, size int, lastOffsetDelta int32, attributes int16, maxTimestamp int64) (written, error) {
	if w.appendTime >= 0 {
		maxTimestamp = w.appendTime
	}
	payloadPos := res.Pos + int64(p.store.clog.HeaderSize())
	// stageLocked opened the queue, under the same hold of mu.
	if err := p.cq.Load().Append(payloadPos, int32(size), w.base, lastOffsetDelta, attributes, maxTimestamp); err != nil {
		// The entry is in the commit log but not indexed: recovery will
		// index it, but this run cannot serve the partition consistently.
		p.mu.err = storageError(fmt.Sprintf("index %s-%d", p.topic, p.index), err)
		return written{}, p.mu.err
	}
	w.next = w.base + int64(lastOffsetDelta) + 1
	w.end = res.End()
	p.mu.next = w.next
	p.mu.lastEnd = w.end
	p.logEnd.Store(w.next)
	return w, nil
}

// updateProducerLocked records a written data batch in producer state; a
// transactional one may open a transaction, which the last stable offset
// must reflect before the batch is published.
func (p *Partition) updateProducerLocked(pb ProducerBatch, base, nowMs int64) {
	if pb.ProducerID < 0 {
		return
	}
	p.mu.producers.Update(pb, base, nowMs)
	if pb.Transactional {
		p.syncOpenLocked(nil)
	}
}

// publishLocked hands a written batch to the flush mode (it becomes visible
// now, or once flushed or committed) and returns its result.
func (p *Partition) publishLocked(w written) AppendResult {
	p.store.published(p, w.end, w.next)
	return AppendResult{
		BaseOffset:     w.base,
		LogAppendTime:  w.appendTime,
		LogStartOffset: p.logStart.Load(),
		End:            w.end,
	}
}

// duplicateLocked answers a retried batch with its original offsets and,
// on LogAppendTime topics, its original append time; a sync-mode producer
// still waits for the original to be durable.
func (p *Partition) duplicateLocked(producerID, first int64, logAppendTime bool) AppendResult {
	r := AppendResult{BaseOffset: first, LogAppendTime: -1, LogStartOffset: p.logStart.Load(), Duplicate: true}
	if cq, err := p.queue(); err == nil {
		if e, ok := cq.Find(first); ok && e.BaseOffset == first {
			r.End = e.End()
		}
	}
	if logAppendTime {
		if v, ok := p.mu.producers.Get(producerID); ok {
			for _, b := range v.Batches[:v.NumBatches] {
				if b.FirstOffset == first {
					r.LogAppendTime = b.MaxTimestamp
				}
			}
		}
	}
	return r
}

// storageError wraps a store failure as KAFKA_STORAGE_ERROR, keeping the
// cause for logs and errors.Is.
func storageError(what string, err error) error {
	return fmt.Errorf("partition: %s: %w: %w", what, kerr.KafkaStorageError, err)
}

// setHighWatermark moves the high watermark forward, recomputes the last
// stable offset and wakes waiters.
func (p *Partition) setHighWatermark(hw int64) {
	for {
		old := p.highWatermark.Load()
		if hw <= old {
			return
		}
		if p.highWatermark.CompareAndSwap(old, hw) {
			break
		}
	}
	p.stable.Lock()
	p.refreshStableLocked()
	p.stable.Unlock()
	p.wake()
}

// Wait returns a channel that is closed when the high watermark moves past
// hw, or at once if it already has. Parked fetches select on it. The
// channel is shared with WaitStable, so a move of the last stable offset
// alone (DeleteRecords past a hanging transaction) closes it too: check the
// high watermark again and wait anew.
func (p *Partition) Wait(hw int64) <-chan struct{} { return p.waitPast(&p.highWatermark, hw) }

// waitPast serves Wait and WaitStable: a closed channel when mark is past
// v already (or the partition is deleted), else the shared channel that
// wake closes. mark is read under p.vis, which wake (called after every
// move) takes too, so a move between the check and the wait is not missed.
func (p *Partition) waitPast(mark *atomic.Int64, v int64) <-chan struct{} {
	p.vis.Lock()
	defer p.vis.Unlock()
	if mark.Load() > v || p.deleted.Load() {
		return closedChan
	}
	if p.vis.wait == nil {
		p.vis.wait = make(chan struct{})
	}
	return p.vis.wait
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// addPending queues a batch for visibility; it reports whether the queue
// was empty before (the store then tracks this partition).
func (p *Partition) addPending(end, next int64) bool {
	p.vis.Lock()
	defer p.vis.Unlock()
	wasEmpty := p.vis.head == len(p.vis.pending)
	if wasEmpty {
		p.vis.pending, p.vis.head = p.vis.pending[:0], 0
	}
	p.vis.pending = append(p.vis.pending, pendingBatch{end: end, next: next})
	return wasEmpty
}

// reveal makes every pending batch that ends at or before pos visible. It
// reports whether batches remain pending.
func (p *Partition) reveal(pos int64) bool {
	p.vis.Lock()
	hw := int64(-1)
	for p.vis.head < len(p.vis.pending) && p.vis.pending[p.vis.head].end <= pos {
		hw = p.vis.pending[p.vis.head].next
		p.vis.head++
	}
	more := p.vis.head < len(p.vis.pending)
	p.vis.Unlock()
	if hw >= 0 {
		p.setHighWatermark(hw)
	}
	return more
}
