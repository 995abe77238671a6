package flush

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// defaultSyncFlushTimeout is RocketMQ's syncFlushTimeout.
const defaultSyncFlushTimeout = 5 * time.Second

// slowThreshold is how long a flush or commit may take before it is logged at
// Warn; RocketMQ warns at the same 500 ms.
const slowThreshold = 500 * time.Millisecond

// GroupCommitConfig holds the settings of a GroupCommitService.
type GroupCommitConfig struct {
	// Timeout bounds how long a request waits for durability before it is
	// answered with ErrFlushTimeout (RocketMQ syncFlushTimeout). It is counted
	// from Await or Submit and holds even while a flush is stuck in the kernel.
	// Zero or negative selects 5 s.
	Timeout time.Duration
}

// withDefaults returns c with RocketMQ's default in every zero field.
func (c GroupCommitConfig) withDefaults() GroupCommitConfig {
	if c.Timeout <= 0 {
		c.Timeout = defaultSyncFlushTimeout
	}
	return c
}

// GroupCommitService is the sync flush mode (RocketMQ GroupCommitService):
// producers append, then wait until the commit log is durable past their entry.
// One flusher goroutine serves every waiter. While it flushes, new requests
// pile up in a write list under a small mutex; each round it swaps that list
// for its own read list, makes ONE Flush(0) call, and completes every request
// the flushed position covers. An fsync costs about the same for one producer
// as for sixty-four, so under load each one is shared by every producer that
// arrived while the previous one ran (STORAGE-REFERENCE.md §1.6, §4.3).
//
// A second goroutine, the watcher (RocketMQ FlushDiskWatcher, but woken by a
// timer instead of polling every 10 ms), answers ErrFlushTimeout at each
// request's deadline, so timeouts hold even while Flush is stuck.
//
// Start must be called before requests can complete; Close must be called to
// stop the goroutines.
type GroupCommitService struct {
	store     Store
	timeout   time.Duration
	lg        *zap.Logger
	onFlushed func(flushed int64)
	onRound   func(served int, took time.Duration)
	// reported is the position whose onFlushed call has returned: Await's
	// fast path trusts it rather than the store's flushed position, which
	// moves before the hook runs, so that no acknowledgement overtakes the
	// hook (the high watermark).
	reported atomic.Int64

	// pool recycles requests so that the steady-state path does not allocate.
	// It is per service, not package-level, so that requests (whose channels
	// belong to a synctest bubble in tests) never cross services.
	pool sync.Pool
	// cond wakes the flusher; its Locker is mu.
	cond sync.Cond
	// kick wakes the idle watcher when a deadline appears (capacity 1, so a
	// send never blocks and wakeups coalesce).
	kick chan struct{}
	// quit is closed by Close to stop the watcher.
	quit chan struct{}
	// flusherDone is closed when the flusher goroutine has exited.
	flusherDone chan struct{}
	// wg tracks the flusher and the watcher.
	wg sync.WaitGroup

	mu struct {
		sync.Mutex
		// write is where Await and Submit queue requests for the next round.
		write []*request
		// head and tail are the list of pending requests in deadline order.
		// The deadline is arrival time plus one fixed timeout, so arrival
		// order is deadline order and the watcher only looks at the head.
		// A request is pending exactly while it is on this list
		// (request.linked); whoever unlinks it completes it.
		head, tail *request
		// woken asks the flusher for a round even without new requests.
		woken bool
		// watcherIdle is set by the watcher when it found no deadline and
		// stopped its timer; the next enqueue clears it and sends on kick.
		watcherIdle bool
		// started and closed record Start and Close.
		started, closed bool
		// abandon is set by Abandon: the flusher exits without a final
		// round.
		abandon bool
		// gatherExpired ends the flusher's gathering window.
		gatherExpired bool
	}

	// The fields below belong to the flusher goroutine, or to Close when the
	// service was never started.

	// read holds the requests of the current round, plus pending ones that
	// the last flush did not cover (in pool mode the data may not have been
	// committed to the file yet); those stay until a later round covers them.
	read []*request
	// dropped holds requests that leave read this round, to be released
	// after the completions went out.
	dropped []*request
	// completions are the results to deliver after mu is released.
	completions []completion
	// lastFlushed is the position last reported to onFlushed.
	lastFlushed int64
	// errLogged records that a flush failure was logged, so a sticky error
	// is logged once rather than on every round.
	errLogged bool
	// finalErr is the error of the final flush, returned by Close.
	finalErr error
	// lastServed and lastFlushTook describe the last round, for the
	// gathering window (gatherLocked).
	lastServed    int
	lastFlushTook time.Duration
}

