package txn

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/coordlog"
	"github.com/kbroker/kbroker/partition"
)

// Config holds the transaction coordinator's settings; zero fields take
// the defaults of DefaultConfig. The kafka tags name Kafka's broker
// properties (TransactionStateManagerConfig).
type Config struct {
	// Dir is the metadata directory that holds the snapshot
	// (transactions.snapshot).
	Dir string
	// MaxTimeout is the largest transaction timeout a producer may ask
	// for (INVALID_TRANSACTION_TIMEOUT above). Default 15 minutes.
	MaxTimeout time.Duration `kafka:"transaction.max.timeout.ms"`
	// AbortCheckInterval is how often transactions open longer than
	// their timeout are looked for and aborted. Default 10 s.
	AbortCheckInterval time.Duration `kafka:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`
	// IDExpiration is how long a transactional id may stay without a
	// transition, with no transaction open, before it is removed.
	// Default 7 days.
	IDExpiration time.Duration `kafka:"transactional.id.expiration.ms"`
	// ExpirationCheckInterval is how often expired transactional ids are
	// looked for. Default 1 hour.
	ExpirationCheckInterval time.Duration `kafka:"transaction.remove.expired.transaction.cleanup.interval.ms"`
	// SnapshotInterval is how often the state is snapshotted (when it
	// changed). Default 1 minute.
	SnapshotInterval time.Duration `kafka:"kbroker.transaction.snapshot.interval.ms"`
	// Now returns the current time for the records' timestamps, timeouts
	// and expiry. Default time.Now (which testing/synctest fakes).
	Now func() time.Time
}

// DefaultConfig returns Kafka's defaults (and a one-minute snapshot
// interval, the offsets store's).
func DefaultConfig() Config {
	return Config{
		MaxTimeout:              15 * time.Minute,
		AbortCheckInterval:      10 * time.Second,
		IDExpiration:            7 * 24 * time.Hour,
		ExpirationCheckInterval: time.Hour,
		SnapshotInterval:        time.Minute,
		Now:                     time.Now,
	}
}

