// Package flush decides when appended commit-log bytes become durable (and, in
// pool mode, visible). It holds RocketMQ's three flush services and drives the
// commit log only through the small Store interface.
//
// # Services and modes
//
//	mode          services                                   a produce is answered when
//	sync          GroupCommitService                         a flush covered its entry
//	async         FlushRealTimeService                       its entry is in the page cache
//	async + pool  CommitRealTimeService → FlushRealTimeService its entry is in a pool buffer
//
// GroupCommitService (sync, RocketMQ GroupCommitService): producers append,
// then Await or Submit the position just past their entry. A flush costs a
// device cache flush and a journal commit no matter how few bytes it carries,
// so one flusher goroutine serves all waiters: while one Flush runs, new
// requests collect in a write list, and the next round flushes once for all of
// them. Under load the cost of an fsync is shared by every producer that
// arrived during the previous one (STORAGE-REFERENCE.md §1.6, §4.3). A
// watcher goroutine answers ErrFlushTimeout after GroupCommitConfig.Timeout
// (5 s) even while a Flush is stuck in the kernel. Nothing acknowledged can be
// lost, not even to a power failure.
//
// FlushRealTimeService (async, RocketMQ FlushRealTimeService): flushes every
// 500 ms when at least 4 pages are dirty and every 10 s regardless. A process
// crash loses nothing (the page cache survives it); a machine crash or power
// loss loses up to about 500 ms of writes, or up to 10 s of a trickle below 4
// pages per interval.
//
// CommitRealTimeService (transient store pool, RocketMQ
// CommitRealTimeService): appends go to pooled, locked process memory, and
// this service copies them into the files every 200 ms, then wakes the
// flusher. Readers see only committed bytes, so its hook, not the flusher's,
// moves high watermarks. A process crash loses what was not yet committed,
// which is why pool mode is a choice and not the default. Pool mode combines
// with either flusher: in sync mode WithFlusher wakes the GroupCommitService,
// whose waiters stay pending until a commit lets a flush cover them.
//
// # Lifecycle
//
// Each service is created with New…, started with Start and stopped with
// Close, which runs a final flush or commit and waits for the service's
// goroutines. Close the commit service before the flusher, so that the final
// flush covers the final commit.
//
// # Locks and callbacks
//
// Each service has one mutex (GroupCommitService.mu, periodic.mu) and it is a
// leaf: it is never held while calling the Store, a hook (WithOnFlushed,
// WithOnCommitted), another service's Wake, a Submit callback or the logger,
// and nothing is called under it. The order is therefore:
//
//	partition.mu → GroupCommitService.mu
//	service goroutine (no lock of this package) → Store's locks
//	service goroutine (no lock of this package) → hooks → partition.mu
//
// Submit may be called with partition locks held, since it only takes the
// service's mutex briefly and calls done from a service goroutine. Await
// blocks and must not be called with locks held. Hooks run on the service
// goroutine between rounds; a slow hook delays the next flush.
//
// # Errors
//
// A failed flush is sticky in the Store. GroupCommitService completes every
// current waiter with the wrapped error, and every later round gets the same
// error back from the Store at once; rounds run only when requests arrive, so
// a broken disk costs no CPU while idle. All services log a failure once at
// Error, not once per round.
package flush
