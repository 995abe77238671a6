package flush

import (
	"time"

	"go.uber.org/zap"
)

// RocketMQ defaults of FlushRealTimeService (MessageStoreConfig).
const (
	defaultFlushInterval         = 500 * time.Millisecond // flushIntervalCommitLog
	defaultFlushLeastPages       = 4                      // flushCommitLogLeastPages
	defaultFlushThoroughInterval = 10 * time.Second       // flushCommitLogThoroughInterval
)

// FlushRealTimeConfig holds the settings of a FlushRealTimeService. Zero
// fields take RocketMQ's defaults.
type FlushRealTimeConfig struct {
	// Interval is the time between flush rounds (flushIntervalCommitLog,
	// default 500 ms). It bounds what a crash can lose when at least
	// LeastPages pages are written per interval.
	Interval time.Duration
	// LeastPages is how many 4 KiB pages must be dirty for a regular round
	// to flush (flushCommitLogLeastPages, default 4): small flushes cost
	// nearly as much as large ones. Zero or negative selects 4; to flush
	// any dirty byte every round, set ThoroughInterval to Interval.
	LeastPages int
	// ThoroughInterval is how often a round flushes regardless of
	// LeastPages (flushCommitLogThoroughInterval, default 10 s), which
	// bounds the loss of a trickle of small writes.
	ThoroughInterval time.Duration
}

// withDefaults returns c with RocketMQ's default in every zero field.
func (c FlushRealTimeConfig) withDefaults() FlushRealTimeConfig {
	if c.Interval <= 0 {
		c.Interval = defaultFlushInterval
	}
	if c.LeastPages <= 0 {
		c.LeastPages = defaultFlushLeastPages
	}
	if c.ThoroughInterval <= 0 {
		c.ThoroughInterval = defaultFlushThoroughInterval
	}
	return c
}

// FlushRealTimeService is the async flush mode (RocketMQ
// FlushRealTimeService): producers are answered once their data is in the
// page cache, and this service makes it durable in the background, every
// Interval when at least LeastPages pages are dirty and every
// ThoroughInterval regardless. A crash of the machine (not of the process:
// the page cache survives that) loses what was not yet flushed.
type FlushRealTimeService struct {
	p periodic
}

// NewFlushRealTimeService returns a service that flushes store periodically.
// It honours WithLogger and WithOnFlushed.
func NewFlushRealTimeService(store Store, cfg FlushRealTimeConfig, opts ...Option) *FlushRealTimeService {
	cfg = cfg.withDefaults()
	o := newOptions(opts)
	s := &FlushRealTimeService{}
	s.p = periodic{
		kind:             "flush",
		op:               timedFlush(store, o.onRound),
		interval:         cfg.Interval,
		leastPages:       cfg.LeastPages,
		thoroughInterval: cfg.ThoroughInterval,
		onAdvance:        o.onFlushed,
		lg:               o.logger.With(zap.String("service", "flush-real-time")),
		wake:             make(chan struct{}, 1),
		quit:             make(chan struct{}),
		// Only advances past what was durable at construction are news.
		last: store.FlushedPosition(),
	}
	return s
}

// Start launches the flusher goroutine. Calls after the first, or after
// Close, do nothing.
func (s *FlushRealTimeService) Start() { s.p.start("flush-real-time") }

// Wake asks for a flush round now rather than at the next interval; the round
// still honours LeastPages unless a thorough flush is due. The commit service
// calls it after moving data, and the append path may call it on every put
// (RocketMQ wakeFlushWhenPutMessage, default off). It never blocks and does
// nothing after Close.
func (s *FlushRealTimeService) Wake() { s.p.wakeup() }

// Close stops the flusher and flushes everything with up to 10 attempts
// (RocketMQ's shutdown), returning the last attempt's error, or ErrClosed if
// the service was already closed. In pool mode close the
// CommitRealTimeService first, so that its final commit is flushed here.
func (s *FlushRealTimeService) Close() error { return s.p.close() }

// Abandon stops the service without the final flush, as in a crash (for
// a crash-like restart of a test broker). ErrClosed if already closed.
func (s *FlushRealTimeService) Abandon() error { return s.p.stop(false) }

// timedFlush is store.Flush, reporting each flush that advanced the durable
// position to onRound (WithOnRound) with its duration. Calls that found
// too few dirty pages to flush are not reported: they did no I/O.
func timedFlush(store Store, onRound func(int, time.Duration)) func(int) (int64, error) {
	if onRound == nil {
		return store.Flush
	}
	// Only the service goroutine (or Close, after it) calls op.
	last := store.FlushedPosition()
	return func(leastPages int) (int64, error) {
		start := time.Now()
		pos, err := store.Flush(leastPages)
		if pos > last {
			last = pos
			onRound(0, time.Since(start))
		}
		return pos, err
	}
}