func (c *Config) withDefaults() {
	d := DefaultConfig()
	for _, f := range []struct{ v, def *time.Duration }{
		{&c.MaxTimeout, &d.MaxTimeout}, {&c.AbortCheckInterval, &d.AbortCheckInterval},
		{&c.IDExpiration, &d.IDExpiration}, {&c.ExpirationCheckInterval, &d.ExpirationCheckInterval},
		{&c.SnapshotInterval, &d.SnapshotInterval},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if c.Now == nil {
		c.Now = d.Now
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("txn: no metadata directory"))
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"transaction.max.timeout.ms", c.MaxTimeout},
		{"transaction.abort.timed.out.transaction.cleanup.interval.ms", c.AbortCheckInterval},
		{"transactional.id.expiration.ms", c.IDExpiration},
		{"transaction.remove.expired.transaction.cleanup.interval.ms", c.ExpirationCheckInterval},
		{"kbroker.transaction.snapshot.interval.ms", c.SnapshotInterval},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("txn: %s %v is negative", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// Deps are what the coordinator needs from the broker.
type Deps struct {
	// NextProducerID allocates a fresh producer id. An error that wraps
	// a *kerr.Error is answered with that code; any other with
	// COORDINATOR_NOT_AVAILABLE (retriable), as Kafka answers when its
	// producer id block is not available. It may do I/O; it is never
	// called with a lock of the coordinator held.
	NextProducerID func() (int64, error)
	// WriteMarkers writes the end-transaction markers (commit or abort)
	// of producerID/epoch into every partition, durably, then calls done
	// once, with nil or an error (done may run before WriteMarkers
	// returns, or on another goroutine). It also completes the
	// transactional offset commits of the __consumer_offsets partitions.
	// A partition that no longer exists counts as written (Kafka drops
	// partitions without a leader from the markers to send). After an
	// error every partition is written again, after a backoff, until it
	// succeeds, unless the error is a *MarkerError naming the partitions
	// still to write; a marker written twice is harmless (Kafka resends
	// markers after a coordinator failover too). It must not wait for
	// durability (done does) nor call the Coordinator's methods; it is
	// never called with a lock of the coordinator held.
	// transactionVersion is 2 for a transaction of transactions v2
	// (whose markers carry the bumped epoch, which the partitions check
	// is above the data's, as Kafka's markers of WriteTxnMarkers v2 do),
	// 0 otherwise.
	WriteMarkers func(producerID int64, epoch int16, commit bool, transactionVersion int8, partitions []TopicPartition, done func(error))
	// GroupPartition is the __consumer_offsets partition of a group
	// (AddOffsetsToTxn adds it to the transaction).
	GroupPartition func(group string) TopicPartition
	// V2 reports whether the finalized transaction.version is 2 or more
	// (transactions v2, KIP-890 part 2). The coordinator's own aborts
	// (a transaction timeout, the fence of InitProducerId) then rotate
	// the producer id when the fence exhausts the epochs, as Kafka's do
	// (they follow the broker's level, not the client's). Nil is never.
	// Called with Coordinator.mu held: it must only read.
	V2 func() bool
}

// v2 reports whether the broker runs transactions v2 (Deps.V2).
func (c *Coordinator) v2() bool { return c.deps.V2 != nil && c.deps.V2() }

// MarkerError is an error of Deps.WriteMarkers that names the partitions
// whose markers are still to be written; only they are retried.
type MarkerError struct {
	Remaining []TopicPartition
	Err       error
}

// Error says how many partitions are left.
func (e *MarkerError) Error() string {
	return fmt.Sprintf("txn: markers of %d partitions not written: %v", len(e.Remaining), e.Err)
}

// Unwrap returns the cause.
func (e *MarkerError) Unwrap() error { return e.Err }

// Coordinator is the transaction coordinator: the state of every
// transactional id, backed by the partitions of __transaction_state. See
// the package comment.
type Coordinator struct {
	cfg  Config
	deps Deps
	lg   *zap.Logger
	// log writes, applies, snapshots and replays the records.
	log *coordlog.Log[rec]

	mu struct {
		sync.Mutex
		closed bool
		txns   map[string]*txnMeta
		// parked are the requests waiting for an answer (a write to be
		// durable), which Close answers with NOT_COORDINATOR.
		parked map[*parked]struct{}
		// timers are the pending retries, stopped by Close.
		timers map[*time.Timer]struct{}
		// waiting are the transactions v2 adds parked per transactional
		// id until it is no longer busy (AddPartitionsV2).
		waiting map[string][]*adder
		// noParking is set by StopParking: busy ids are answered at once.
		noParking bool
	}

	// stop ends the background loop; wg counts it and the timer
	// callbacks and recovery in progress.
	stop chan struct{}
	wg   sync.WaitGroup
}

// parked is a request that waits for an answer; fail answers it at Close.
type parked struct{ fail func(error) }

// snapshotFile is the snapshot's name in Config.Dir; snapshotMagic starts
// it (coordlog's format).
const (
	snapshotFile  = "transactions.snapshot"
	snapshotMagic = "KBTXNS01"
)

// Open loads the transactions from the snapshot in cfg.Dir and the
// records of parts (the partitions of __transaction_state, in index
// order) that follow it, then starts the timeout, expiry and snapshot
// loops. Transactions found in PrepareCommit or PrepareAbort get their
// markers written and are completed, in the background; Ongoing ones stay
// open until they end or time out (their start time is in the record, so
// one that timed out while the broker was down is aborted at the first
// check). Loading is over when Open returns: the coordinator never
// answers COORDINATOR_LOAD_IN_PROGRESS (Kafka does while it loads a
// partition it became leader of), so the broker should call Open before
// it listens.
func Open(cfg Config, ps *partition.Store, parts []*partition.Partition, deps Deps, lg *zap.Logger) (*Coordinator, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.NextProducerID == nil || deps.WriteMarkers == nil || deps.GroupPartition == nil {
		return nil, errors.New("txn: Deps needs NextProducerID, WriteMarkers and GroupPartition")
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	c := &Coordinator{cfg: cfg, deps: deps, lg: lg, stop: make(chan struct{})}
	c.mu.txns = map[string]*txnMeta{}
	c.mu.parked = map[*parked]struct{}{}
	c.mu.timers = map[*time.Timer]struct{}{}
	c.mu.waiting = map[string][]*adder{}

	start := time.Now()
	l, ld, err := coordlog.Open(coordlog.Config{
		Name: "txn", SnapshotPath: filepath.Join(cfg.Dir, snapshotFile), Magic: snapshotMagic, Logger: lg, Now: cfg.Now,
	}, ps, parts, (*state)(c))
	if err != nil {
		return nil, err
	}
	c.log = l

	// Complete what a crash or stop interrupted (Kafka's
	// loadTransactionsForTxnTopicPartition): PrepareCommit and
	// PrepareAbort are durable decisions whose markers may be missing.
	now := cfg.Now().UnixMilli()
	var todo []completion
	for _, t := range c.mu.txns {
		if t.state == PrepareCommit || t.state == PrepareAbort {
			todo = append(todo, c.prepareCompleteLocked(t, now))
		}
	}
	lg.Info("transactions loaded", zap.Int("transactional_ids", len(c.mu.txns)), zap.Int("completing", len(todo)),
		zap.Bool("snapshot", ld.Snapshot), zap.Int("replayed", ld.Replayed), zap.Duration("took", time.Since(start)))
	c.wg.Add(2)
	go pprof.Do(context.Background(), pprof.Labels("txn", "background"), func(context.Context) { c.background() })
	go pprof.Do(context.Background(), pprof.Labels("txn", "recovery"), func(context.Context) {
		// From a goroutine, so that Open does not wait for
		// WriteMarkers, which may append to many partitions.
		defer c.wg.Done()
		for _, cp := range todo {
			c.sendMarkers(cp, 0)
		}
	})
	return c, nil
}

// Close stops the coordinator: the loops and retries stop, requests
// waiting for a write are answered NOT_COORDINATOR (the client looks for
// the coordinator again), later calls get COORDINATOR_NOT_AVAILABLE, and a
// last snapshot is written. Transactions whose markers are not all
// written stay in PrepareCommit or PrepareAbort in the log and are
// completed by the next Open. Close it before the partition store, and
// not from a done callback.
func (c *Coordinator) Close() error { return c.close(true) }

// Abandon stops the coordinator without the snapshot Close writes, as a
// crash would; the next open replays the transactions from the commit
// log.
func (c *Coordinator) Abandon() { c.close(false) }

// close is Close, with or without its last snapshot (a test drops the
// coordinator without it, as a crash would).
func (c *Coordinator) close(snapshot bool) error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	waiting := make([]*parked, 0, len(c.mu.parked))
	for p := range c.mu.parked {
		waiting = append(waiting, p)
	}
	clear(c.mu.parked)
	for t := range c.mu.timers {
		t.Stop()
	}
	clear(c.mu.timers)
	clear(c.mu.waiting) // parked: answered below
	c.mu.Unlock()
	c.log.Close()
	close(c.stop)
	c.wg.Wait()
	for _, p := range waiting {
		p.fail(fmt.Errorf("txn: coordinator closed: %w", kerr.NotCoordinator))
	}
	if !snapshot {
		return nil
	}
	return c.log.Snapshot()
}

// Snapshot writes the state to metadata/transactions.snapshot and moves
// the log start of the __transaction_state partitions up to what it
// covers (coordlog.Log.Snapshot). The background loop calls it every
// SnapshotInterval, and Close once more.
func (c *Coordinator) Snapshot() error { return c.log.Snapshot() }

// background runs the timeout, expiry and snapshot loops.
func (c *Coordinator) background() {
	defer c.wg.Done()
	abort := time.NewTicker(c.cfg.AbortCheckInterval)
	defer abort.Stop()
	expire := time.NewTicker(c.cfg.ExpirationCheckInterval)
	defer expire.Stop()
	snap := time.NewTicker(c.cfg.SnapshotInterval)
	defer snap.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-abort.C:
			c.abortTimedOut()
		case <-expire.C:
			c.expireIDs()
		case <-snap.C:
			if err := c.Snapshot(); err != nil {
				c.lg.Warn("txn snapshot", zap.Error(err))
			}
		}
	}
}

