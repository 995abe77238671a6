package flush

import (
	"time"

	"go.uber.org/zap"
)

// Option supplies a dependency to one of the services (STYLE.md §7: settings
// live in the Config structs, dependencies come in as options). Every option is
// accepted by every constructor; a service ignores the ones it has no use for,
// as noted on each option.
type Option func(*options)

// options collects the dependencies set by Option values.
type options struct {
	logger      *zap.Logger
	onFlushed   func(flushed int64)
	onCommitted func(committed int64)
	flusher     Waker
	onRound     func(served int, took time.Duration)
}

// newOptions applies opts over the defaults. The result is fresh on every call:
// there are no package-level defaults to mutate.
func newOptions(opts []Option) options {
	o := options{logger: zap.NewNop()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = zap.NewNop()
	}
	return o
}

// WithLogger sets the logger; the default discards everything. Services log
// flush and commit failures (once, at Error: the disk needs an operator) and
// slow operations (Warn).
func WithLogger(lg *zap.Logger) Option {
	return func(o *options) { o.logger = lg }
}

// WithOnFlushed registers fn to be called with the new flushed position after
// every flush that advanced it. Used by GroupCommitService and
// FlushRealTimeService. In sync mode the partition layer moves high watermarks
// and wakes parked fetches from it. Calls come from one service goroutine (or
// from Close) with strictly increasing positions, with no lock of this package
// held; GroupCommitService calls it before completing the waiters that the
// flush covered, so a producer never gets an acknowledgement before consumers
// can see its data. fn must not block for long: it delays the next flush.
func WithOnFlushed(fn func(flushed int64)) Option {
	return func(o *options) { o.onFlushed = fn }
}

// WithOnCommitted registers fn to be called with the new committed position
// after every commit that advanced it. Used by CommitRealTimeService: in pool
// mode data becomes readable when it is committed to the file, so this is where
// the partition layer makes it visible. The calling rules of WithOnFlushed
// apply.
func WithOnCommitted(fn func(committed int64)) Option {
	return func(o *options) { o.onCommitted = fn }
}

// WithFlusher sets the service that CommitRealTimeService wakes after a commit
// that moved data, so committed bytes reach the disk without waiting for the
// flusher's next interval: a *FlushRealTimeService in async mode, the
// *GroupCommitService in sync mode (whose waiters cannot be satisfied before
// their bytes are committed). Ignored by the other services.
func WithFlusher(w Waker) Option {
	return func(o *options) { o.flusher = w }
}

// WithOnRound registers fn to be called after every flush that made bytes
// durable, with how long the flush took and, for GroupCommitService, how
// many waiting requests it completed (0 for FlushRealTimeService, which has
// no waiters). The broker's metrics (group-commit batch sizes, flush
// latency) come from it. It is called on the service goroutine with no lock
// held and must not block.
func WithOnRound(fn func(served int, took time.Duration)) Option {
	return func(o *options) { o.onRound = fn }
}
