package partition

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/flush"
	"github.com/kbroker/kbroker/internal/metric"
	klog "github.com/kbroker/kbroker/log"
)

// FlushMode says when an append is durable and visible (ARCHITECTURE.md,
// Flush modes).
type FlushMode int

const (
	// FlushSync acknowledges a produce once a group commit flushed it; the
	// high watermark covers flushed data only, so consumers never read
	// what a crash could take back.
	FlushSync FlushMode = iota
	// FlushAsync acknowledges once the data is in the page cache; the
	// real-time flusher writes it to disk every 500 ms.
	FlushAsync
	// FlushAsyncPool appends into transient-pool buffers that the commit
	// service writes to the files every 200 ms; data is visible once
	// committed. A process crash loses what was not yet committed.
	FlushAsyncPool
)

// String names the mode as the configuration spells it.
func (m FlushMode) String() string {
	switch m {
	case FlushSync:
		return "sync"
	case FlushAsync:
		return "async"
	case FlushAsyncPool:
		return "async-pool"
	}
	return "FlushMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseFlushMode parses "sync", "async" or "async-pool".
func ParseFlushMode(s string) (FlushMode, error) {
	for _, m := range []FlushMode{FlushSync, FlushAsync, FlushAsyncPool} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("partition: unknown flush mode %q (sync, async, async-pool)", s)
}

// Config configures a Store.
type Config struct {
	// Dir is the data directory (commit log, consume queues, metadata).
	Dir string
	// Log configures the commit log; its Dir, KeySize and SyncFlush are set
	// by the store.
	Log klog.Config
	// FlushMode selects durability; see FlushMode.
	FlushMode FlushMode
	// GroupCommit, FlushRealTime and CommitRealTime configure the flush
	// services of the chosen mode.
	GroupCommit    flush.GroupCommitConfig
	FlushRealTime  flush.FlushRealTimeConfig
	CommitRealTime flush.CommitRealTimeConfig
	// ConsumeQueueEntries is the number of 40-byte entries per consume-queue
	// file. Default 262144 (10 MiB, the size of a Kafka index).
	ConsumeQueueEntries int
	// FullValidation decompresses compressed batches to check every record,
	// as Kafka always does; off, they are trusted to their CRC.
	FullValidation bool
	// CheckpointInterval is how often the partitions' offsets and producer
	// state are checkpointed (bounding recovery's replay). Default 10 s.
	CheckpointInterval time.Duration
	// RetentionCheckInterval is how often retention runs
	// (log.retention.check.interval.ms). Default 5 minutes.
	RetentionCheckInterval time.Duration
	// ProducerExpirationMs is producer.id.expiration.ms. Default one day.
	ProducerExpirationMs int64
	// Cleaner configures the log cleaner of compacted partitions.
	Cleaner CleanerConfig
	// Now returns the current time; tests inject it (retention.ms).
	Now func() time.Time
}

func (c *Config) withDefaults() {
	if c.ConsumeQueueEntries == 0 {
		c.ConsumeQueueEntries = 262144
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = 10 * time.Second
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = 5 * time.Minute
	}
	if c.ProducerExpirationMs == 0 {
		c.ProducerExpirationMs = 86400000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Cleaner.withDefaults()
	c.Log.Dir = c.Dir
	c.Log.KeySize = KeySize
	c.Log.SyncFlush = c.FlushMode == FlushSync
	if c.FlushMode != FlushAsyncPool {
		c.Log.PoolBuffers = 0
	} else if c.Log.PoolBuffers == 0 {
		c.Log.PoolBuffers = 5 // RocketMQ's transientStorePoolSize
	}
}

// TopicSpec describes a topic whose partitions the store serves.
type TopicSpec struct {
	ID         TopicID
	Name       string
	Partitions int32
	Config     TopicConfig
}

// Store owns the commit log, the flush services and every partition.
type Store struct {
	cfg  Config
	lg   *zap.Logger
	clog *klog.CommitLog

	groupCommit *flush.GroupCommitService
	flusher     *flush.FlushRealTimeService
	committer   *flush.CommitRealTimeService

	// topics maps topic id to its partitions; replaced whole on change.
	topics atomic.Pointer[map[TopicID][]*Partition]
	// topicsMu serialises changes to topics.
	topicsMu sync.Mutex

	// vis tracks partitions with batches waiting for visibility.
	vis struct {
		sync.Mutex
		waiting []*Partition
		spare   []*Partition
	}

	// checkpointMu serialises checkpoints (timer, retention, Close).
	checkpointMu sync.Mutex

	// flushStats are filled by the flush services' round hook.
	flushStats FlushStats
	// deletedFiles counts commit-log files deleted by retention.
	deletedFiles atomic.Int64
	// throttle bounds the cleaners' I/O; cleanerCancel stops them.
	throttle      *throttler
	cleanerCancel context.CancelFunc

	report RecoveryReport
	closed atomic.Bool
	stop   chan struct{}
	// stopping is closed by StopDecompressions (once: stoppingOnce).
	stopping     chan struct{}
	stoppingOnce sync.Once
	wg           sync.WaitGroup
	cqRoot       string
	metaDir      string
}

// RecoveryReport says what Open found.
type RecoveryReport struct {
	// Log is the commit log's recovery report.
	Log klog.RecoveryReport
	// ReplayedFrom is where re-indexing started in the commit log.
	ReplayedFrom int64
	// Indexed counts the batches added to consume queues by the replay.
	Indexed int
	// Rebuilt lists partitions whose consume queue was rebuilt from the
	// commit log (missing or behind its checkpoint).
	Rebuilt []string
}

// Option configures a Store.
type Option func(*Store)

// WithLogger sets the logger (default: none).
func WithLogger(lg *zap.Logger) Option { return func(s *Store) { s.lg = lg } }

// Open opens the store in cfg.Dir with the given topics, recovering after a
// crash: the commit log is verified, entries past the checkpointed
// position are re-indexed into their consume queues, and every partition's
// offsets and producer state are restored.
func Open(cfg Config, topics []TopicSpec, opts ...Option) (*Store, RecoveryReport, error) {
	cfg.withDefaults()
	s := &Store{
		cfg:      cfg,
		lg:       zap.NewNop(),
		stop:     make(chan struct{}),
		stopping: make(chan struct{}),
		cqRoot:   filepath.Join(cfg.Dir, "consumequeue"),
		metaDir:  filepath.Join(cfg.Dir, "metadata"),
		flushStats: FlushStats{
			Latency: metric.NewHistogram(metric.LatencyBounds),
			Batch:   metric.NewHistogram(metric.CountBounds),
		},
	}
	for _, o := range opts {
		o(s)
	}
	empty := map[TopicID][]*Partition{}
	s.topics.Store(&empty)
	for _, d := range []string{cfg.Dir, s.cqRoot, s.metaDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, RecoveryReport{}, fmt.Errorf("partition: create %s: %w", d, err)
		}
	}
	cp, err := readCheckpoint(s.metaDir)
	if err != nil {
		return nil, RecoveryReport{}, err
	}
	r, err := s.recover(cp, topics)
	if err != nil {
		s.closePartitions()
		return nil, r, err
	}
	s.report = r
	s.startFlush()
	s.wg.Add(1)
	go s.background()
	s.throttle = &throttler{rate: cfg.Cleaner.IOMaxBytesPerSecond}
	if cfg.Cleaner.Enable {
		s.startCleaner()
	}
	return s, r, nil
}

// newPartition makes partition i of t, with its clean store if it has one
// (noClean: the caller knows the topic has none); its consume queue opens
// later (recovery, or lazily: lazy.go).
func (s *Store) newPartition(t TopicSpec, i int32, noClean bool) (*Partition, error) {
	dir := filepath.Join(s.cqRoot, hex.EncodeToString(t.ID[:]), strconv.Itoa(int(i)))
	p := &Partition{store: s, topic: t.Name, id: t.ID, index: i, key: entryKey(t.ID, i), dir: dir,
		cleanDir: filepath.Join(s.cfg.Dir, "compacted", hex.EncodeToString(t.ID[:]), strconv.Itoa(int(i)))}
	if !noClean {
		v, err := loadCleanStore(p.cleanDir)
		if err != nil {
			return nil, fmt.Errorf("partition: open %s-%d: %w", t.Name, i, err)
		}
		p.clean.Store(v)
	}
	cfg := t.Config
	p.cfg.Store(&cfg)
	p.mu.producers = NewProducerStates()
	p.stable.firstOpen = -1
	if first, ok := p.firstOffset(); ok {
		p.logStart.Store(first)
	}
	return p, nil
}

// startFlush starts the flush services of the configured mode, wired so
// that data becomes visible when it becomes durable (sync) or committed
// (pool).
func (s *Store) startFlush() {
	reveal := func(pos int64) { s.reveal(pos) }
	observe := flush.WithOnRound(s.observeFlush)
	switch s.cfg.FlushMode {
	case FlushSync:
		s.groupCommit = flush.NewGroupCommitService(s.clog, s.cfg.GroupCommit, flush.WithLogger(s.lg), flush.WithOnFlushed(reveal), observe)
		s.groupCommit.Start()
	case FlushAsync:
		s.flusher = flush.NewFlushRealTimeService(s.clog, s.cfg.FlushRealTime, flush.WithLogger(s.lg), observe)
		s.flusher.Start()
	case FlushAsyncPool:
		s.flusher = flush.NewFlushRealTimeService(s.clog, s.cfg.FlushRealTime, flush.WithLogger(s.lg), observe)
		s.committer = flush.NewCommitRealTimeService(s.clog, s.cfg.CommitRealTime,
			flush.WithLogger(s.lg), flush.WithFlusher(s.flusher), flush.WithOnCommitted(reveal))
		s.flusher.Start()
		s.committer.Start()
	}
}

// published is called under p.mu after an append: in async mode the batch
// is visible at once; otherwise it waits for its flush (sync) or commit
// (pool). The partition is registered as waiting before the position is
// checked again, so a flush or commit that lands in between cannot be
// missed: either its hook finds the partition registered, or the check
// below sees its position.
func (s *Store) published(p *Partition, end, next int64) {
	if s.cfg.FlushMode == FlushAsync {
		p.setHighWatermark(next)
		return
	}
	if s.visiblePosition() >= end {
		p.setHighWatermark(next)
		return
	}
	if p.addPending(end, next) {
		s.vis.Lock()
		s.vis.waiting = append(s.vis.waiting, p)
		s.vis.Unlock()
	}
	if s.cfg.FlushMode == FlushAsyncPool {
		s.committer.Wake() // RocketMQ's wakeCommitWhenPutMessage
	}
	if pos := s.visiblePosition(); pos >= end {
		s.reveal(pos)
	}
}

// visiblePosition is the commit-log position up to which data may be
// visible: flushed in sync mode, committed (in the files) in pool mode.
func (s *Store) visiblePosition() int64 {
	if s.cfg.FlushMode == FlushSync {
		return s.clog.FlushedPosition()
	}
	return s.clog.ReadPosition()
}

// reveal is the flush (sync) or commit (pool) hook: every pending batch
// that ends at or before pos becomes visible.
func (s *Store) reveal(pos int64) {
	s.vis.Lock()
	ps := s.vis.waiting
	s.vis.waiting, s.vis.spare = s.vis.spare[:0], nil
	s.vis.Unlock()
	var keep []*Partition
	for _, p := range ps {
		if p.reveal(pos) {
			keep = append(keep, p)
		}
	}
	s.vis.Lock()
	s.vis.waiting = append(s.vis.waiting, keep...)
	s.vis.spare = ps[:0]
	s.vis.Unlock()
}

// AwaitDurable blocks until the commit log is durable up to end when the
// store runs in sync mode (the produce response of acks=-1 waits for it);
// in the async modes it returns at once. Errors are KAFKA_STORAGE_ERROR or,
// after the sync flush timeout, REQUEST_TIMED_OUT.
func (s *Store) AwaitDurable(ctx context.Context, end int64) error {
	if s.groupCommit == nil || end == 0 {
		return nil
	}
	return durableError(s.groupCommit.Await(ctx, end))
}

// SubmitDurable is AwaitDurable's asynchronous form: done is called once,
// from another goroutine, or at once in the async modes.
func (s *Store) SubmitDurable(end int64, done func(error)) {
	if s.groupCommit == nil || end == 0 {
		done(nil)
		return
	}
	s.groupCommit.Submit(end, func(err error) { done(durableError(err)) })
}

// SubmitFlush is SubmitDurable without the error's translation, which
// costs a closure per call: done gets the group commit's own error, which
// DurableError turns into SubmitDurable's. For a caller that keeps one
// callback for many calls (a produce response reused from request to
// request) and so allocates nothing per call.
func (s *Store) SubmitFlush(end int64, done func(error)) {
	if s.groupCommit == nil || end == 0 {
		done(nil)
		return
	}
	s.groupCommit.Submit(end, done)
}

// DurableError is the error AwaitDurable and SubmitDurable report for the
// group commit's error err (SubmitFlush's): REQUEST_TIMED_OUT after the
// sync flush timeout, KAFKA_STORAGE_ERROR for a failed flush.
func DurableError(err error) error { return durableError(err) }

// Sync makes the commit log durable on disk up to position end in every
// flush mode: in sync mode it waits for the group commit (as AwaitDurable);
// in the async modes it commits what the pool buffers hold (pool mode)
// and flushes the files itself. It is for state derived from records that
// the flush mode acknowledged but a crash could still take (async and
// pool modes acknowledge before the disk has them): a coordinator's
// snapshot must not outlive the records it reflects. Errors are
// KAFKA_STORAGE_ERROR, or REQUEST_TIMED_OUT after the sync flush timeout.
func (s *Store) Sync(ctx context.Context, end int64) error {
	if s.clog.FlushedPosition() >= end {
		return nil
	}
	if s.groupCommit != nil {
		return s.AwaitDurable(ctx, end)
	}
	if s.cfg.FlushMode == FlushAsyncPool {
		if _, err := s.clog.Commit(0); err != nil {
			return durableError(err)
		}
	}
	if _, err := s.clog.Flush(0); err != nil {
		return durableError(err)
	}
	if f := s.clog.FlushedPosition(); f < end {
		return durableError(fmt.Errorf("commit log durable up to %d after a flush, not %d", f, end))
	}
	return nil
}

func durableError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flush.ErrFlushTimeout):
		return fmt.Errorf("partition: %w: %w", kerr.RequestTimedOut, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("partition: %w: %w", kerr.KafkaStorageError, err)
}