// accept starts a client request of txnID that may be answered later
// (AddPartitions, AddOffsets, EndTxn): an empty id is INVALID_REQUEST and a
// closed coordinator COORDINATOR_NOT_AVAILABLE, answered at once (ok
// false); otherwise the request is parked, and answer gives its answer
// unless Close already did.
func (c *Coordinator) accept(txnID string, done func(error)) (answer func(error), ok bool) {
	if txnID == "" {
		done(codeError(kerr.InvalidRequest, txnID, "empty transactional id"))
		return nil, false
	}
	p := c.park(done)
	if p == nil {
		done(codeError(kerr.CoordinatorNotAvailable, txnID, "coordinator closed"))
		return nil, false
	}
	return func(err error) {
		if c.unpark(p) {
			done(err)
		}
	}, true
}

// park registers a request that will be answered later, or returns nil
// once the coordinator is closed.
func (c *Coordinator) park(fail func(error)) *parked {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil
	}
	p := &parked{fail: fail}
	c.mu.parked[p] = struct{}{}
	return p
}

// unpark reports whether p is still waiting (and now no longer is): its
// answer is the caller's to give. False means Close answered it.
func (c *Coordinator) unpark(p *parked) bool {
	if p == nil {
		return true // not a client request (a timeout's abort)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.parked[p]
	delete(c.mu.parked, p)
	return ok
}

// after runs f after d on a timer that Close stops; a callback that fires
// after Close does nothing, and Close waits for one in progress.
func (c *Coordinator) after(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.afterLocked(d, f)
}

// afterLocked is after with c.mu held; it returns the timer (nil after
// Close).
func (c *Coordinator) afterLocked(d time.Duration, f func()) *time.Timer {
	if c.mu.closed {
		return nil
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		// c.mu orders this read of t after its assignment.
		c.mu.Lock()
		_, live := c.mu.timers[t]
		delete(c.mu.timers, t)
		if !live || c.mu.closed {
			c.mu.Unlock()
			return
		}
		c.wg.Add(1)
		c.mu.Unlock()
		defer c.wg.Done()
		pprof.Do(context.Background(), pprof.Labels("txn", "retry"), func(context.Context) { f() })
	})
	c.mu.timers[t] = struct{}{}
	return t
}