// request is one waiter. Requests are pooled; a request is referenced by the
// flusher's lists from enqueue until a round drops it, and by the Await caller
// until it has received its result. refs counts those references and the last
// one to let go returns the request to the pool. The watcher and the flusher
// never need a reference of their own to complete a request: they unlink it
// and copy out ch and done under mu.
type request struct {
	// pos is the position that must be durable; set before enqueue.
	pos int64
	// deadline is when the watcher answers ErrFlushTimeout; set under mu.
	deadline time.Time
	// ch receives the result of an Await (capacity 1, so delivery never
	// blocks). It is made once per pooled request.
	ch chan error
	// done is the callback of a Submit; nil for Await.
	done func(error)
	// refs is the number of holders; see the type comment.
	refs atomic.Int32

	// linked, prev and next place the request on the pending list; guarded
	// by GroupCommitService.mu.
	linked     bool
	prev, next *request
}

// completion is a result taken from a request under mu and delivered after
// mu is released, so that no callback and no channel send happens under it.
type completion struct {
	ch   chan error
	done func(error)
	err  error
}

// NewGroupCommitService returns a service that flushes store for waiters. It
// honours WithLogger and WithOnFlushed.
func NewGroupCommitService(store Store, cfg GroupCommitConfig, opts ...Option) *GroupCommitService {
	cfg = cfg.withDefaults()
	o := newOptions(opts)
	s := &GroupCommitService{
		store:     store,
		timeout:   cfg.Timeout,
		lg:        o.logger.With(zap.String("service", "group-commit")),
		onFlushed: o.onFlushed,
		onRound:   o.onRound,
		// Only advances past what was durable at construction are news.
		lastFlushed: store.FlushedPosition(),
		kick:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		flusherDone: make(chan struct{}),
	}
	s.reported.Store(s.lastFlushed)
	s.pool.New = func() any { return &request{ch: make(chan error, 1)} }
	s.cond.L = &s.mu.Mutex
	return s
}

// Start launches the flusher and the watcher. Calls after the first, or after
// Close, do nothing.
func (s *GroupCommitService) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started || s.mu.closed {
		return
	}
	s.mu.started = true
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		defer close(s.flusherDone)
		pprof.Do(context.Background(), pprof.Labels("service", "group-commit-flusher"), func(context.Context) {
			s.flushLoop()
		})
	}()
	go func() {
		defer s.wg.Done()
		pprof.Do(context.Background(), pprof.Labels("service", "group-commit-watcher"), func(context.Context) {
			s.watchLoop()
		})
	}()
}

