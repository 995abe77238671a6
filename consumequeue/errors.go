package consumequeue

import "errors"

// Errors of the consume queue. They are wrapped with the queue's directory
// and the offending offset.
var (
	// ErrOrder is returned by Append when a batch does not start after
	// the last entry's last offset: entries are strictly ordered by
	// offset, which binary search relies on.
	ErrOrder = errors.New("consumequeue: entry out of order")
	// ErrClosed is returned by changes to a closed queue.
	ErrClosed = errors.New("consumequeue: closed")
)

// stickyError boxes the first failure of a queue for its atomic pointer.
type stickyError struct{ err error }

// changeableLocked returns why the queue may not change: ErrClosed once
// it is closed, else the sticky failure, else nil. The caller holds q.mu
// and wraps the error with what it was doing.
func (q *Queue) changeableLocked() error {
	if q.mu.closed {
		return ErrClosed
	}
	return q.failure()
}

// failure returns the sticky error, if any.
func (q *Queue) failure() error {
	if p := q.failed.Load(); p != nil {
		return p.err
	}
	return nil
}

// fail records err as the sticky error (the first one wins) and returns it.
func (q *Queue) fail(err error) error {
	q.failed.CompareAndSwap(nil, &stickyError{err: err})
	return err
}