// closed reports whether Close has begun.
func (c *Coordinator) closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.closed
}

// partitionOf is the __transaction_state partition of a transactional id.
func (c *Coordinator) partitionOf(id string) int {
	return coordlog.PartitionFor(id, c.log.Partitions())
}

// write appends recs (all of one partition) and applies them once
// durable; done hears nil or the error as a coordinator answers it
// (writeError).
func (c *Coordinator) write(part int, recs []rec, done func(error)) {
	c.log.Write(part, recs, func(err error) { done(writeError(err)) })
}

// writeError turns the error of a write to __transaction_state into what
// the coordinator answers, as TransactionStateManager.appendTransactionToLog
// does: a write that may succeed if retried is COORDINATOR_NOT_AVAILABLE, a
// broken log NOT_COORDINATOR (the client looks for the coordinator again),
// a record too large UNKNOWN_SERVER_ERROR. The cause is kept in the text
// only, so that the error carries exactly one Kafka code.
func writeError(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	code := kerr.UnknownServerError
	if errors.As(err, &ke) {
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			code = kerr.CoordinatorNotAvailable
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			code = kerr.NotCoordinator
		case kerr.MessageTooLarge, kerr.RecordListTooLarge:
			code = kerr.UnknownServerError
		default:
			return err
		}
	}
	return fmt.Errorf("txn: write to %s: %v: %w", topicName, err, code)
}

// topicName is the internal topic the coordinator writes.
const topicName = "__transaction_state"

// codeError returns an error with a Kafka code and the transactional id.
func codeError(code *kerr.Error, id, format string, args ...any) error {
	return fmt.Errorf("txn: %q: %s: %w", id, fmt.Sprintf(format, args...), code)
}
