package flush

import (
	"time"

	"go.uber.org/zap"
)

// RocketMQ defaults of CommitRealTimeService (MessageStoreConfig).
const (
	defaultCommitInterval         = 200 * time.Millisecond // commitIntervalCommitLog
	defaultCommitLeastPages       = 4                      // commitCommitLogLeastPages
	defaultCommitThoroughInterval = 200 * time.Millisecond // commitCommitLogThoroughInterval
)

// CommitRealTimeConfig holds the settings of a CommitRealTimeService. Zero
// fields take RocketMQ's defaults.
type CommitRealTimeConfig struct {
	// Interval is the time between commit rounds (commitIntervalCommitLog,
	// default 200 ms). Without wakeups it bounds how long appended data
	// stays invisible to readers.
	Interval time.Duration
	// LeastPages is how many 4 KiB pages must be pending for a regular
	// round to commit (commitCommitLogLeastPages, default 4). Zero or
	// negative selects 4.
	LeastPages int
	// ThoroughInterval is how long the service may go without moving data
	// before a round commits whatever is pending
	// (commitCommitLogThoroughInterval, default 200 ms).
	ThoroughInterval time.Duration
}

// withDefaults returns c with RocketMQ's default in every zero field.
func (c CommitRealTimeConfig) withDefaults() CommitRealTimeConfig {
	if c.Interval <= 0 {
		c.Interval = defaultCommitInterval
	}
	if c.LeastPages <= 0 {
		c.LeastPages = defaultCommitLeastPages
	}
	if c.ThoroughInterval <= 0 {
		c.ThoroughInterval = defaultCommitThoroughInterval
	}
	return c
}

// CommitRealTimeService drives transient-store-pool mode (RocketMQ
// CommitRealTimeService): appends land in pooled process memory, and this
// service copies them into the commit-log files, after which the flusher set
// with WithFlusher is woken to make them durable. Readers see only committed
// data, so WithOnCommitted is where the partition layer makes data visible.
// A process crash loses what was not yet committed.
type CommitRealTimeService struct {
	p periodic
}

// NewCommitRealTimeService returns a service that commits store's pool
// buffers periodically. It honours WithLogger, WithOnCommitted and
// WithFlusher.
func NewCommitRealTimeService(store Store, cfg CommitRealTimeConfig, opts ...Option) *CommitRealTimeService {
	cfg = cfg.withDefaults()
	o := newOptions(opts)
	s := &CommitRealTimeService{}
	s.p = periodic{
		kind:                  "commit",
		op:                    store.Commit,
		interval:              cfg.Interval,
		leastPages:            cfg.LeastPages,
		thoroughInterval:      cfg.ThoroughInterval,
		thoroughAfterProgress: true,
		onAdvance:             o.onCommitted,
		lg:                    o.logger.With(zap.String("service", "commit-real-time")),
		wake:                  make(chan struct{}, 1),
		quit:                  make(chan struct{}),
	}
	if o.flusher != nil {
		s.p.afterProgress = o.flusher.Wake
	}
	return s
}

// Start launches the commit goroutine. Calls after the first, or after
// Close, do nothing.
func (s *CommitRealTimeService) Start() { s.p.start("commit-real-time") }

// Wake asks for a commit round now rather than at the next interval; the
// round still honours LeastPages unless a thorough commit is due. The append
// path calls it on every put when wakeCommitWhenPutMessage is set (RocketMQ's
// default: true). It never blocks and does nothing after Close.
func (s *CommitRealTimeService) Wake() { s.p.wakeup() }

// Close stops the service and commits everything with up to 10 attempts,
// returning the last attempt's error, or ErrClosed if the service was
// already closed. Close it before the flusher, so the flusher's final flush
// covers this final commit.
func (s *CommitRealTimeService) Close() error { return s.p.close() }

// Abandon stops the service without the final commit: what is still in
// the pool buffers is not written to the files, as in a crash (for a
// crash-like restart of a test broker). ErrClosed if already closed.
func (s *CommitRealTimeService) Abandon() error { return s.p.stop(false) }
