package flush

import (
	"sync"
	"time"
)

// pageSize is the store's page size for leastPages thresholds (RocketMQ
// OS_PAGE_SIZE).
const pageSize = 4096

// fakeStore is an in-memory Store. Flush and Commit follow the RocketMQ
// threshold rule (isAbleToFlush/isAbleToCommit), record their leastPages
// arguments, and can be made to block or fail. With pool set, appended bytes
// must be committed before a flush can cover them, like the transient store
// pool; without it, committed follows written.
type fakeStore struct {
	// pool selects transient-pool behaviour; set before use.
	pool bool
	// delay is spent blocked inside every Flush, outside mu (benchmarks).
	delay time.Duration
	// noRecord skips recording calls, so benchmarks do not count the
	// fake's own allocations.
	noRecord bool

	mu struct {
		sync.Mutex
		written, committed, flushed int64
		flushCalls, commitCalls     []int
		flushCount                  int
		flushErr, commitErr         error
		// failFlushes limits flushErr to that many failing calls when
		// positive (a transient error); otherwise flushErr is sticky.
		failFlushes int
		// block, when non-nil, makes Flush wait until it is closed;
		// entered gets a value each time a Flush starts waiting.
		block   chan struct{}
		entered chan struct{}
	}
}

// append simulates appending n bytes and returns the position just past them.
func (f *fakeStore) append(n int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.written += n
	if !f.pool {
		f.mu.committed = f.mu.written
	}
	return f.mu.written
}

// Flush implements Store. Like the real store, it samples the position to
// flush before the (possibly blocked) sync, so bytes appended while it waits
// are left for the next flush.
func (f *fakeStore) Flush(leastPages int) (int64, error) {
	f.mu.Lock()
	f.mu.flushCount++
	if !f.noRecord {
		f.mu.flushCalls = append(f.mu.flushCalls, leastPages)
	}
	target := f.mu.flushed
	if able(f.mu.committed, f.mu.flushed, leastPages) {
		target = f.mu.committed
	}
	block, entered := f.mu.block, f.mu.entered
	f.mu.Unlock()

	if block != nil {
		if entered != nil {
			entered <- struct{}{}
		}
		<-block
	}
	if f.delay > 0 {
		blockFor(f.delay)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.flushErr != nil {
		err := f.mu.flushErr
		if f.mu.failFlushes > 0 {
			f.mu.failFlushes--
			if f.mu.failFlushes == 0 {
				f.mu.flushErr = nil
			}
		}
		return f.mu.flushed, err
	}
	f.mu.flushed = max(f.mu.flushed, target)
	return f.mu.flushed, nil
}

// Commit implements Store.
func (f *fakeStore) Commit(leastPages int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.commitCalls = append(f.mu.commitCalls, leastPages)
	if f.mu.commitErr != nil {
		return f.mu.committed, f.mu.commitErr
	}
	if !f.pool {
		return f.mu.written, nil
	}
	if able(f.mu.written, f.mu.committed, leastPages) {
		f.mu.committed = f.mu.written
	}
	return f.mu.committed, nil
}

// FlushedPosition implements Store.
func (f *fakeStore) FlushedPosition() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.flushed
}

// able is RocketMQ's threshold: with leastPages 0 any new byte qualifies,
// otherwise the page difference must reach leastPages.
func able(to, from int64, leastPages int) bool {
	if leastPages == 0 {
		return to > from
	}
	return to/pageSize-from/pageSize >= int64(leastPages)
}

// blockFlushes makes every later Flush wait until the returned release is
// called; entered receives a value as each Flush starts waiting.
func (f *fakeStore) blockFlushes() (entered <-chan struct{}, release func()) {
	block := make(chan struct{})
	ent := make(chan struct{}, 1024)
	f.mu.Lock()
	f.mu.block, f.mu.entered = block, ent
	f.mu.Unlock()
	var once sync.Once
	return ent, func() {
		once.Do(func() {
			f.mu.Lock()
			f.mu.block, f.mu.entered = nil, nil
			f.mu.Unlock()
			close(block)
		})
	}
}

// setFlushErr makes Flush fail with err: for the next n calls if n > 0,
// else for good (sticky, like the real store).
func (f *fakeStore) setFlushErr(err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.flushErr, f.mu.failFlushes = err, n
}

// setCommitErr makes Commit fail with err.
func (f *fakeStore) setCommitErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.commitErr = err
}

// flushes returns the number of Flush calls so far.
func (f *fakeStore) flushes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.flushCount
}

// flushArgs returns a copy of the leastPages arguments of all Flush calls.
func (f *fakeStore) flushArgs() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.mu.flushCalls...)
}

// commitArgs returns a copy of the leastPages arguments of all Commit calls.
func (f *fakeStore) commitArgs() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.mu.commitCalls...)
}

// committedPosition returns the committed position.
func (f *fakeStore) committedPosition() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.committed
}
