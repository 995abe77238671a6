package partition

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

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
}

// DefaultTopicConfig is Kafka's default topic configuration.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		MaxMessageBytes:      batch.DefaultMaxMessageBytes,
		RetentionMs:          7 * 24 * 3600 * 1000,
		RetentionBytes:       -1,
		TimestampBeforeMaxMs: 1<<63 - 1,
		TimestampAfterMaxMs:  3600 * 1000,
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
	cq    *ConsumeQueue

	cfg atomic.Pointer[TopicConfig]

	mu struct {
		sync.Mutex
		// next is the offset the next batch gets (the log end offset).
		next int64
		// producers is the idempotent producers' state.
		producers *ProducerStates
		// err is a sticky failure of this partition's consume queue.
		err error
	}

	// deleted is set when the topic was deleted.
	deleted atomic.Bool

	// logEnd mirrors mu.next for readers.
	logEnd atomic.Int64
	// highWatermark is the offset up to which data is visible to consumers:
	// durable in sync mode, committed in pool mode, appended in async mode.
	highWatermark atomic.Int64
	// logStart is the log start offset: retention and DeleteRecords move it.
	logStart atomic.Int64

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

// LogStartOffset is the first offset still stored.
func (p *Partition) LogStartOffset() int64 { return p.logStart.Load() }

// Config is the partition's current topic configuration.
func (p *Partition) Config() TopicConfig { return *p.cfg.Load() }

// SetConfig replaces the topic configuration (AlterConfigs).
func (p *Partition) SetConfig(c TopicConfig) { p.cfg.Store(&c) }

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
func (p *Partition) Append(records []byte, produceVersion int16, nowMs int64) (AppendResult, error) {
	cfg := p.cfg.Load()
	opts := batch.ValidateOptions{
		MaxMessageBytes: cfg.MaxMessageBytes,
		ProduceVersion:  produceVersion,
		FullValidation:  p.store.cfg.FullValidation,
	}
	if !cfg.LogAppendTime && (cfg.TimestampBeforeMaxMs < 1<<62 || cfg.TimestampAfterMaxMs < 1<<62) {
		opts.CheckTimestamps = true
		opts.Now = nowMs
		opts.TimestampBeforeMaxMs = cfg.TimestampBeforeMaxMs
		opts.TimestampAfterMaxMs = cfg.TimestampAfterMaxMs
	}
	info, err := batch.Validate(records, opts)
	if err != nil {
		return AppendResult{}, err
	}
	b := records[:info.Size()]
	if !cfg.LogAppendTime && info.Walked && info.MaxRecordTimestamp != info.MaxTimestamp {
		// Kafka's LogValidator rewrites a wrong header MaxTimestamp.
		if err := batch.SetMaxTimestamp(b, info.MaxRecordTimestamp); err != nil {
			return AppendResult{}, err
		}
		info.MaxTimestamp = info.MaxRecordTimestamp
	}
	pb := ProducerBatch{
		ProducerID:      info.ProducerID,
		ProducerEpoch:   info.ProducerEpoch,
		BaseSequence:    info.BaseSequence,
		LastOffsetDelta: info.LastOffsetDelta,
		MaxTimestamp:    info.MaxTimestamp,
		Transactional:   info.IsTransactional(),
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted.Load() {
		return AppendResult{}, fmt.Errorf("partition: append %s-%d: %w", p.topic, p.index, kerr.UnknownTopicOrPartition)
	}
	if p.mu.err != nil {
		return AppendResult{}, p.mu.err
	}
	dup, first, _, err := p.mu.producers.Check(pb)
	if err != nil {
		return AppendResult{}, fmt.Errorf("partition: append %s-%d: %w", p.topic, p.index, err)
	}
	if dup {
		return p.duplicateLocked(pb.ProducerID, first, cfg.LogAppendTime), nil
	}
	base := p.mu.next
	appendTime := int64(-1)
	if cfg.LogAppendTime {
		appendTime = nowMs
	}
	if err := batch.Stamp(b, base, 0, appendTime); err != nil {
		return AppendResult{}, err
	}
	if cfg.LogAppendTime {
		// Producer state remembers the stamped time: a retry of this batch
		// is answered with it (Kafka's BatchMetadata.timestamp).
		info.MaxTimestamp, pb.MaxTimestamp = appendTime, appendTime
	}
	res, err := p.store.clog.Append(p.key[:], b)
	if err != nil {
		return AppendResult{}, storageError(fmt.Sprintf("append %s-%d", p.topic, p.index), err)
	}
	payloadPos := res.Pos + int64(p.store.clog.HeaderSize())
	if err := p.cq.Append(payloadPos, int32(len(b)), base, info.LastOffsetDelta, info.Attributes, info.MaxTimestamp); err != nil {
		// The entry is in the commit log but not indexed: recovery will
		// index it, but this run cannot serve the partition consistently.
		p.mu.err = storageError(fmt.Sprintf("index %s-%d", p.topic, p.index), err)
		return AppendResult{}, p.mu.err
	}
	next := base + int64(info.LastOffsetDelta) + 1
	p.mu.next = next
	p.logEnd.Store(next)
	if pb.ProducerID >= 0 {
		p.mu.producers.Update(pb, base, nowMs)
	}
	p.store.published(p, res.End(), next)
	return AppendResult{
		BaseOffset:     base,
		LogAppendTime:  appendTime,
		LogStartOffset: p.logStart.Load(),
		End:            res.End(),
	}, nil
}

// duplicateLocked answers a retried batch with its original offsets and,
// on LogAppendTime topics, its original append time; a sync-mode producer
// still waits for the original to be durable.
func (p *Partition) duplicateLocked(producerID, first int64, logAppendTime bool) AppendResult {
	r := AppendResult{BaseOffset: first, LogAppendTime: -1, LogStartOffset: p.logStart.Load(), Duplicate: true}
	if e, ok := p.cq.Find(first); ok && e.BaseOffset == first {
		r.End = e.End()
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

// setHighWatermark moves the high watermark forward and wakes waiters.
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
	p.vis.Lock()
	if p.vis.wait != nil {
		close(p.vis.wait)
		p.vis.wait = nil
	}
	p.vis.Unlock()
}

// Wait returns a channel that is closed when the high watermark moves past
// hw, or at once if it already has. Parked fetches select on it.
func (p *Partition) Wait(hw int64) <-chan struct{} {
	p.vis.Lock()
	defer p.vis.Unlock()
	if p.highWatermark.Load() > hw || p.deleted.Load() {
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