// Await blocks until the store is durable up to pos, the position just past
// the caller's entry. It returns nil once FlushedPosition() >= pos (at once,
// without waking anything, if that already holds), ErrFlushTimeout when the
// configured timeout passes first, the store's flush error (wrapped) if a
// flush failed, ctx.Err() if ctx ends first, and ErrClosed after Close unless
// the final flush covered pos.
//
// Requests made before Start wait for it: the timeout is counted from the
// call but enforced only by the started service. Await must not be called
// with locks held that the OnFlushed hook takes.
func (s *GroupCommitService) Await(ctx context.Context, pos int64) error {
	if s.reported.Load() >= pos {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := s.pool.Get().(*request)
	r.pos = pos
	r.refs.Store(2) // the flusher's lists and this caller
	if err := s.enqueue(r); err != nil {
		s.recycle(r)
		return err
	}
	select {
	case err := <-r.ch:
		s.release(r)
		return err
	case <-ctx.Done():
		s.mu.Lock()
		pending := r.linked
		if pending {
			s.unlinkLocked(r)
		}
		s.mu.Unlock()
		if pending {
			// Abandoned: nobody will send on r.ch; the flusher drops
			// the request from its list and releases its reference.
			s.release(r)
			return ctx.Err()
		}
		// Completed concurrently: the result is on its way and says
		// more than ctx does (it may be a success).
		err := <-r.ch
		s.release(r)
		return err
	}
}

// Submit is the asynchronous form of Await, for a produce handler that
// returns a pending response: done is called exactly once with the result
// Await would have returned (without a context). done is called from the
// flusher or the watcher goroutine (or from Close, for requests queued before
// a Start that never came), never from Submit itself, so the caller may hold
// its own locks (e.g. the partition lock) around Submit. done must not block:
// it delays the flusher. The exception is Submit after Close:
// done(ErrClosed) is then called on the calling goroutine before Submit
// returns, since no service goroutine is left to call it.
//
// Submit has no fast path: even an already durable position is answered by
// the flusher (which then skips the flush), to keep done off the caller's
// goroutine.
func (s *GroupCommitService) Submit(pos int64, done func(error)) {
	r := s.pool.Get().(*request)
	r.pos = pos
	r.done = done
	r.refs.Store(1) // the flusher's lists
	if err := s.enqueue(r); err != nil {
		s.recycle(r)
		done(err)
	}
}

// Wake asks for a flush round even without waiters, for writes that nobody
// waits for (acks=0 in sync mode) and for the commit service of pool mode,
// whose commits are what lets pending waiters be covered. It never blocks.
func (s *GroupCommitService) Wake() {
	s.mu.Lock()
	s.mu.woken = true
	s.mu.Unlock()
	s.cond.Signal()
}

// Close stops accepting requests, runs a final flush round, completes every
// waiter (nil if the final flush covered it, else its error or ErrClosed) and
// waits for the service's goroutines. It returns the final flush's error, or
// ErrClosed if the service was already closed. Close blocks while a Flush
// call is stuck; the watcher keeps timing out waiters meanwhile.
func (s *GroupCommitService) Close() error { return s.stop(false) }

// Abandon stops the service without the final round: nothing is flushed
// that was not already, as in a crash (for a crash-like restart of a
// test broker), and waiters get ErrClosed. ErrClosed if already closed.
func (s *GroupCommitService) Abandon() error { return s.stop(true) }

func (s *GroupCommitService) stop(abandon bool) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.mu.closed = true
	s.mu.abandon = abandon
	started := s.mu.started
	s.mu.Unlock()
	s.cond.Broadcast()

	if started {
		// The flusher sees closed, runs the final round and exits; only
		// then is the watcher stopped, so that it can time out waiters
		// while the final flush is slow.
		<-s.flusherDone
		close(s.quit)
		s.wg.Wait()
	} else {
		s.mu.Lock()
		s.takeLocked()
		s.mu.Unlock()
		if abandon {
			s.finalErr = ErrClosed
		} else {
			s.finalErr = s.round(true)
		}
		s.finish()
	}
	if abandon {
		return nil
	}
	return s.finalErr
}

// enqueue queues r for the flusher and puts it on the pending list with its
// deadline. It fails with ErrClosed after Close.
func (s *GroupCommitService) enqueue(r *request) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	// Read the clock under mu: deadlines must be in list order for the
	// watcher, which only looks at the head.
	r.deadline = time.Now().Add(s.timeout)
	s.mu.write = append(s.mu.write, r)
	r.linked = true
	r.prev = s.mu.tail
	if s.mu.tail != nil {
		s.mu.tail.next = r
	} else {
		s.mu.head = r
	}
	s.mu.tail = r
	// An armed watcher timer fires no later than this deadline (deadlines
	// only grow), so only an idle watcher needs a kick; this keeps the
	// watcher out of the per-request path.
	kick := s.mu.watcherIdle
	s.mu.watcherIdle = false
	s.mu.Unlock()

	s.cond.Signal()
	if kick {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// unlinkLocked takes r off the pending list, which marks it completed.
func (s *GroupCommitService) unlinkLocked(r *request) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		s.mu.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		s.mu.tail = r.prev
	}
	r.prev, r.next, r.linked = nil, nil, false
}