// Partition returns partition index of topic id, or nil.
func (s *Store) Partition(id TopicID, index int32) *Partition {
	ps := (*s.topics.Load())[id]
	if index < 0 || int(index) >= len(ps) {
		return nil
	}
	return ps[index]
}

// Partitions returns every partition of topic id.
func (s *Store) Partitions(id TopicID) []*Partition { return (*s.topics.Load())[id] }

// AddTopic makes the store serve t's partitions; for an existing topic it
// adds the partitions it lacks (CreatePartitions).
func (s *Store) AddTopic(t TopicSpec) error {
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	old := *s.topics.Load()
	if int32(len(old[t.ID])) >= t.Partitions {
		return nil // a config change: the partitions are all there
	}
	ps := append([]*Partition(nil), old[t.ID]...)
	for i := int32(len(ps)); i < t.Partitions; i++ {
		p, err := s.newPartition(t, i, false)
		if err == nil {
			// A new partition has no queue files: opening costs one failed
			// directory read, and settles first offsets now.
			_, err = p.queue()
		}
		if err != nil {
			return err
		}
		p.logEnd.Store(0)
		ps = append(ps, p)
	}
	next := make(map[TopicID][]*Partition, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[t.ID] = ps
	s.topics.Store(&next)
	return nil
}

// DeleteTopic stops serving topic id and removes its consume queues. Its
// commit-log entries stay until retention deletes their files; they no
// longer pin them.
func (s *Store) DeleteTopic(id TopicID) error {
	s.topicsMu.Lock()
	old := *s.topics.Load()
	ps, ok := old[id]
	if !ok {
		s.topicsMu.Unlock()
		return fmt.Errorf("partition: delete topic: %w", kerr.UnknownTopicOrPartition)
	}
	next := make(map[TopicID][]*Partition, len(old))
	for k, v := range old {
		if k != id {
			next[k] = v
		}
	}
	s.topics.Store(&next)
	s.topicsMu.Unlock()
	var errs []error
	for _, p := range ps {
		p.mu.Lock()
		p.deleted.Store(true)
		p.mu.Unlock()
		p.setHighWatermark(1<<63 - 1) // wake parked fetches; they see the deletion
		if err := p.destroyQueue(); err != nil {
			errs = append(errs, err)
		}
		// A pass in progress sees deleted and stops; wait for it before
		// removing its directory.
		p.cleanMu.Lock()
		if v := p.clean.Load(); v != nil && v.file != nil {
			v.file.Close()
		}
		if err := os.RemoveAll(p.cleanDir); err != nil {
			errs = append(errs, err)
		}
		p.cleanMu.Unlock()
	}
	if len(ps) > 0 {
		if err := os.RemoveAll(filepath.Dir(ps[0].cleanDir)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(ps) > 0 {
		if err := os.RemoveAll(filepath.Dir(ps[0].dir)); err != nil {
			errs = append(errs, err)
		}
	}
	// No checkpoint here: recovery takes partitions from the topics it is
	// given, so the deleted topic's entry in the last checkpoint is
	// ignored until the next one drops it. Checkpointing every partition
	// per deleted topic made deleting 2,000 topics of 10,000 partitions
	// take minutes.
	return errors.Join(errs...)
}

// CommitLog exposes the commit log (for fetch ranges and diagnostics).
func (s *Store) CommitLog() *klog.CommitLog { return s.clog }

// Report is what recovery found at Open.
func (s *Store) Report() RecoveryReport { return s.report }

// FlushMode is the store's durability mode.
func (s *Store) FlushMode() FlushMode { return s.cfg.FlushMode }

// allPartitions lists every partition in a stable order.
func (s *Store) allPartitions() []*Partition {
	m := *s.topics.Load()
	var out []*Partition
	for _, ps := range m {
		out = append(out, ps...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].id != out[j].id {
			return string(out[i].id[:]) < string(out[j].id[:])
		}
		return out[i].index < out[j].index
	})
	return out
}

// background runs the periodic checkpoint and retention.
func (s *Store) background() {
	defer s.wg.Done()
	cpTick := time.NewTicker(s.cfg.CheckpointInterval)
	defer cpTick.Stop()
	retTick := time.NewTicker(s.cfg.RetentionCheckInterval)
	defer retTick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-cpTick.C:
			if err := s.Checkpoint(); err != nil {
				s.lg.Error("partition checkpoint failed", zap.Error(err))
			}
		case <-retTick.C:
			if _, err := s.EnforceRetention(context.Background()); err != nil {
				s.lg.Warn("retention failed", zap.Error(err))
			}
		}
	}
}

