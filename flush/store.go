package flush

// Store is the part of the commit log that the flush services drive. The real
// implementation is *log.CommitLog; flush/ depends only on this interface so it
// stays free of storage details and can be tested against a fake.
//
// Positions are global commit-log byte offsets (RocketMQ's flushedWhere and
// committedWhere), monotone for the life of a store.
type Store interface {
	// Flush makes written bytes durable (msync/fdatasync) when at least
	// leastPages 4 KiB pages are dirty (0: any unflushed byte). It returns the
	// flushed position afterwards. A flush error is sticky inside the store:
	// once Flush has failed, every later call fails with the same error.
	Flush(leastPages int) (flushed int64, err error)
	// Commit copies bytes held in transient-pool buffers into the file when at
	// least leastPages pages are pending (0: any). Without a pool it returns the
	// written position and nil.
	Commit(leastPages int) (committed int64, err error)
	// FlushedPosition is the global commit-log position below which every byte
	// is durable. It must be cheap and safe to call from any goroutine (an
	// atomic load): Await calls it on every request for its fast path.
	FlushedPosition() int64
}

// Waker is a service that can be asked to do its work now instead of at its
// next interval. *FlushRealTimeService and *GroupCommitService implement it, so
// the commit service of pool mode can wake whichever flusher the broker runs
// (RocketMQ's FlushManager.wakeUpFlush does the same).
type Waker interface {
	// Wake asks the service to run a round soon. It never blocks.
	Wake()
}