// completeLocked unlinks the pending request r and appends its result to out.
// The completion copies ch and done, so delivering it never touches r, which
// may be recycled as soon as the other holders let go.
func (s *GroupCommitService) completeLocked(r *request, err error, out []completion) []completion {
	s.unlinkLocked(r)
	return append(out, completion{ch: r.ch, done: r.done, err: err})
}

// deliver hands out results, outside mu, and clears cs so that no callback
// stays reachable.
func deliver(cs []completion) {
	for i := range cs {
		if c := &cs[i]; c.done != nil {
			c.done(c.err)
		} else {
			c.ch <- c.err
		}
	}
	clear(cs)
}

// release drops one reference to r and recycles it after the last one.
func (s *GroupCommitService) release(r *request) {
	if r.refs.Add(-1) == 0 {
		s.recycle(r)
	}
}

// recycle returns r to the pool. r.ch is empty here: a result is sent only to
// a request whose caller still holds its reference and receives it.
func (s *GroupCommitService) recycle(r *request) {
	r.pos = 0
	r.deadline = time.Time{}
	r.done = nil
	s.pool.Put(r)
}

// flushLoop is the flusher goroutine: wait for requests, Wake or Close, then
// run a round. The round after Close is the final one.
func (s *GroupCommitService) flushLoop() {
	for {
		s.mu.Lock()
		for len(s.mu.write) == 0 && !s.mu.woken && !s.mu.closed {
			s.cond.Wait()
		}
		s.gatherLocked()
		final, abandon := s.mu.closed, s.mu.abandon
		forced := s.takeLocked()
		s.mu.Unlock()

		if final && abandon {
			s.finalErr = ErrClosed
			s.finish()
			return
		}
		err := s.round(forced)
		if final {
			s.finalErr = err
			s.finish()
			return
		}
	}
}

// gatherLocked briefly holds the next flush back until as many requests
// have queued as the last round served. Without it, concurrent producers
// split into two alternating halves: the first ones woken by a round
// re-enqueue at once and start the next flush without the others, which
// then wait a whole extra flush. The wait is bounded by a quarter of the
// last flush's duration (and 1 ms), so it never costs more latency than a
// fraction of the flush it saves; a lone producer never waits.
func (s *GroupCommitService) gatherLocked() {
	target := s.lastServed
	if target < 2 || len(s.mu.write) >= target || s.mu.woken || s.mu.closed {
		return
	}
	window := min(s.lastFlushTook/4, time.Millisecond)
	if window <= 0 {
		return
	}
	s.mu.gatherExpired = false
	t := time.AfterFunc(window, func() {
		s.mu.Lock()
		s.mu.gatherExpired = true
		s.mu.Unlock()
		s.cond.Broadcast()
	})
	for len(s.mu.write) < target && !s.mu.gatherExpired && !s.mu.woken && !s.mu.closed {
		s.cond.Wait()
	}
	t.Stop()
}

// takeLocked moves the queued requests to the flusher's read list (the
// RocketMQ swap of requestsWrite and requestsRead) and reports whether the
// round must flush even if every request is already covered.
func (s *GroupCommitService) takeLocked() (forced bool) {
	if len(s.read) == 0 {
		s.read, s.mu.write = s.mu.write, s.read[:0]
	} else {
		s.read = append(s.read, s.mu.write...)
		clear(s.mu.write)
		s.mu.write = s.mu.write[:0]
	}
	forced = s.mu.woken || s.mu.closed
	s.mu.woken = false
	return forced
}