// StopDecompressions makes the produce validations in progress and to
// come give up a decompression of more than 1 MiB, with the retriable
// NOT_LEADER_OR_FOLLOWER (batch.ValidateOptions.Stop): the broker calls it
// when it begins to shut down, so that requests waiting their turn for
// the slot of large decompressions (decompression bombs, typically) do
// not hold the stop for seconds each. Small batches still validate.
func (s *Store) StopDecompressions() {
	s.stoppingOnce.Do(func() { close(s.stopping) })
}

// Close stops the flush services, checkpoints every partition and closes
// the commit log cleanly, so the next Open needs no replay.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.StopDecompressions()
	close(s.stop)
	if s.cleanerCancel != nil {
		s.cleanerCancel()
	}
	s.wg.Wait()
	var errs []error
	if s.committer != nil {
		errs = append(errs, s.committer.Close())
	}
	if s.flusher != nil {
		errs = append(errs, s.flusher.Close())
	}
	if s.groupCommit != nil {
		errs = append(errs, s.groupCommit.Close())
	}
	errs = append(errs, s.Checkpoint())
	errs = append(errs, s.clog.Close())
	s.closePartitions()
	return errors.Join(errs...)
}

// Abandon stops the store as a killed process stops: the flush services
// end without their final round, no partition is checkpointed, and the
// commit log keeps its abort marker, so the next Open runs crash
// recovery. What was written to the mappings stays in the page cache, as
// after a process crash; what only the store pool held is lost. It is for
// crash-like restarts of a test broker.
func (s *Store) Abandon() {
	if s.closed.Swap(true) {
		return
	}
	s.StopDecompressions()
	close(s.stop)
	s.wg.Wait()
	if s.committer != nil {
		s.committer.Abandon()
	}
	if s.flusher != nil {
		s.flusher.Abandon()
	}
	if s.groupCommit != nil {
		s.groupCommit.Abandon()
	}
	s.clog.Abandon()
	s.closePartitions()
}

func (s *Store) closePartitions() {
	for _, p := range s.allPartitions() {
		p.closeQueue()
		if v := p.clean.Load(); v != nil && v.file != nil {
			v.file.Close()
		}
	}
}