// round flushes once for every request in read and completes those it can:
// covered ones with nil, all pending ones with the error if the flush failed,
// which it also returns.
// Pending requests that the flush did not cover stay for a later round; they
// do not trigger one, so a store that cannot cover them (pool data not yet
// committed) costs no CPU until new requests, Wake or the watcher come.
func (s *GroupCommitService) round(forced bool) error {
	flushed := s.store.FlushedPosition()
	var err error
	var took time.Duration
	before := flushed
	if forced || s.uncovered(flushed) {
		start := time.Now()
		flushed, err = s.store.Flush(0)
		d := time.Since(start)
		took = d
		s.lastFlushTook = d
		if d > slowThreshold {
			s.lg.Warn("slow flush", zap.Duration("took", d), zap.Int("waiters", len(s.read)))
		}
	}
	// Hook before completions: a producer's acknowledgement must not
	// overtake the high watermark that makes its data visible.
	if flushed > s.lastFlushed {
		s.lastFlushed = flushed
		if s.onFlushed != nil {
			s.onFlushed(flushed)
		}
		s.reported.Store(flushed)
	}
	var werr error
	if err != nil {
		// One wrap per round, not per waiter; errors.Is still finds the
		// store's error.
		werr = fmt.Errorf("flush: group commit: %w", err)
		if !s.errLogged {
			s.errLogged = true
			s.lg.Error("flush failed; sync producers get errors until restart", zap.Error(err))
		}
	} else {
		s.errLogged = false
	}

	s.mu.Lock()
	keep := s.read[:0]
	for _, r := range s.read {
		switch {
		case !r.linked: // timed out or abandoned meanwhile
			s.dropped = append(s.dropped, r)
		case r.pos <= flushed:
			s.completions = s.completeLocked(r, nil, s.completions)
			s.dropped = append(s.dropped, r)
		case werr != nil:
			s.completions = s.completeLocked(r, werr, s.completions)
			s.dropped = append(s.dropped, r)
		default:
			keep = append(keep, r)
		}
	}
	s.lastServed = len(s.read) - len(keep)
	clear(s.read[len(keep):])
	s.read = keep
	s.mu.Unlock()

	if s.onRound != nil && flushed > before {
		s.onRound(s.lastServed, took)
	}

	s.deliverAndRelease()
	return werr
}

// uncovered reports whether some request in read waits for a position beyond
// flushed, i.e. whether the round needs to call Flush at all.
func (s *GroupCommitService) uncovered(flushed int64) bool {
	for _, r := range s.read {
		if r.pos > flushed {
			return true
		}
	}
	return false
}

// finish completes what the final round left pending with ErrClosed.
func (s *GroupCommitService) finish() {
	s.mu.Lock()
	for _, r := range s.read {
		if r.linked {
			s.completions = s.completeLocked(r, ErrClosed, s.completions)
		}
		s.dropped = append(s.dropped, r)
	}
	clear(s.read)
	s.read = s.read[:0]
	s.mu.Unlock()
	s.deliverAndRelease()
}

// deliverAndRelease delivers the round's completions, then lets go of the
// requests that left the read list.
func (s *GroupCommitService) deliverAndRelease() {
	deliver(s.completions)
	s.completions = s.completions[:0]
	for _, r := range s.dropped {
		s.release(r)
	}
	clear(s.dropped)
	s.dropped = s.dropped[:0]
}

// watchLoop is the watcher goroutine: it answers ErrFlushTimeout at each
// pending request's deadline. It never calls the store, so a Flush stuck in
// the kernel cannot delay a timeout. One timer serves all requests because
// deadlines arrive in order.
func (s *GroupCommitService) watchLoop() {
	timer := time.NewTimer(s.timeout)
	timer.Stop()
	defer timer.Stop()
	var expired []completion
	for {
		now := time.Now()
		wait := time.Duration(-1)
		s.mu.Lock()
		for r := s.mu.head; r != nil && !r.deadline.After(now); r = s.mu.head {
			expired = s.completeLocked(r, ErrFlushTimeout, expired)
		}
		if s.mu.head != nil {
			wait = s.mu.head.deadline.Sub(now)
		}
		s.mu.watcherIdle = wait < 0
		s.mu.Unlock()

		deliver(expired)
		expired = expired[:0]
		if wait >= 0 {
			timer.Reset(wait)
		} else {
			timer.Stop()
		}
		select {
		case <-s.quit:
			return
		case <-timer.C:
		case <-s.kick:
		}
	}
}
